//! What authentication decides about a request — who sent it, how it was
//! signed, how its body is verified — and the limits every signature
//! scheme shares. The schemes (`sigv4`, `sigv2`, `chunked`) produce these;
//! this file knows none of them but the chunk signer it carries.

use time::Duration;

use super::chunked::ChunkSigner;

/// Largest accepted difference between a request's date and our clock.
pub const MAX_CLOCK_SKEW: Duration = Duration::minutes(15);
/// Longest lifetime of a presigned URL (seven days).
pub const MAX_PRESIGN_EXPIRY_SECS: i64 = 604_800;

/// How the request body is protected.
#[derive(Clone, Debug)]
pub enum Payload {
    /// Not signed (`UNSIGNED-PAYLOAD`, or a presigned URL).
    Unsigned,
    /// The body must hash to this SHA-256 (hex).
    Sha256(String),
    /// `aws-chunked` with a signature per chunk (and maybe signed trailers).
    SignedChunks {
        /// Verifies the chunk chain.
        signer: ChunkSigner,
        /// Trailing headers follow the last chunk.
        trailer: bool,
    },
    /// `aws-chunked` without signatures, with trailing headers.
    UnsignedChunks,
}

/// How a request was signed, as policies see it (`s3:signatureversion`,
/// `s3:authType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signing {
    /// Not signed.
    Anonymous,
    /// SigV4 in the Authorization header.
    V4Header,
    /// A SigV4 presigned URL.
    V4Query,
    /// A SigV2 presigned URL.
    V2Query,
}

impl Signing {
    /// The `s3:signatureversion` value.
    pub fn version(self) -> Option<&'static str> {
        match self {
            Signing::Anonymous => None,
            Signing::V4Header | Signing::V4Query => Some("AWS4-HMAC-SHA256"),
            Signing::V2Query => Some("AWS"),
        }
    }

    /// The `s3:authType` value.
    pub fn auth_type(self) -> Option<&'static str> {
        match self {
            Signing::Anonymous => None,
            Signing::V4Header => Some("REST-HEADER"),
            Signing::V4Query | Signing::V2Query => Some("REST-QUERY-STRING"),
        }
    }
}

/// Who sent the request and how its body is verified.
#[derive(Clone, Debug)]
pub struct Authenticated {
    /// Access key id of the caller.
    pub access_key: String,
    /// Body verification mode.
    pub payload: Payload,
    /// How the request was signed.
    pub signing: Signing,
}
