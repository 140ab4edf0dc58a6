//! A tier outside the deployment: another S3-compatible endpoint (another
//! Granary, AWS S3, ...) holding tier objects as `<prefix><id>` in one of
//! its buckets, with the owner's bucket and key as user metadata. Requests
//! are signed with SigV4 (payload unsigned, so uploads stream); reads are
//! ranged GETs streamed back to the client.

use std::ops::Range;
use std::time::Duration;

use futures::StreamExt;
use placement::{BodyError, BodyStream, Error, ObjectStream, TierBackend};
use request_signer::{Payload, Signer};
use serde::Deserialize;
use uuid::Uuid;

use crate::config::RemoteTierConfig;

/// Characters percent-encoded in object names (all but unreserved and '/').
const PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');
/// Characters percent-encoded in query values (all but unreserved).
const QUERY: &percent_encoding::AsciiSet = &PATH.add(b'/');

/// How long a request to the endpoint may take to start answering.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A remote tier.
pub struct RemoteTier {
    http: reqwest::Client,
    signer: Signer,
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
        let signer = Signer::s3(&cfg.access_key, &cfg.secret_key, &cfg.region);
        Ok(RemoteTier { http, signer, cfg })
    }

    /// The URL of object `id` (of the bucket without one) with `query`.
    fn url(&self, id: Option<Uuid>, query: &str) -> String {
        let object = id.map_or(String::new(), |id| {
            let name = format!("{}{id}", self.cfg.prefix);
            percent_encoding::utf8_percent_encode(&name, PATH).to_string()
        });
        format!(
            "{}/{}/{object}{query}",
            self.cfg.endpoint.trim_end_matches('/'),
            self.cfg.bucket,
        )
    }

    /// Sends a SigV4-signed request for object `id` (the bucket if `None`;
    /// with `query`, e.g. `?uploads`) with `headers` and `body` (unsigned,
    /// so uploads stream).
    async fn send(
        &self,
        method: &str,
        id: impl Into<Option<Uuid>>,
        query: &str,
        headers: &[(&str, String)],
        body: reqwest::Body,
    ) -> Result<reqwest::Response, Error> {
        let url = self.url(id.into(), query);
        let mut req = http::Request::builder().method(method).uri(&url);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let mut req = req.body(body).map_err(|e| unavailable("request", e))?;
        self.signer
            .sign(&mut req, Payload::Unsigned)
            .map_err(|e| unavailable("signing", e))?;
        let req = reqwest::Request::try_from(req).map_err(|e| unavailable("request", e))?;
        self.http
            .execute(req)
            .await
            .map_err(|e| unavailable(&format!("{method} {url}"), e))
    }
}

impl RemoteTier {
    /// Uploads `body` (`size` bytes) as object `id` in parts, each streamed
    /// from the body as it arrives; aborts the upload if anything fails.
    async fn put_parts(
        &self,
        id: Uuid,
        meta: &[(&str, String)],
        body: BodyStream,
        size: u64,
    ) -> Result<(), Error> {
        let empty = || reqwest::Body::from(Vec::new());
        let resp = self.send("POST", id, "?uploads", meta, empty()).await?;
        if !resp.status().is_success() {
            return Err(failed("upload", resp).await);
        }
        let text = resp.text().await.map_err(|e| unavailable("upload", e))?;
        let upload = parse::<Initiated>(&text)
            .map_err(|e| unavailable("upload", e))?
            .upload_id;
        let result = self.send_parts(id, &upload, body, size).await;
        let done = match result {
            Ok(etags) => {
                let mut doc = String::from("<CompleteMultipartUpload>");
                for (n, etag) in etags.iter().enumerate() {
                    doc.push_str(&format!(
                        "<Part><PartNumber>{}</PartNumber><ETag>{etag}</ETag></Part>",
                        n + 1
                    ));
                }
                doc.push_str("</CompleteMultipartUpload>");
                let query = format!("?uploadId={upload}");
                let headers = [("content-length", doc.len().to_string())];
                let resp = self.send("POST", id, &query, &headers, doc.into()).await?;
                let ok = resp.status().is_success();
                let text = resp.text().await.unwrap_or_default();
                match ok && !text.contains("<Error>") {
                    true => Ok(()),
                    false => Err(unavailable("complete upload", error_code(&text))),
                }
            }
            Err(e) => Err(e),
        };
        if done.is_err() {
            let query = format!("?uploadId={upload}");
            let _ = self.send("DELETE", id, &query, &[], empty()).await;
        }
        done
    }

    /// Sends the parts of an upload; returns their entity tags in order.
    async fn send_parts(
        &self,
        id: Uuid,
        upload: &str,
        mut body: BodyStream,
        size: u64,
    ) -> Result<Vec<String>, Error> {
        let part = self.cfg.part_size_mib << 20;
        let mut carry: Option<bytes::Bytes> = None;
        let mut etags = Vec::new();
        let mut sent = 0u64;
        while sent < size {
            let len = part.min(size - sent);
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, BodyError>>(4);
            let stream = futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|item| (item, rx))
            });
            let query = format!("?partNumber={}&uploadId={upload}", etags.len() + 1);
            let headers = [("content-length", len.to_string())];
            let put = self.send(
                "PUT",
                id,
                &query,
                &headers,
                reqwest::Body::wrap_stream(stream),
            );
            let feed = async {
                let mut left = len;
                while left > 0 {
                    let mut chunk = match carry.take() {
                        Some(c) => c,
                        None => match body.next().await {
                            Some(Ok(c)) => c,
                            Some(Err(e)) => return Err(Error::Body(e)),
                            None => return Err(unavailable("upload", "the source ended early")),
                        },
                    };
                    if chunk.len() as u64 > left {
                        carry = Some(chunk.split_off(left as usize));
                    }
                    left -= chunk.len() as u64;
                    if tx.send(Ok(chunk)).await.is_err() {
                        break;
                    }
                }
                drop(tx);
                Ok(())
            };
            let (resp, fed) = tokio::join!(put, feed);
            fed?;
            let resp = resp?;
            if !resp.status().is_success() {
                return Err(failed("upload part", resp).await);
            }
            let etag = resp
                .headers()
                .get("etag")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| unavailable("upload part", "no ETag"))?
                .to_string();
            etags.push(etag);
            sent += len;
        }
        Ok(etags)
    }
}

/// The answer to CreateMultipartUpload.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Initiated {
    upload_id: String,
}

/// An S3 error answer.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ErrorAnswer {
    #[serde(default)]
    code: String,
}

/// One page of ListObjectsV2.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Listing {
    #[serde(default)]
    contents: Vec<Listed>,
    next_continuation_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Listed {
    key: String,
    last_modified: String,
}

fn parse<T: serde::de::DeserializeOwned>(xml: &str) -> Result<T, quick_xml::DeError> {
    quick_xml::de::from_str(xml)
}

/// The code of an S3 error answer ("" if it is none).
fn error_code(xml: &str) -> String {
    parse::<ErrorAnswer>(xml)
        .map(|e| e.code)
        .unwrap_or_default()
}

/// The endpoint's error answer as ours.
async fn failed(what: &str, resp: reqwest::Response) -> Error {
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    unavailable(what, format!("{} {}", status.as_u16(), error_code(&text)))
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
        let meta = [
            ("x-amz-meta-granary-bucket", owner(bucket)),
            ("x-amz-meta-granary-key", owner(key)),
        ];
        if size > self.cfg.part_size_mib << 20 {
            return self.put_parts(id, &meta, body, size).await;
        }
        let mut headers = vec![("content-length", size.to_string())];
        headers.extend(meta);
        let body = reqwest::Body::wrap_stream(body);
        let resp = self.send("PUT", id, "", &headers, body).await?;
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
            .send("GET", id, "", &headers, reqwest::Body::from(Vec::new()))
            .await?;
        if !resp.status().is_success() {
            return Err(failed("read", resp).await);
        }
        let stream = resp
            .bytes_stream()
            .map(|chunk| chunk.map_err(|e| unavailable("read", e)));
        Ok(ObjectStream::from_stream(stream))
    }

    async fn stale(&self, before_ns: u64) -> Result<Vec<(Uuid, String, String)>, Error> {
        let enc = |v: &str| percent_encoding::utf8_percent_encode(v, QUERY).to_string();
        let mut token: Option<String> = None;
        let mut out = Vec::new();
        loop {
            let mut query = format!("?list-type=2&prefix={}", enc(&self.cfg.prefix));
            if let Some(t) = &token {
                query.push_str(&format!("&continuation-token={}", enc(t)));
            }
            let resp = self
                .send("GET", None, &query, &[], reqwest::Body::from(Vec::new()))
                .await?;
            if !resp.status().is_success() {
                return Err(failed("list", resp).await);
            }
            let text = resp.text().await.map_err(|e| unavailable("list", e))?;
            let page = parse::<Listing>(&text).map_err(|e| unavailable("list", e))?;
            for entry in page.contents {
                let Some(Ok(id)) = entry
                    .key
                    .strip_prefix(&self.cfg.prefix)
                    .map(str::parse::<Uuid>)
                else {
                    continue;
                };
                let modified = time::OffsetDateTime::parse(
                    &entry.last_modified,
                    &time::format_description::well_known::Rfc3339,
                );
                let Ok(modified) = modified else { continue };
                if modified.unix_timestamp_nanos() as u64 >= before_ns {
                    continue;
                }
                let resp = self
                    .send("HEAD", id, "", &[], reqwest::Body::from(Vec::new()))
                    .await?;
                let owner = |h: &str| {
                    let v = resp.headers().get(h)?.to_str().ok()?;
                    Some(
                        percent_encoding::percent_decode_str(v)
                            .decode_utf8()
                            .ok()?
                            .into_owned(),
                    )
                };
                if let (Some(b), Some(k)) = (
                    owner("x-amz-meta-granary-bucket"),
                    owner("x-amz-meta-granary-key"),
                ) {
                    out.push((id, b, k));
                }
            }
            token = page.next_continuation_token;
            if token.is_none() {
                return Ok(out);
            }
        }
    }

    async fn delete(&self, id: Uuid) -> Result<(), Error> {
        let resp = self
            .send("DELETE", id, "", &[], reqwest::Body::from(Vec::new()))
            .await?;
        if !resp.status().is_success() && resp.status() != reqwest::StatusCode::NOT_FOUND {
            return Err(failed("delete", resp).await);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An endpoint's answer is read without trusting it: a document type
    /// declaration between two runs of text made quick-xml's serde reader
    /// (before 0.40) hit `unreachable!`, a panic in the tier sweep or a
    /// tiering write. Such answers are now read (or refused) without one.
    #[test]
    fn an_answer_that_is_not_s3_xml_does_not_panic_its_reader() {
        assert_eq!(
            error_code("<Error><Code>SlowDown</Code></Error>"),
            "SlowDown"
        );
        for answer in ["<Error><Code>", "not xml", ""] {
            assert_eq!(error_code(answer), "", "{answer}");
        }
        assert_eq!(
            error_code("<Error><Code>x<!DOCTYPE d>y</Code></Error>"),
            "xy"
        );
        let _ = parse::<Listing>("<R><Contents><Key>k<!DOCTYPE d>y</Key></Contents></R>");
    }
}
