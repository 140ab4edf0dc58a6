//! One S3 request after authentication: its target (bucket, key), decoded
//! query parameters and headers, with the accessors every operation uses.

use std::net::SocketAddr;

use http::request::Parts;

use crate::iam::Principal;
use s3_wire::auth::{Authenticated, Payload};
use s3_wire::error::{S3Error, S3Result};

/// A parsed, authenticated S3 request (the body travels separately).
pub struct S3Request {
    /// Method, URI, headers.
    pub parts: Parts,
    /// Target bucket, if any.
    pub bucket: Option<String>,
    /// Target key, if any.
    pub key: Option<String>,
    /// Query parameters, decoded, in order.
    pub query: Vec<(String, String)>,
    /// How the body is verified.
    pub auth: Authenticated,
    /// Who sent it.
    pub principal: Principal,
    /// The client's address.
    pub client: Option<SocketAddr>,
    /// Whether the connection is TLS.
    pub secure: bool,
    /// The TLS protocol version, if TLS.
    pub tls_version: Option<&'static str>,
    /// How far the request got (for counting clients that go away).
    pub progress: std::sync::Arc<crate::progress::Progress>,
}

/// The bucket named by the Host header (`<bucket>.<domain>`), if any.
pub fn virtual_host_bucket(parts: &Parts, domain: Option<&str>) -> Option<String> {
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    domain.and_then(|d| {
        host.strip_suffix(d)
            .and_then(|b| b.strip_suffix('.'))
            .filter(|b| !b.is_empty())
            .map(str::to_string)
    })
}

/// Finds the bucket and key a request addresses: virtual-hosted style when
/// the Host is `<bucket>.<domain>`, path style otherwise.
pub fn parse_target(
    parts: &Parts,
    domain: Option<&str>,
) -> S3Result<(Option<String>, Option<String>)> {
    let raw_path = parts.uri.path();
    let decoded = percent_encoding::percent_decode_str(raw_path)
        .decode_utf8()
        .map_err(|_| S3Error::InvalidUri)?;
    let path = decoded.strip_prefix('/').unwrap_or(&decoded);
    let (bucket, key) = match virtual_host_bucket(parts, domain) {
        Some(b) => (Some(b), path),
        None => {
            let (b, k) = path.split_once('/').unwrap_or((path, ""));
            ((!b.is_empty()).then(|| b.to_string()), k)
        }
    };
    let key = (!key.is_empty() && bucket.is_some()).then(|| key.to_string());
    Ok((bucket, key))
}

impl S3Request {
    /// A query parameter's value.
    pub fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether a query parameter is present (with or without value).
    pub fn has(&self, name: &str) -> bool {
        self.query.iter().any(|(k, _)| k == name)
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.parts.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The bucket (callers route only bucket requests here).
    pub fn bucket(&self) -> &str {
        self.bucket.as_deref().unwrap_or("")
    }

    /// The key (callers route only object requests here).
    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or("")
    }

    /// The number of payload bytes the body must carry: the decoded length
    /// for `aws-chunked` bodies, Content-Length otherwise.
    pub fn payload_length(&self) -> S3Result<u64> {
        let parse = |name: &str| -> S3Result<Option<u64>> {
            match self.header(name) {
                None => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| {
                    S3Error::InvalidArgument(
                        format!("{name} is not a number"),
                        Some((name.to_string(), v.to_string())),
                    )
                }),
            }
        };
        let chunked = matches!(
            self.auth.payload,
            Payload::SignedChunks { .. } | Payload::UnsignedChunks
        );
        let decoded = parse("x-amz-decoded-content-length")?;
        if chunked {
            return decoded.ok_or(S3Error::MissingContentLength);
        }
        match parse("content-length")? {
            Some(n) => Ok(n),
            None if self
                .parts
                .headers
                .contains_key(http::header::TRANSFER_ENCODING) =>
            {
                decoded.ok_or(S3Error::MissingContentLength)
            }
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, host: &str) -> Parts {
        http::Request::builder()
            .uri(uri)
            .header("host", host)
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn targets() {
        let t = |u, h, d| parse_target(&parts(u, h), d).unwrap();
        assert_eq!(t("/", "localhost:9000", None), (None, None));
        assert_eq!(t("/b", "localhost", None), (Some("b".into()), None));
        assert_eq!(t("/b/", "localhost", None), (Some("b".into()), None));
        assert_eq!(
            t("/b/a%2Fc%20d", "localhost", None),
            (Some("b".into()), Some("a/c d".into()))
        );
        assert_eq!(
            t("/b/../x", "localhost", None),
            (Some("b".into()), Some("../x".into()))
        );
        assert_eq!(
            t("/k/ey", "bkt.s3.local:9000", Some("s3.local")),
            (Some("bkt".into()), Some("k/ey".into()))
        );
        assert_eq!(
            t("/", "bkt.s3.local", Some("s3.local")),
            (Some("bkt".into()), None)
        );
        assert_eq!(
            t("/b/k", "s3.local", Some("s3.local")),
            (Some("b".into()), Some("k".into()))
        );
        assert!(parse_target(&parts("/b/%FF", "h"), None).is_err());
    }
}
