//! request-signer: the outbound SigV4 signer, a leaf room of Granary's
//! architecture. Every request Granary sends to an S3 endpoint itself — a
//! remote tier's uploads and reads, `granary admin` calls to the admin
//! API, the load generator's light clients — is signed here, on the
//! `aws-sigv4` crate, so there is one canonicalisation and one set of
//! signing settings (the payload hash always sent as
//! `x-amz-content-sha256`, which S3 requires).
//!
//! It owns only signing: it must not know HTTP clients, S3 operations,
//! Granary's stores or its gateway. A caller builds an `http::Request`,
//! signs it, and sends it with whatever client it uses.

use std::time::SystemTime;

use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4::SigningParams;

/// What the signature covers of the request body.
#[derive(Clone, Copy, Debug)]
pub enum Payload<'a> {
    /// These bytes (the whole body, hashed here).
    Bytes(&'a [u8]),
    /// A body whose SHA-256 (lower-case hex) the caller computed.
    Sha256(&'a str),
    /// A body that streams, unsigned (`UNSIGNED-PAYLOAD`).
    Unsigned,
}

/// Why a request could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The request's URI has no host.
    #[error("the request's URI has no host")]
    NoHost,
    /// A header value is not UTF-8, so it cannot be canonicalised.
    #[error("header {0} is not UTF-8 text")]
    Header(String),
    /// The signing library refused the request.
    #[error("signing: {0}")]
    Signing(String),
}

/// Signs requests for one service and region with one key.
#[derive(Clone, Debug)]
pub struct Signer {
    credentials: aws_credential_types::Credentials,
    region: String,
    service: &'static str,
}

impl Signer {
    /// A signer of S3 requests for `region` with this access key.
    pub fn s3(access_key: &str, secret_key: &str, region: &str) -> Signer {
        Signer {
            credentials: aws_credential_types::Credentials::new(
                access_key, secret_key, None, None, "granary",
            ),
            region: region.to_string(),
            service: "s3",
        }
    }

    /// Signs `req` now: adds its `host` header (from the URI) when it has
    /// none, then the signature headers (`authorization`, `x-amz-date`,
    /// `x-amz-content-sha256`). Every header the request holds is signed.
    pub fn sign<B>(
        &self,
        req: &mut http::Request<B>,
        payload: Payload<'_>,
    ) -> Result<(), SignError> {
        self.sign_at(req, payload, SystemTime::now())
    }

    /// [`Self::sign`] at time `at`.
    pub fn sign_at<B>(
        &self,
        req: &mut http::Request<B>,
        payload: Payload<'_>,
        at: SystemTime,
    ) -> Result<(), SignError> {
        if !req.headers().contains_key(http::header::HOST) {
            let host = host_of(req.uri())?;
            let value = http::HeaderValue::from_str(&host).map_err(|_| SignError::NoHost)?;
            req.headers_mut().insert(http::header::HOST, value);
        }
        let identity = self.credentials.clone().into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        // S3 signs the path once, as sent: no second encoding, no `.`/`..`
        // normalisation (the other services' defaults).
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        let params: aws_sigv4::http_request::SigningParams<'_> = SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(self.service)
            .time(at)
            .settings(settings)
            .build()
            .map_err(|e| SignError::Signing(e.to_string()))?
            .into();
        let mut headers = Vec::with_capacity(req.headers().len());
        for (name, value) in req.headers() {
            // As the gateway reads them when it checks a signature: UTF-8,
            // not only the visible ASCII `HeaderValue::to_str` accepts.
            let value = std::str::from_utf8(value.as_bytes())
                .map_err(|_| SignError::Header(name.to_string()))?;
            headers.push((name.as_str(), value));
        }
        let body = match payload {
            Payload::Bytes(b) => SignableBody::Bytes(b),
            Payload::Sha256(h) => SignableBody::Precomputed(h.to_string()),
            Payload::Unsigned => SignableBody::UnsignedPayload,
        };
        let uri = req.uri().to_string();
        let signable = SignableRequest::new(req.method().as_str(), &uri, headers.into_iter(), body)
            .map_err(|e| SignError::Signing(e.to_string()))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| SignError::Signing(e.to_string()))?
            .into_parts();
        instructions.apply_to_request_http1x(req);
        Ok(())
    }
}

/// `host[:port]` of a URI, as the `host` header carries it.
fn host_of(uri: &http::Uri) -> Result<String, SignError> {
    let host = uri.host().ok_or(SignError::NoHost)?;
    Ok(match uri.port_u16() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    fn request(uri: &str) -> http::Request<()> {
        http::Request::builder()
            .method("PUT")
            .uri(uri)
            .header("content-type", "application/json")
            .body(())
            .unwrap()
    }

    fn at() -> SystemTime {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)
    }

    #[test]
    fn signs_host_date_hash_and_every_header() {
        let signer = Signer::s3("AKID", "secret", "us-east-1");
        let mut req = request("http://127.0.0.1:9000/bucket/key?uploads");
        signer
            .sign_at(&mut req, Payload::Bytes(b"body"), at())
            .unwrap();
        let h = req.headers();
        assert_eq!(h["host"], "127.0.0.1:9000");
        assert_eq!(h["x-amz-date"], "20231114T221320Z");
        assert_eq!(
            h["x-amz-content-sha256"],
            hex::encode(sha2::Sha256::digest(b"body")).as_str()
        );
        let auth = h["authorization"].to_str().unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKID/20231114/us-east-1/s3/aws4_request"),
            "{auth}"
        );
        assert!(
            auth.contains("SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date"),
            "{auth}"
        );
    }

    /// Found by the sign_then_verify fuzz target: the signer used the
    /// default SigV4 settings, which encode the path a second time and
    /// normalise it, where S3 signs the path once, as sent — so a key
    /// needing percent-encoding (a space, a `%`) or holding a `.` segment
    /// was signed over another path than the one sent and refused.
    #[test]
    fn paths_are_signed_as_the_aws_sdks_sign_s3_paths() {
        let signer = Signer::s3("AKID", "secret", "us-east-1");
        for path in ["/b/a%20b", "/b/a%252Fb%2Fc", "/b/./x/../y", "/b/k"] {
            let uri = format!("http://127.0.0.1:9000{path}");
            let mut ours = request(&uri);
            signer.sign_at(&mut ours, Payload::Unsigned, at()).unwrap();
            let mut sdk = request(&uri);
            sdk.headers_mut()
                .insert("host", http::HeaderValue::from_static("127.0.0.1:9000"));
            let identity = signer.credentials.clone().into();
            let mut settings = SigningSettings::default();
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
            settings.percent_encoding_mode = PercentEncodingMode::Single;
            settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
            let params: aws_sigv4::http_request::SigningParams<'_> = SigningParams::builder()
                .identity(&identity)
                .region("us-east-1")
                .name("s3")
                .time(at())
                .settings(settings)
                .build()
                .unwrap()
                .into();
            let headers: Vec<(&str, &str)> = sdk
                .headers()
                .iter()
                .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
                .collect();
            let signable = SignableRequest::new(
                "PUT",
                &uri,
                headers.into_iter(),
                SignableBody::UnsignedPayload,
            )
            .unwrap();
            let (instructions, _) = sign(signable, &params).unwrap().into_parts();
            instructions.apply_to_request_http1x(&mut sdk);
            assert_eq!(
                ours.headers()["authorization"],
                sdk.headers()["authorization"],
                "{path}"
            );
        }
    }

    #[test]
    fn a_precomputed_hash_signs_like_the_bytes_it_hashes() {
        let signer = Signer::s3("AKID", "secret", "eu-west-1");
        let mut a = request("https://s3.example.com/b/k");
        let mut b = request("https://s3.example.com/b/k");
        signer
            .sign_at(&mut a, Payload::Bytes(b"data"), at())
            .unwrap();
        let hash = hex::encode(sha2::Sha256::digest(b"data"));
        signer
            .sign_at(&mut b, Payload::Sha256(&hash), at())
            .unwrap();
        assert_eq!(a.headers()["authorization"], b.headers()["authorization"]);
        assert_eq!(a.headers()["host"], "s3.example.com");
        let mut c = request("https://s3.example.com/b/k");
        signer.sign_at(&mut c, Payload::Unsigned, at()).unwrap();
        assert_eq!(c.headers()["x-amz-content-sha256"], "UNSIGNED-PAYLOAD");
        assert_ne!(a.headers()["authorization"], c.headers()["authorization"]);
    }

    #[test]
    fn utf8_header_values_are_signed_and_other_bytes_refused() {
        let signer = Signer::s3("AKID", "secret", "us-east-1");
        let mut req = request("http://127.0.0.1:9000/b/k");
        req.headers_mut().insert(
            "x-amz-meta-name",
            http::HeaderValue::from_bytes("día".as_bytes()).unwrap(),
        );
        signer.sign_at(&mut req, Payload::Unsigned, at()).unwrap();
        let auth = req.headers()["authorization"].to_str().unwrap();
        assert!(auth.contains("x-amz-meta-name"), "{auth}");
        let mut bad = request("http://127.0.0.1:9000/b/k");
        bad.headers_mut().insert(
            "x-amz-meta-name",
            http::HeaderValue::from_bytes(b"\xff").unwrap(),
        );
        assert!(matches!(
            signer.sign_at(&mut bad, Payload::Unsigned, at()),
            Err(SignError::Header(h)) if h == "x-amz-meta-name"
        ));
    }

    #[test]
    fn a_uri_without_a_host_is_refused() {
        let signer = Signer::s3("AKID", "secret", "us-east-1");
        let mut req = request("/bucket/key");
        assert!(matches!(
            signer.sign(&mut req, Payload::Unsigned),
            Err(SignError::NoHost)
        ));
    }
}
