//! Signature Version 4 primitives: canonical request, string to sign,
//! signing key, and the URI encoding S3 signs with.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html>)

use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::{Digest, Sha256};

/// The only algorithm S3 accepts for SigV4.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// SHA-256 of the empty string, hex.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// HMAC-SHA256.
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The credential scope: `date/region/service/aws4_request`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    /// YYYYMMDD.
    pub date: String,
    /// Region, e.g. us-east-1.
    pub region: String,
    /// Service, "s3" for S3.
    pub service: String,
}

impl Scope {
    /// The scope string.
    pub fn to_scope_string(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            self.date, self.region, self.service
        )
    }
}

/// Derives the signing key for a secret and scope.
pub fn signing_key(secret: &str, scope: &Scope) -> [u8; 32] {
    let k_date = hmac_sha256(format!("AWS4{secret}").as_bytes(), scope.date.as_bytes());
    let k_region = hmac_sha256(&k_date, scope.region.as_bytes());
    let k_service = hmac_sha256(&k_region, scope.service.as_bytes());
    hmac_sha256(&k_service, b"aws4_request")
}

/// Percent-encodes every byte except the unreserved characters
/// (A–Z a–z 0–9 - _ . ~), and `/` unless `encode_slash`.
pub fn uri_encode(input: &[u8], encode_slash: bool) -> String {
    let mut out = String::with_capacity(input.len() * 3 / 2);
    for &b in input {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (b == b'/' && !encode_slash);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (leaves malformed ones as they are, like S3).
pub fn percent_decode(input: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(input).collect()
}

/// The canonical URI of a raw request path: decoded once and re-encoded as
/// SigV4 requires for S3 (no double encoding, `/` kept).
pub fn canonical_uri(raw_path: &str) -> String {
    if raw_path.is_empty() {
        return "/".into();
    }
    uri_encode(&percent_decode(raw_path), false)
}

/// The canonical query string: parameters decoded, re-encoded, sorted by
/// name then value; `skip` names one parameter to leave out (the presigned
/// signature itself).
pub fn canonical_query(raw_query: &str, skip: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = raw_query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let k = percent_decode(k);
            if skip.is_some_and(|s| s.as_bytes() == k.as_slice()) {
                return None;
            }
            Some((uri_encode(&k, true), uri_encode(&percent_decode(v), true)))
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Canonical headers block for `signed` (lower-case names, in order):
/// values trimmed, inner runs of spaces collapsed, repeats joined by `,`.
/// `None` when a signed header is absent.
pub fn canonical_headers(
    headers: &HeaderMap,
    signed: &[&str],
    host: Option<&str>,
) -> Option<String> {
    let mut out = String::new();
    for &name in signed {
        let values: Vec<String> = headers
            .get_all(name)
            .iter()
            .map(|v| collapse_spaces(&String::from_utf8_lossy(v.as_bytes())))
            .collect();
        let value = if values.is_empty() {
            if name == "host" {
                host?.to_string()
            } else {
                return None;
            }
        } else {
            values.join(",")
        };
        out.push_str(name);
        out.push(':');
        out.push_str(&value);
        out.push('\n');
    }
    Some(out)
}

fn collapse_spaces(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut space = false;
    for c in v.trim().chars() {
        if c == ' ' {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

/// Assembles the canonical request.
pub fn canonical_request(
    method: &str,
    uri: &str,
    query: &str,
    headers: &str,
    signed_headers: &str,
    payload_hash: &str,
) -> String {
    format!("{method}\n{uri}\n{query}\n{headers}\n{signed_headers}\n{payload_hash}")
}

/// The string to sign for a request.
pub fn string_to_sign(amz_date: &str, scope: &Scope, canonical_request: &str) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{}\n{}",
        scope.to_scope_string(),
        sha256_hex(canonical_request.as_bytes())
    )
}

/// Hex signature of `string_to_sign` under `key`.
pub fn sign(key: &[u8; 32], string_to_sign: &str) -> String {
    hex::encode(hmac_sha256(key, string_to_sign.as_bytes()))
}

/// Compares two signatures without leaking where they differ.
pub fn signatures_equal(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    fn scope() -> Scope {
        Scope {
            date: "20150830".into(),
            region: "us-east-1".into(),
            service: "service".into(),
        }
    }

    /// Signs a request of the AWS SigV4 test suite (host + x-amz-date).
    fn suite(method: &str, path: &str, query: &str, body: &[u8]) -> String {
        let mut h = HeaderMap::new();
        h.insert("host", HeaderValue::from_static("example.amazonaws.com"));
        h.insert("x-amz-date", HeaderValue::from_static("20150830T123600Z"));
        let signed = ["host", "x-amz-date"];
        let cr = canonical_request(
            method,
            &canonical_uri(path),
            &canonical_query(query, None),
            &canonical_headers(&h, &signed, None).unwrap(),
            "host;x-amz-date",
            &sha256_hex(body),
        );
        sign(
            &signing_key(SECRET, &scope()),
            &string_to_sign("20150830T123600Z", &scope(), &cr),
        )
    }

    #[test]
    fn aws_sigv4_test_suite_vectors() {
        // get-vanilla
        assert_eq!(
            suite("GET", "/", "", b""),
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        // get-vanilla-query-order-key-case
        assert_eq!(
            suite("GET", "/", "Param2=value2&Param1=value1", b""),
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
        );
        // get-utf8
        assert_eq!(
            suite("GET", "/%E1%88%B4", "", b""),
            "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"
        );
        // post-vanilla
        assert_eq!(
            suite("POST", "/", "", b""),
            "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
        );
    }

    #[test]
    fn s3_get_object_example() {
        // "GET Object" example of the S3 SigV4 documentation.
        let mut h = HeaderMap::new();
        h.insert(
            "host",
            HeaderValue::from_static("examplebucket.s3.amazonaws.com"),
        );
        h.insert("range", HeaderValue::from_static("bytes=0-9"));
        h.insert(
            "x-amz-content-sha256",
            HeaderValue::from_static(EMPTY_SHA256),
        );
        h.insert("x-amz-date", HeaderValue::from_static("20130524T000000Z"));
        let signed = ["host", "range", "x-amz-content-sha256", "x-amz-date"];
        let cr = canonical_request(
            "GET",
            &canonical_uri("/test.txt"),
            "",
            &canonical_headers(&h, &signed, None).unwrap(),
            &signed.join(";"),
            EMPTY_SHA256,
        );
        let s = Scope {
            date: "20130524".into(),
            region: "us-east-1".into(),
            service: "s3".into(),
        };
        let sig = sign(
            &signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", &s),
            &string_to_sign("20130524T000000Z", &s, &cr),
        );
        assert_eq!(
            sig,
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn encoding_rules() {
        assert_eq!(uri_encode(b"a b+c/d~", false), "a%20b%2Bc/d~");
        assert_eq!(uri_encode(b"a/b", true), "a%2Fb");
        assert_eq!(canonical_uri("/b/a%20key%2Bx"), "/b/a%20key%2Bx");
        assert_eq!(canonical_uri("/b/a key"), "/b/a%20key");
        assert_eq!(
            canonical_query(
                "prefix=a%2Fb&list-type=2&delimiter=/&X-Amz-Signature=x",
                Some("X-Amz-Signature")
            ),
            "delimiter=%2F&list-type=2&prefix=a%2Fb"
        );
        assert_eq!(canonical_query("uploads", None), "uploads=");
        assert_eq!(collapse_spaces("  a   b  "), "a b");
        assert!(signatures_equal("abc", "abc"));
        assert!(!signatures_equal("abc", "abd"));
    }
}
