//! The admin API's client (`/granary/admin/v1/`): JSON requests signed
//! with SigV4 under the root key, for every `granary admin` command.

use std::path::Path;
use std::time::SystemTime;

use anyhow::{bail, Context};
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings,
};
use serde_json::Value;

/// A signed client of the admin API.
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
    region: String,
    key: (String, String),
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
            region: region.to_string(),
            key,
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
        let host = reqwest::Url::parse(&url)?
            .host_str()
            .context("endpoint has no host")?
            .to_string();
        let host = match reqwest::Url::parse(&url)?.port() {
            Some(p) => format!("{host}:{p}"),
            None => host,
        };
        let identity = aws_credential_types::Credentials::new(
            &self.key.0,
            &self.key.1,
            None,
            None,
            "granary-admin",
        )
        .into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()?
            .into();
        let headers = [
            ("host", host.as_str()),
            ("content-type", "application/json"),
        ];
        let signable = SignableRequest::new(
            method,
            &url,
            headers.iter().copied(),
            SignableBody::Bytes(&body),
        )?;
        let (instructions, _) = sign(signable, &params)?.into_parts();
        let mut req = http::Request::builder().method(method).uri(&url);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let mut req = req.body(body)?;
        instructions.apply_to_request_http1x(&mut req);
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
