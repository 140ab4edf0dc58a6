//! Request authentication: SigV4 in the Authorization header, presigned
//! query URLs with expiry, and the payload modes that decide how the body
//! is verified (signed hash, signed or unsigned `aws-chunked`, trailers).

pub mod chunked;
pub mod credentials;
mod outcome;
mod query_headers;
pub mod sigv2;
pub mod sigv4;

pub use outcome::{Authenticated, Payload, Signing, MAX_CLOCK_SKEW, MAX_PRESIGN_EXPIRY_SECS};
pub use query_headers::query_headers;

use http::request::Parts;
use http::HeaderMap;
use time::macros::format_description;
use time::{Duration, OffsetDateTime, PrimitiveDateTime};

use crate::error::{S3Error, S3Result};
use chunked::ChunkSigner;
use credentials::Credentials;
use sigv4::{Scope, ALGORITHM};

/// What authentication needs besides the request and the keys.
#[derive(Clone, Copy, Debug)]
pub struct AuthContext<'a> {
    /// The server's region.
    pub region: &'a str,
    /// The clock used for skew and expiry.
    pub now: OffsetDateTime,
    /// The bucket named by the Host header in virtual-hosted-style requests.
    pub vhost_bucket: Option<&'a str>,
    /// SigV2 presigned URLs are accepted (`--sigv2`).
    pub sigv2: bool,
}

const AMZ_DATE: &[time::format_description::BorrowedFormatItem<'static>] =
    format_description!("[year][month][day]T[hour][minute][second]Z");

fn parse_amz_date(s: &str) -> Option<OffsetDateTime> {
    PrimitiveDateTime::parse(s, AMZ_DATE)
        .ok()
        .map(|t| t.assume_utc())
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// A query's (name, value) pairs, percent-decoded to bytes.
fn query_pairs(raw: &str) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> + '_ {
    raw.split('&').filter(|p| !p.is_empty()).map(|p| {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        (sigv4::percent_decode(k), sigv4::percent_decode(v))
    })
}

fn query_params(raw: &str) -> Vec<(String, String)> {
    query_pairs(raw)
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(&k).into_owned(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect()
}

struct Parsed {
    access_key: String,
    scope: Scope,
    signed_headers: Vec<String>,
    signature: String,
}

fn parse_credential(
    cred: &str,
    malformed: impl Fn(String) -> S3Error,
) -> S3Result<(String, Scope)> {
    let parts: Vec<&str> = cred.split('/').collect();
    if parts.len() != 5 || parts[4] != "aws4_request" {
        return Err(malformed(format!(
            "the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\" (got \"{cred}\")"
        )));
    }
    Ok((
        parts[0].to_string(),
        Scope {
            date: parts[1].to_string(),
            region: parts[2].to_string(),
            service: parts[3].to_string(),
        },
    ))
}

fn parse_authorization(value: &str) -> S3Result<Parsed> {
    let malformed = |m: String| {
        S3Error::AuthorizationHeaderMalformed(
            format!("The authorization header is malformed; {m}"),
            None,
        )
    };
    let rest = value.strip_prefix(ALGORITHM).ok_or_else(|| {
        S3Error::InvalidRequest("The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.".into())
    })?;
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for field in rest.split(',') {
        let field = field.trim();
        if let Some(v) = field.strip_prefix("Credential=") {
            credential = Some(v);
        } else if let Some(v) = field.strip_prefix("SignedHeaders=") {
            signed = Some(v);
        } else if let Some(v) = field.strip_prefix("Signature=") {
            signature = Some(v);
        }
    }
    let (Some(credential), Some(signed), Some(signature)) = (credential, signed, signature) else {
        return Err(malformed(
            "it must contain Credential, SignedHeaders and Signature".into(),
        ));
    };
    let (access_key, scope) = parse_credential(credential, malformed)?;
    Ok(Parsed {
        access_key,
        scope,
        signed_headers: signed.split(';').map(|s| s.to_ascii_lowercase()).collect(),
        signature: signature.to_string(),
    })
}

/// What the request looks like to the signer, independent of where the
/// signature came from.
struct SigningInput<'a> {
    parts: &'a Parts,
    parsed: Parsed,
    amz_date: String,
    payload_hash: String,
    query: String,
}

fn check_scope(
    scope: &Scope,
    date: &OffsetDateTime,
    region: &str,
    mk: impl Fn(String, Option<String>) -> S3Error,
) -> S3Result<()> {
    // The S3 APIs signed for another service are features Granary does
    // not have: directory buckets (ListDirectoryBuckets, CreateSession)
    // and Object Lambda (WriteGetObjectResponse).
    let unsupported = match scope.service.as_str() {
        "s3express" => Some("Directory buckets (S3 Express One Zone) are not supported"),
        "s3-object-lambda" => Some("S3 Object Lambda is not supported"),
        _ => None,
    };
    if let Some(what) = unsupported {
        return Err(S3Error::NotImplemented(format!(
            "{what} (a request signed for the service '{}')",
            scope.service
        )));
    }
    if scope.region != region {
        return Err(mk(
            format!(
                "the region '{}' is wrong; expecting '{region}'",
                scope.region
            ),
            Some(region.to_string()),
        ));
    }
    if scope.service != "s3" {
        return Err(mk(
            format!("the service '{}' is wrong; expecting 's3'", scope.service),
            None,
        ));
    }
    let day = format!(
        "{:04}{:02}{:02}",
        date.year(),
        date.month() as u8,
        date.day()
    );
    if scope.date != day {
        return Err(mk(
            format!(
                "the credential date '{}' does not match the request date '{day}'",
                scope.date
            ),
            None,
        ));
    }
    Ok(())
}

fn verify(input: SigningInput<'_>, creds: &Credentials) -> S3Result<[u8; 32]> {
    let secret = creds
        .secret(&input.parsed.access_key)
        .ok_or(S3Error::InvalidAccessKeyId)?;
    let signed: Vec<&str> = input
        .parsed
        .signed_headers
        .iter()
        .map(|s| s.as_str())
        .collect();
    if !signed.contains(&"host") {
        return Err(S3Error::AuthorizationHeaderMalformed(
            "The authorization header is malformed; the host header must be signed".into(),
            None,
        ));
    }
    let host = input.parts.uri.authority().map(|a| a.as_str());
    let headers = sigv4::canonical_headers(&input.parts.headers, &signed, host).ok_or_else(|| {
        S3Error::AccessDenied("There were headers present in the request which were not signed, or signed headers are missing".into())
    })?;
    let key = sigv4::signing_key(secret, &input.parsed.scope);
    // S3 signs the path as the client encoded it, once: a client that
    // encodes more (`%2F` inside a key) or less (a raw `!`) than SigV4's
    // set signs that form, and the AWS SDKs encode exactly the set, which
    // is the canonical form. Either form names the same key (the path
    // decodes to it), so a signature over either is accepted.
    let attempt = |path: &str| -> S3Result<()> {
        let canonical = sigv4::canonical_request(
            input.parts.method.as_str(),
            path,
            &input.query,
            &headers,
            &input.parsed.signed_headers.join(";"),
            &input.payload_hash,
        );
        let sts = sigv4::string_to_sign(&input.amz_date, &input.parsed.scope, &canonical);
        match sigv4::signatures_equal(&sigv4::sign(&key, &sts), &input.parsed.signature) {
            true => Ok(()),
            false => Err(S3Error::SignatureDoesNotMatch {
                string_to_sign: sts,
                canonical_request: canonical,
            }),
        }
    };
    let raw = input.parts.uri.path();
    let canonical_path = sigv4::canonical_uri(raw);
    match attempt(&canonical_path) {
        Err(refused) if !raw.is_empty() && raw != canonical_path => {
            attempt(raw).map_err(|_| refused)?
        }
        other => other?,
    }
    let unsigned = unsigned_headers(&input.parts.headers, &signed);
    if !unsigned.is_empty() {
        return Err(S3Error::HeadersNotSigned(unsigned));
    }
    Ok(key)
}

/// Headers that change what a request does and that SigV4 must therefore
/// cover when present: every `x-amz-*` header and `content-md5`.
///
/// The one exception is `x-amz-content-sha256`: its value is the payload
/// line of the canonical request, so the signature covers it whether it is
/// listed or not, and S3 accepts it unlisted (a client that did not sign it
/// works against AWS and is refused only by stricter S3 clones —
/// zengularity/benji#309). Trailing checksums of `aws-chunked` bodies are
/// not request headers and are checked by the body decoder.
fn must_be_signed(name: &str) -> bool {
    (name.starts_with("x-amz-") && name != "x-amz-content-sha256") || name == "content-md5"
}

/// The present headers [`must_be_signed`] that `signed` leaves out, each
/// once, in request order.
fn unsigned_headers(headers: &HeaderMap, signed: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in headers.keys() {
        let name = name.as_str();
        if must_be_signed(name) && !signed.contains(&name) && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The access key a request claims (from the Authorization header or a
/// presigned URL), or `None` for an unsigned (anonymous) request: the one
/// [`authenticate`] then checks, read the same way (the last `Credential`
/// of a header; a SigV2 URL's `AWSAccessKeyId` before a first
/// `X-Amz-Credential`).
pub fn requested_key(parts: &Parts) -> Option<String> {
    if let Some(auth) = header(&parts.headers, "authorization") {
        let key = if let Some(rest) = auth.strip_prefix(ALGORITHM) {
            rest.rsplit(',')
                .find_map(|f| f.trim().strip_prefix("Credential="))
                .and_then(|c| c.split('/').next())
        } else {
            auth.strip_prefix("AWS ").and_then(|r| r.split(':').next())
        };
        return Some(key.unwrap_or("").to_string());
    }
    let params = query_params(parts.uri.query().unwrap_or(""));
    let first = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    match (first("AWSAccessKeyId"), first("X-Amz-Credential")) {
        (Some(id), _) => Some(id.clone()),
        (None, Some(c)) => Some(c.split('/').next().unwrap_or("").to_string()),
        (None, None) => None,
    }
}

/// How an unsigned request's body is read: plain, or `aws-chunked` with
/// unsigned trailers when it says so.
pub fn anonymous(parts: &Parts) -> Authenticated {
    let payload = match header(&parts.headers, "x-amz-content-sha256") {
        Some("STREAMING-UNSIGNED-PAYLOAD-TRAILER") => Payload::UnsignedChunks,
        _ => Payload::Unsigned,
    };
    Authenticated {
        access_key: String::new(),
        payload,
        signing: Signing::Anonymous,
    }
}

/// Name of the session token of temporary credentials, as a header, a
/// query parameter (any case: `X-Amz-Security-Token` in SigV4 URLs) or a
/// POST form field.
pub const SESSION_TOKEN: &str = "x-amz-security-token";

/// Refuses a request carrying a session token. Granary issues no
/// temporary credentials, so every token is one it cannot check, and S3
/// answers a token it does not know 400 InvalidToken whatever the
/// signature; accepting the request would ignore the token.
pub fn refuse_session_token(parts: &Parts) -> S3Result<()> {
    let in_query = query_params(parts.uri.query().unwrap_or(""))
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case(SESSION_TOKEN));
    match in_query || parts.headers.contains_key(SESSION_TOKEN) {
        true => Err(S3Error::InvalidToken),
        false => Ok(()),
    }
}

/// Authenticates a request.
pub fn authenticate(
    parts: &Parts,
    creds: &Credentials,
    cx: AuthContext<'_>,
) -> S3Result<Authenticated> {
    let (region, now) = (cx.region, cx.now);
    let raw_query = parts.uri.query().unwrap_or("");
    if let Some(auth) = header(&parts.headers, "authorization") {
        return header_auth(parts, auth, raw_query, creds, region, now);
    }
    let params = query_params(raw_query);
    if params.iter().any(|(k, _)| k == "AWSAccessKeyId") {
        if !cx.sigv2 {
            return Err(S3Error::AccessDenied(
                "Signature Version 2 is turned off on this server; sign with AWS4-HMAC-SHA256"
                    .into(),
            ));
        }
        return sigv2::presigned(parts, &params, creds, now.unix_timestamp(), cx.vhost_bucket);
    }
    if params
        .iter()
        .any(|(k, _)| k == "X-Amz-Algorithm" || k == "X-Amz-Credential" || k == "X-Amz-Signature")
    {
        return presigned_auth(parts, &params, raw_query, creds, region, now);
    }
    Err(S3Error::AccessDenied("Access Denied".into()))
}

fn header_auth(
    parts: &Parts,
    auth: &str,
    raw_query: &str,
    creds: &Credentials,
    region: &str,
    now: OffsetDateTime,
) -> S3Result<Authenticated> {
    let parsed = parse_authorization(auth)?;
    let (date, amz_date) = match header(&parts.headers, "x-amz-date") {
        Some(d) => (
            parse_amz_date(d).ok_or_else(|| {
                S3Error::AccessDenied(
                    "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"".into(),
                )
            })?,
            d.to_string(),
        ),
        None => {
            let d = header(&parts.headers, "date")
                .and_then(|d| httpdate::parse_http_date(d).ok())
                .ok_or_else(|| {
                    S3Error::AccessDenied(
                        "AWS authentication requires a valid Date or x-amz-date header".into(),
                    )
                })?;
            let t = OffsetDateTime::from(d);
            let s = t.format(AMZ_DATE).expect("formats");
            (t, s)
        }
    };
    if (now - date).abs() > MAX_CLOCK_SKEW {
        return Err(S3Error::RequestTimeTooSkewed);
    }
    check_scope(&parsed.scope, &date, region, |m, r| {
        S3Error::AuthorizationHeaderMalformed(
            format!("The authorization header is malformed; {m}"),
            r,
        )
    })?;
    let content_sha = header(&parts.headers, "x-amz-content-sha256").ok_or_else(|| {
        S3Error::InvalidRequest(
            "Missing required header for this request: x-amz-content-sha256".into(),
        )
    })?;
    let payload_kind = classify_payload(content_sha)?;
    let access_key = parsed.access_key.clone();
    let scope = parsed.scope.clone();
    let seed = parsed.signature.clone();
    let key = verify(
        SigningInput {
            parts,
            parsed,
            amz_date: amz_date.clone(),
            payload_hash: content_sha.to_string(),
            query: sigv4::canonical_query(raw_query, None),
        },
        creds,
    )?;
    let payload = match payload_kind {
        PayloadKind::Unsigned => Payload::Unsigned,
        PayloadKind::Sha256 => Payload::Sha256(content_sha.to_ascii_lowercase()),
        PayloadKind::SignedChunks { trailer } => Payload::SignedChunks {
            signer: ChunkSigner::new(key, amz_date, scope.to_scope_string(), seed),
            trailer,
        },
        PayloadKind::UnsignedChunks => Payload::UnsignedChunks,
    };
    Ok(Authenticated {
        access_key,
        payload,
        signing: Signing::V4Header,
    })
}

enum PayloadKind {
    Unsigned,
    Sha256,
    SignedChunks { trailer: bool },
    UnsignedChunks,
}

fn classify_payload(v: &str) -> S3Result<PayloadKind> {
    Ok(match v {
        "UNSIGNED-PAYLOAD" => PayloadKind::Unsigned,
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" => PayloadKind::SignedChunks { trailer: false },
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER" => PayloadKind::SignedChunks { trailer: true },
        "STREAMING-UNSIGNED-PAYLOAD-TRAILER" => PayloadKind::UnsignedChunks,
        v if v.starts_with("STREAMING-AWS4-ECDSA") => {
            return Err(S3Error::NotImplemented("SigV4a (ECDSA) signing is not supported; use AWS4-HMAC-SHA256".into()))
        }
        v if v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()) => PayloadKind::Sha256,
        _ => {
            return Err(S3Error::InvalidArgument(
                "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING-* value, or a valid sha256 value.".into(),
                Some(("x-amz-content-sha256".into(), v.to_string())),
            ))
        }
    })
}

fn presigned_auth(
    parts: &Parts,
    params: &[(String, String)],
    raw_query: &str,
    creds: &Credentials,
    region: &str,
    now: OffsetDateTime,
) -> S3Result<Authenticated> {
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let bad = |m: &str| S3Error::AuthorizationQueryParametersError(m.to_string());
    let algorithm = get("X-Amz-Algorithm").ok_or_else(|| bad("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."))?;
    if algorithm != ALGORITHM {
        return Err(bad("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\""));
    }
    let (Some(cred), Some(date), Some(expires), Some(signed), Some(signature)) = (
        get("X-Amz-Credential"),
        get("X-Amz-Date"),
        get("X-Amz-Expires"),
        get("X-Amz-SignedHeaders"),
        get("X-Amz-Signature"),
    ) else {
        return Err(bad("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."));
    };
    let (access_key, scope) = parse_credential(cred, |m| {
        S3Error::AuthorizationQueryParametersError(format!(
            "Error parsing the X-Amz-Credential parameter; {m}"
        ))
    })?;
    let t = parse_amz_date(date).ok_or_else(|| {
        bad("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
    })?;
    let expires: i64 = expires
        .parse()
        .map_err(|_| bad("X-Amz-Expires should be a number"))?;
    if expires < 0 {
        return Err(bad("X-Amz-Expires must be non-negative"));
    }
    if expires > MAX_PRESIGN_EXPIRY_SECS {
        return Err(bad(
            "X-Amz-Expires must be less than a week (in seconds) that is 604800",
        ));
    }
    if t - now > MAX_CLOCK_SKEW {
        return Err(S3Error::AccessDenied("Request is not valid yet".into()));
    }
    if now > t + Duration::seconds(expires) {
        return Err(S3Error::AccessDenied("Request has expired".into()));
    }
    check_scope(&scope, &t, region, |m, _| {
        S3Error::AuthorizationQueryParametersError(format!(
            "Error parsing the X-Amz-Credential parameter; {m}"
        ))
    })?;
    let payload_hash = header(&parts.headers, "x-amz-content-sha256")
        .unwrap_or("UNSIGNED-PAYLOAD")
        .to_string();
    let payload = match classify_payload(&payload_hash)? {
        PayloadKind::Unsigned => Payload::Unsigned,
        PayloadKind::Sha256 => Payload::Sha256(payload_hash.to_ascii_lowercase()),
        _ => {
            return Err(S3Error::InvalidRequest(
                "Presigned requests cannot use aws-chunked payloads".into(),
            ))
        }
    };
    verify(
        SigningInput {
            parts,
            parsed: Parsed {
                access_key: access_key.clone(),
                scope,
                signed_headers: signed.split(';').map(|s| s.to_ascii_lowercase()).collect(),
                signature: signature.to_string(),
            },
            amz_date: date.to_string(),
            payload_hash,
            query: sigv4::canonical_query(raw_query, Some("X-Amz-Signature")),
        },
        creds,
    )?;
    Ok(Authenticated {
        access_key,
        payload,
        signing: Signing::V4Query,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request for `wire_path` signed over `signed_path` as its canonical
    /// URI (the S3 way: the path as the client encoded it, once).
    fn signed_over(wire_path: &str, signed_path: &str) -> Parts {
        let scope = Scope {
            date: "20260101".into(),
            region: "us-east-1".into(),
            service: "s3".into(),
        };
        let headers = format!(
            "host:h\nx-amz-content-sha256:{}\nx-amz-date:20260101T000000Z\n",
            sigv4::EMPTY_SHA256
        );
        let canonical = sigv4::canonical_request(
            "GET",
            signed_path,
            "",
            &headers,
            "host;x-amz-content-sha256;x-amz-date",
            sigv4::EMPTY_SHA256,
        );
        let sts = sigv4::string_to_sign("20260101T000000Z", &scope, &canonical);
        let sig = sigv4::sign(&sigv4::signing_key("secret", &scope), &sts);
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={sig}"
        );
        let req = http::Request::builder()
            .uri(format!("http://h{wire_path}"))
            .header("host", "h")
            .header("x-amz-content-sha256", sigv4::EMPTY_SHA256)
            .header("x-amz-date", "20260101T000000Z")
            .header("authorization", auth)
            .body(())
            .unwrap();
        req.into_parts().0
    }

    fn check(parts: &Parts) -> S3Result<Authenticated> {
        let cx = AuthContext {
            region: "us-east-1",
            now: OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap(),
            vhost_bucket: None,
            sigv2: false,
        };
        authenticate(parts, &Credentials::single("AKID", "secret"), cx)
    }

    /// S3 signs the path as the client sent it. A key's `/` sent as `%2F`
    /// (a JavaScript `encodeURIComponent`, the AWS SDKs' signer given
    /// such a path) is signed as `%2F`; found by the sign_then_verify fuzz
    /// target.
    /// The key the gateway loads is the one authentication checks, also
    /// when a request names two (the auth_request fuzz target's check).
    #[test]
    fn the_requested_key_is_the_one_authentication_reads() {
        let with_auth = |v: &str| {
            let req = http::Request::builder()
                .uri("http://h/b/k")
                .header("authorization", v);
            req.body(()).unwrap().into_parts().0
        };
        let two = with_auth("AWS4-HMAC-SHA256 Credential=A/20260101/us-east-1/s3/aws4_request, Credential=B/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00");
        let parsed = parse_authorization("AWS4-HMAC-SHA256 Credential=A/20260101/us-east-1/s3/aws4_request, Credential=B/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00").unwrap();
        assert_eq!(
            requested_key(&two).as_deref(),
            Some(parsed.access_key.as_str())
        );
        let url = |q: &str| {
            let req = http::Request::builder().uri(format!("http://h/b/k?{q}"));
            req.body(()).unwrap().into_parts().0
        };
        let both = url("X-Amz-Credential=X%2F20260101&AWSAccessKeyId=AKID&Expires=1&Signature=s");
        assert_eq!(requested_key(&both).as_deref(), Some("AKID"));
        let v4 = url("X-Amz-Credential=X%2F20260101&X-Amz-Credential=Y%2F20260101");
        assert_eq!(requested_key(&v4).as_deref(), Some("X"));
        assert_eq!(requested_key(&url("a=b")), None);
    }

    #[test]
    fn a_path_is_verified_as_the_client_encoded_it_or_canonically() {
        for (wire, signed) in [
            ("/b/a%2Fb", "/b/a%2Fb"),
            ("/b/a%2Fb", "/b/a/b"),
            ("/b/x!y", "/b/x!y"),
            ("/b/x!y", "/b/x%21y"),
            ("/b/plain", "/b/plain"),
            ("/ight%252Fws%2Fmodel-0/", "/ight%252Fws%2Fmodel-0/"),
        ] {
            let r = check(&signed_over(wire, signed));
            assert!(r.is_ok(), "{wire} signed as {signed}: {:?}", r.err());
        }
        // What neither form of the path gives is refused.
        assert!(matches!(
            check(&signed_over("/b/a%2Fb", "/b/a%252Fb")),
            Err(S3Error::SignatureDoesNotMatch { .. })
        ));
        assert!(matches!(
            check(&signed_over("/b/other", "/b/plain")),
            Err(S3Error::SignatureDoesNotMatch { .. })
        ));
    }

    #[test]
    fn unsigned_headers_are_the_amz_ones_and_content_md5_left_out() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("host", "h"),
            ("x-amz-date", "d"),
            ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
            ("x-amz-copy-source", "/b/k"),
            ("x-amz-meta-a", "1"),
            ("content-type", "text/plain"),
            ("content-md5", "m"),
            ("x-amzn-trace-id", "t"),
            ("user-agent", "u"),
        ] {
            h.append(k, v.parse().unwrap());
        }
        h.append("x-amz-meta-a", "2".parse().unwrap());
        assert_eq!(
            unsigned_headers(&h, &["host", "x-amz-date", "x-amz-meta-a"]),
            ["x-amz-copy-source", "content-md5"]
        );
        assert!(unsigned_headers(
            &h,
            &[
                "host",
                "x-amz-date",
                "x-amz-copy-source",
                "x-amz-meta-a",
                "content-md5"
            ]
        )
        .is_empty());
    }
}
