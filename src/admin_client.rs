//! The admin API's client (`/granary/admin/v1/`): JSON requests signed
//! with SigV4 under the root key, for every `granary admin` command.

use std::path::Path;

use anyhow::{bail, Context};
use request_signer::{Payload, Signer};
use serde_json::Value;

/// A signed client of the admin API.
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
    signer: Signer,
}

impl Client {
    /// A client of the admin API at `endpoint` (trusting `ca_bundle`
    /// besides the system roots), signing with `key` for `region`.
    pub(crate) fn new(
        endpoint: &str,
        ca_bundle: Option<&Path>,
        region: &str,
        key: (String, String),
    ) -> anyhow::Result<Client> {
        let mut builder = reqwest::Client::builder();
        if let Some(ca) = ca_bundle {
            let pem = std::fs::read(ca).with_context(|| format!("reading {}", ca.display()))?;
            for cert in reqwest::Certificate::from_pem_bundle(&pem)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        Ok(Client {
            http: builder.build()?,
            base: format!("{}/granary/admin/v1/", endpoint.trim_end_matches('/')),
            signer: Signer::s3(&key.0, &key.1, region),
        })
    }

    /// Sends a signed request; returns the JSON answer or the server's error.
    pub(crate) async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let mut req = http::Request::builder()
            .method(method)
            .uri(&url)
            .header("content-type", "application/json")
            .body(Vec::new())?;
        self.signer.sign(&mut req, Payload::Bytes(&body))?;
        *req.body_mut() = body;
        let resp = self
            .http
            .execute(reqwest::Request::try_from(req)?)
            .await
            .with_context(|| format!("cannot reach {url}"))?;
        let status = resp.status();
        let text = resp.text().await?;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if !status.is_success() {
            bail!(
                "{} {}: {}",
                status.as_u16(),
                v["code"].as_str().unwrap_or(""),
                v["message"].as_str().unwrap_or(&v.to_string())
            );
        }
        Ok(v)
    }
}
