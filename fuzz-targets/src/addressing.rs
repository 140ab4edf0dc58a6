//! What a request addresses: its bucket and key (path style and
//! virtual-hosted), its query's pairs, and the names' validation.

use percent_encoding::{percent_decode_str, utf8_percent_encode, NON_ALPHANUMERIC};
use s3_wire::names::{validate_bucket_name, validate_key, MAX_KEY_BYTES};
use s3_wire::query::parse_query;
use s3_wire::target::{parse_target, virtual_host_bucket};

use crate::input::request;

/// The domain the virtual-hosted reading serves.
const DOMAIN: &str = "s3.fuzz.example";

/// Any request's target: path style, the bucket and key joined by `/` are
/// the decoded path (a path that does not decode is refused, nothing
/// else is); virtual-hosted, the bucket is what the Host names before the
/// domain and the key is the whole decoded path. A query's pairs encoded
/// again parse to themselves. A bucket name accepted meets S3's rules as
/// written independently here; a key accepted is 1 to 1,024 bytes.
pub fn request_target(data: &[u8]) {
    let Some(parts) = request(data) else { return };
    let decoded = percent_decode_str(parts.uri.path()).decode_utf8();
    let Ok(target) = parse_target(&parts, None) else {
        assert!(decoded.is_err(), "refused a path that decodes");
        return;
    };
    let decoded = decoded.expect("accepted a path that does not decode");
    let path = decoded.strip_prefix('/').unwrap_or(&decoded);
    match &target {
        (None, None) => assert!(path.is_empty() || path.starts_with('/'), "{path:?}"),
        (Some(b), None) => assert!(path == b || *path == format!("{b}/"), "{path:?}"),
        (Some(b), Some(k)) => assert_eq!(format!("{b}/{k}"), path),
        (None, Some(_)) => panic!("a key without a bucket"),
    }
    let hosted = parse_target(&parts, Some(DOMAIN)).expect("the path decodes");
    match virtual_host_bucket(&parts, Some(DOMAIN)) {
        Some(b) => {
            assert!(!b.is_empty());
            let key = (!path.is_empty()).then(|| path.to_string());
            assert_eq!(hosted, (Some(b), key));
        }
        None => assert_eq!(hosted, target),
    }
    let pairs = parse_query(parts.uri.query());
    let enc = |s: &str| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
    let again: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect();
    assert_eq!(parse_query(Some(&again.join("&"))), pairs);
    for name in [&target.0, &hosted.0].into_iter().flatten() {
        if validate_bucket_name(name).is_ok() {
            assert!(meets_bucket_rules(name), "accepted bucket name {name:?}");
        }
    }
    for key in [&target.1, &hosted.1].into_iter().flatten() {
        let ok = validate_key(key).is_ok();
        assert_eq!(ok, (1..=MAX_KEY_BYTES).contains(&key.len()), "{key:?}");
    }
}

/// S3's general-purpose bucket naming rules, the parts every name must
/// meet: 3 to 63 characters of lowercase letters, digits, dots and
/// hyphens, beginning and ending with a letter or digit, no two adjacent
/// dots, not four dot-separated runs of digits (the shape of an IPv4
/// address as the Rust SDK's endpoint rules and minio-go read it).
fn meets_bucket_rules(name: &str) -> bool {
    let b = name.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (3..=63).contains(&b.len())
        && b.iter().all(|c| alnum(c) || *c == b'.' || *c == b'-')
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && !name.contains("..")
        && !(name.split('.').count() == 4
            && name
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit())))
}
