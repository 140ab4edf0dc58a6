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
