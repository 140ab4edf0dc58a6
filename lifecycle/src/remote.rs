//! A tier outside the deployment: another S3-compatible endpoint (another
//! Granary, AWS S3, ...) holding tier objects as `<prefix><id>` in one of
//! its buckets, with the owner's bucket and key as user metadata. Requests
//! are signed with SigV4 (payload unsigned, so uploads stream); reads are
//! ranged GETs streamed back to the client.

use std::ops::Range;
use std::time::{Duration, SystemTime};

use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings,
};
use futures::StreamExt;
use placement::{BodyStream, Error, ObjectStream, TierBackend};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How long a request to the endpoint may take to start answering.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a remote tier keeps its objects, and the key to reach them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteTierConfig {
    /// Endpoint URL, e.g. `https://s3.example.com:9000`.
    pub endpoint: String,
    /// Bucket on the endpoint (it must exist).
    pub bucket: String,
    /// Key prefix inside the bucket.
    #[serde(default)]
    pub prefix: String,
    /// Region to sign for.
    #[serde(default = "default_region")]
    pub region: String,
    /// Access key id.
    pub access_key: String,
    /// Secret key (kept encrypted at rest by the gateway).
    pub secret_key: String,
}

fn default_region() -> String {
    "us-east-1".into()
}

impl RemoteTierConfig {
    /// Checks the configuration; the error says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let url = reqwest::Url::parse(&self.endpoint)
            .map_err(|e| format!("endpoint {:?} is not a URL: {e}", self.endpoint))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "endpoint {:?} is not an http(s) URL",
                self.endpoint
            ));
        }
        if self.bucket.is_empty() || self.bucket.contains('/') {
            return Err("give the endpoint's bucket name".into());
        }
        if self.access_key.is_empty() || self.secret_key.is_empty() {
            return Err("give the endpoint's access key and secret key".into());
        }
        Ok(())
    }
}

/// A remote tier.
pub struct RemoteTier {
    http: reqwest::Client,
    cfg: RemoteTierConfig,
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::TierUnavailable(format!("remote tier: {what}: {e}"))
}

impl RemoteTier {
    /// A client of the endpoint `cfg` names.
    pub fn new(cfg: RemoteTierConfig) -> Result<RemoteTier, String> {
        cfg.validate()?;
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(RemoteTier { http, cfg })
    }

    fn url(&self, id: Uuid) -> String {
        format!(
            "{}/{}/{}{}",
            self.cfg.endpoint.trim_end_matches('/'),
            self.cfg.bucket,
            self.cfg.prefix,
            id
        )
    }

    /// Sends a SigV4-signed request with `headers` and `body`.
    async fn send(
        &self,
        method: &str,
        id: Uuid,
        headers: &[(&str, String)],
        body: reqwest::Body,
    ) -> Result<reqwest::Response, Error> {
        let url = self.url(id);
        let parsed = reqwest::Url::parse(&url).map_err(|e| unavailable("url", e))?;
        let host = match (parsed.host_str(), parsed.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => return Err(unavailable("url", "no host")),
        };
        let identity = aws_credential_types::Credentials::new(
            &self.cfg.access_key,
            &self.cfg.secret_key,
            None,
            None,
            "granary-tier",
        )
        .into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.cfg.region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| unavailable("signing", e))?
            .into();
        let mut all: Vec<(&str, &str)> = vec![("host", host.as_str())];
        all.extend(headers.iter().map(|(k, v)| (*k, v.as_str())));
        let signable = SignableRequest::new(
            method,
            &url,
            all.iter().copied(),
            SignableBody::UnsignedPayload,
        )
        .map_err(|e| unavailable("signing", e))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| unavailable("signing", e))?
            .into_parts();
        let mut req = http::Request::builder().method(method).uri(&url);
        for (k, v) in &all {
            req = req.header(*k, *v);
        }
        let mut req = req.body(body).map_err(|e| unavailable("request", e))?;
        instructions.apply_to_request_http1x(&mut req);
        let req = reqwest::Request::try_from(req).map_err(|e| unavailable("request", e))?;
        self.http
            .execute(req)
            .await
            .map_err(|e| unavailable(&format!("{method} {url}"), e))
    }
}

/// The endpoint's error answer as ours.
async fn failed(what: &str, resp: reqwest::Response) -> Error {
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let code = text
        .split("<Code>")
        .nth(1)
        .and_then(|t| t.split("</Code>").next())
        .unwrap_or("");
    unavailable(what, format!("{} {code}", status.as_u16()))
}

#[async_trait::async_trait]
impl TierBackend for RemoteTier {
    async fn put(
        &self,
        id: Uuid,
        bucket: &str,
        key: &str,
        body: BodyStream,
        size: u64,
    ) -> Result<(), Error> {
        let owner = |v: &str| {
            percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        let headers = [
            ("content-length", size.to_string()),
            ("x-amz-meta-granary-bucket", owner(bucket)),
            ("x-amz-meta-granary-key", owner(key)),
        ];
        let body = reqwest::Body::wrap_stream(body);
        let resp = self.send("PUT", id, &headers, body).await?;
        if !resp.status().is_success() {
            return Err(failed("upload", resp).await);
        }
        Ok(())
    }

    async fn read(&self, id: Uuid, range: Range<u64>) -> Result<ObjectStream, Error> {
        if range.is_empty() {
            return Ok(ObjectStream::from_stream(futures::stream::empty()));
        }
        let headers = [("range", format!("bytes={}-{}", range.start, range.end - 1))];
        let resp = self
            .send("GET", id, &headers, reqwest::Body::from(Vec::new()))
            .await?;
        if !resp.status().is_success() {
            return Err(failed("read", resp).await);
        }
        let stream = resp
            .bytes_stream()
            .map(|chunk| chunk.map_err(|e| unavailable("read", e)));
        Ok(ObjectStream::from_stream(stream))
    }

    async fn delete(&self, id: Uuid) -> Result<(), Error> {
        let resp = self
            .send("DELETE", id, &[], reqwest::Body::from(Vec::new()))
            .await?;
        if !resp.status().is_success() && resp.status() != reqwest::StatusCode::NOT_FOUND {
            return Err(failed("delete", resp).await);
        }
        Ok(())
    }
}
