//! Authentication and request bodies: any request through `authenticate`
//! (header SigV4, presigned SigV4, presigned SigV2); requests signed by
//! the AWS signer (and by Granary's own outbound signer) that must verify;
//! and the `aws-chunked` decoder, which must decode what an encoder wrote
//! and must not depend on how the body was cut into pieces.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arbitrary::{Arbitrary, Unstructured};
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest,
    SignatureLocation, SigningSettings, UriPathNormalizationMode,
};
use aws_sigv4::sign::v4::SigningParams;
use bytes::Bytes;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use s3_wire::auth::chunked::{ChunkSigner, ChunkedDecoder};
use s3_wire::auth::credentials::Credentials;
use s3_wire::auth::sigv4::{self, Scope, EMPTY_SHA256};
use s3_wire::auth::{anonymous, authenticate, requested_key, AuthContext};
use s3_wire::S3Error;
use time::OffsetDateTime;

use crate::input::{pieces, request};

/// The one key pair the targets' server knows.
pub const ACCESS_KEY: &str = "AKIDFUZZEXAMPLE";
/// Its secret.
pub const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
/// The region the targets' server serves.
pub const REGION: &str = "us-east-1";
/// When every signed input was signed, and when it is checked: seeds
/// signed then stay valid, so the fuzzer reaches the signature check.
pub const SIGNED_AT_SECS: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z

/// [`SIGNED_AT_SECS`] as a time.
pub fn signed_at() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(SIGNED_AT_SECS)
}

fn credentials() -> Credentials {
    Credentials::single(ACCESS_KEY, SECRET_KEY)
}

fn context(now: OffsetDateTime, sigv2: bool) -> AuthContext<'static> {
    AuthContext {
        region: REGION,
        now,
        vhost_bucket: None,
        sigv2,
    }
}

fn now() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(SIGNED_AT_SECS as i64).expect("a valid time")
}

/// Any request (see `input::request`) through authentication: never a
/// panic, and only the one known key is ever accepted.
pub fn auth_request(data: &[u8]) {
    let Some(parts) = request(data) else { return };
    for sigv2 in [true, false] {
        if let Ok(a) = authenticate(&parts, &credentials(), context(now(), sigv2)) {
            assert_eq!(a.access_key, ACCESS_KEY, "accepted an unknown key");
            assert_eq!(requested_key(&parts).as_deref(), Some(ACCESS_KEY));
        }
    }
    let _ = requested_key(&parts);
    let _ = anonymous(&parts);
}

/// What S3 clients leave unencoded in paths and query strings.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A request a client could send, drawn from the fuzzer's bytes.
#[derive(Arbitrary, Debug)]
struct Drawn {
    method: u8,
    virtual_host: bool,
    segments: Vec<String>,
    query: Vec<(String, String)>,
    meta: Vec<(u8, String)>,
    content_type: Option<String>,
    body: Vec<u8>,
    how: u8,
    expires: u32,
    late_secs: u16,
}

/// A header value as clients send them: visible ASCII and spaces.
fn header_text(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .collect()
}

impl Drawn {
    fn uri(&self) -> String {
        let host = match self.virtual_host {
            true => "bucket.s3.example.com",
            false => "127.0.0.1:9000",
        };
        let mut path = String::new();
        for s in self.segments.iter().take(6) {
            path.push('/');
            path.extend(utf8_percent_encode(s, UNRESERVED));
        }
        if path.is_empty() {
            path.push('/');
        }
        let query: Vec<String> = self
            .query
            .iter()
            .take(6)
            // The presigning parameters are the signer's own (and
            // AWSAccessKeyId would make it a SigV2 URL).
            .filter(|(k, _)| !k.to_ascii_lowercase().starts_with("x-amz-") && k != "AWSAccessKeyId")
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    utf8_percent_encode(k, UNRESERVED),
                    utf8_percent_encode(v, UNRESERVED)
                )
            })
            .collect();
        match query.is_empty() {
            true => format!("http://{host}{path}"),
            false => format!("http://{host}{path}?{}", query.join("&")),
        }
    }

    fn request(&self) -> Option<http::Request<()>> {
        let method = ["GET", "PUT", "POST", "DELETE", "HEAD"][self.method as usize % 5];
        let uri: http::Uri = self.uri().parse().ok()?;
        let host = uri.authority()?.to_string();
        let mut b = http::Request::builder()
            .method(method)
            .uri(uri)
            .header("host", host);
        for (i, (n, v)) in self.meta.iter().take(4).enumerate() {
            b = b.header(format!("x-amz-meta-m{n}-{i}"), header_text(v));
        }
        if let Some(t) = &self.content_type {
            b = b.header("content-type", header_text(t));
        }
        b.body(()).ok()
    }
}

/// Signs `req` as the AWS SDKs sign S3 requests (single percent-encoding,
/// no path normalisation), in its headers or (for `expires`) its query.
fn aws_sign(
    req: &mut http::Request<()>,
    body: SignableBody<'_>,
    expires: Option<Duration>,
) -> bool {
    let identity =
        aws_credential_types::Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "fuzz").into();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    match expires {
        Some(e) => {
            settings.signature_location = SignatureLocation::QueryParams;
            settings.expires_in = Some(e);
        }
        None => settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256,
    }
    let Ok(params) = SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name("s3")
        .time(signed_at())
        .settings(settings)
        .build()
    else {
        return false;
    };
    let params: aws_sigv4::http_request::SigningParams<'_> = params.into();
    let uri = req.uri().to_string();
    let headers: Vec<(&str, &str)> = req
        .headers()
        .iter()
        .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))
        .collect();
    let Ok(signable) = SignableRequest::new(req.method().as_str(), &uri, headers.into_iter(), body)
    else {
        return false;
    };
    let Ok(signed) = sign(signable, &params) else {
        return false;
    };
    signed.into_parts().0.apply_to_request_http1x(req);
    true
}

/// A request to `uri` signed by the AWS signer at [`SIGNED_AT_SECS`]
/// (presigned for `expires` seconds), for seeds.
pub fn signed_request(
    method: &str,
    uri: &str,
    payload: SignableBody<'_>,
    expires: Option<u64>,
) -> Option<http::request::Parts> {
    let uri: http::Uri = uri.parse().ok()?;
    let host = uri.authority()?.to_string();
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("host", host)
        .header("x-amz-meta-purpose", "seed")
        .body(())
        .ok()?;
    aws_sign(&mut req, payload, expires.map(Duration::from_secs)).then(|| req.into_parts().0)
}

/// Requests signed by the AWS signer — in headers with a signed or an
/// unsigned payload, presigned in the query — and by Granary's outbound
/// signer verify, checked a little after they were signed.
pub fn sign_then_verify(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(d) = Drawn::arbitrary(&mut u) else {
        return;
    };
    let Some(mut req) = d.request() else { return };
    let later = Duration::from_secs(u64::from(d.late_secs) % 600);
    let signed = match d.how % 4 {
        0 => aws_sign(&mut req, SignableBody::Bytes(&d.body), None),
        1 => aws_sign(&mut req, SignableBody::UnsignedPayload, None),
        2 => {
            let expires = 1 + u64::from(d.expires) % 604_800;
            let later = later.min(Duration::from_secs(expires));
            let expires = Some(Duration::from_secs(expires));
            if aws_sign(&mut req, SignableBody::UnsignedPayload, expires) {
                verify(req, later);
            }
            return;
        }
        _ => {
            let signer = request_signer::Signer::s3(ACCESS_KEY, SECRET_KEY, REGION);
            let payload = request_signer::Payload::Bytes(&d.body);
            signer.sign_at(&mut req, payload, signed_at()).is_ok()
        }
    };
    if signed {
        verify(req, later);
    }
}

fn verify(req: http::Request<()>, later: Duration) {
    let (parts, ()) = req.into_parts();
    let at = now() + later;
    match authenticate(&parts, &credentials(), context(at, false)) {
        Ok(a) => assert_eq!(a.access_key, ACCESS_KEY),
        Err(S3Error::SignatureDoesNotMatch {
            string_to_sign,
            canonical_request,
        }) => panic!(
            "a correctly signed request was refused: {} {}\n{canonical_request}\n--\n{string_to_sign}",
            parts.method, parts.uri
        ),
        Err(e) => panic!(
            "a correctly signed request was refused: {} {}: {e}",
            parts.method, parts.uri
        ),
    }
}

/// The scope and signing key the chunked bodies are signed under.
fn chunk_scope() -> (Scope, [u8; 32], String) {
    let scope = Scope {
        date: "20260101".into(),
        region: REGION.into(),
        service: "s3".into(),
    };
    let key = sigv4::signing_key(SECRET_KEY, &scope);
    (scope, key, "20260101T000000Z".into())
}

/// Chunks and trailers drawn from the fuzzer's bytes.
#[derive(Arbitrary, Debug)]
struct Body {
    chunks: Vec<Vec<u8>>,
    trailers: Vec<(u8, Vec<u8>)>,
    signed: bool,
    seed: [u8; 32],
}

/// Writes `b` in `aws-chunked` encoding, signing it (chunk signatures
/// chained from the seed signature, then the trailer's) as the AWS
/// streaming specification describes, independently of the decoder.
fn encode_chunked(b: &Body, trailers: &[(String, String)]) -> Vec<u8> {
    let (scope, key, date) = chunk_scope();
    let scope = scope.to_scope_string();
    let mut previous = hex::encode(b.seed);
    let mut sign_next = |kind: &str, hash: &str| -> String {
        let sts = match kind {
            "PAYLOAD" => format!(
                "AWS4-HMAC-SHA256-PAYLOAD\n{date}\n{scope}\n{previous}\n{EMPTY_SHA256}\n{hash}"
            ),
            _ => format!("AWS4-HMAC-SHA256-TRAILER\n{date}\n{scope}\n{previous}\n{hash}"),
        };
        previous = sigv4::sign(&key, &sts);
        previous.clone()
    };
    let mut out = Vec::new();
    let chunks = b.chunks.iter().filter(|c| !c.is_empty());
    for c in chunks.chain(std::iter::once(&Vec::new())) {
        out.extend_from_slice(format!("{:x}", c.len()).as_bytes());
        if b.signed {
            let sig = sign_next("PAYLOAD", &sigv4::sha256_hex(c));
            out.extend_from_slice(format!(";chunk-signature={sig}").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        if !c.is_empty() {
            out.extend_from_slice(c);
            out.extend_from_slice(b"\r\n");
        }
    }
    let mut canonical = Vec::new();
    for (name, value) in trailers {
        out.extend_from_slice(format!("{name}:{value}\r\n").as_bytes());
        canonical.extend_from_slice(format!("{name}:{value}\n").as_bytes());
    }
    if b.signed && !trailers.is_empty() {
        let sig = sign_next("TRAILER", &sigv4::sha256_hex(&canonical));
        out.extend_from_slice(format!("x-amz-trailer-signature:{sig}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// A decoded body: its data and its trailers.
type Decoded = (Vec<u8>, Vec<(String, String)>);

/// What decoding `pieces` in order gives: the data and the trailers, or
/// the error's code.
fn decode_pieces(signer: Option<ChunkSigner>, pieces: &[&[u8]]) -> Result<Decoded, &'static str> {
    let mut d = ChunkedDecoder::new(signer);
    let mut data = Vec::new();
    for p in pieces {
        let mut out = Vec::new();
        d.push(Bytes::copy_from_slice(p), &mut out)
            .map_err(|e| e.code())?;
        out.iter().for_each(|o| data.extend_from_slice(o));
    }
    assert_eq!(
        d.decoded(),
        data.len() as u64,
        "decoded() counts what was passed on"
    );
    let trailers = d.finish().map_err(|e| e.code())?;
    Ok((data, trailers))
}

/// The `aws-chunked` decoder: any bytes decode the same whole or cut
/// anywhere (unsigned); and what the encoder above writes — signed or
/// not, with trailers — decodes, cut anywhere, to exactly its chunks and
/// trailers.
pub fn aws_chunked(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let cut = rest.len().min(16);
        let (cuts, body) = rest.split_at(cut);
        let mut u = Unstructured::new(cuts);
        let split = pieces(&mut u, body);
        let whole = decode_pieces(None, &[body]);
        let cut_up = decode_pieces(None, &split);
        assert_eq!(
            whole, cut_up,
            "the result depends on where the body was cut"
        );
        return;
    }
    let mut u = Unstructured::new(rest);
    let Ok(b) = Body::arbitrary(&mut u) else {
        return;
    };
    let trailers: Vec<(String, String)> = b
        .trailers
        .iter()
        .take(8)
        .map(|(n, v)| {
            // Within a line's 4 KiB, which longer ones rightly exceed.
            let value: String = v
                .iter()
                .take(1024)
                .map(|c| (b'a' + c % 26) as char)
                .collect();
            (format!("x-amz-checksum-t{n}"), value)
        })
        .collect();
    let encoded = encode_chunked(&b, &trailers);
    let split = pieces(&mut u, &encoded);
    let signer = b.signed.then(|| {
        let (scope, key, date) = chunk_scope();
        ChunkSigner::new(key, date, scope.to_scope_string(), hex::encode(b.seed))
    });
    let (decoded, got) = decode_pieces(signer, &split).expect("an encoded body decodes");
    let want: Vec<u8> = b.chunks.concat();
    assert_eq!(decoded, want, "the data");
    assert_eq!(got, trailers, "the trailers");
}
