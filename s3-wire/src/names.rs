//! Validation of bucket names and object keys at the edge.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html>)

use crate::error::{S3Error, S3Result};

/// Longest object key in bytes (UTF-8).
pub const MAX_KEY_BYTES: usize = 1024;
/// Bucket name reserved for Granary's own endpoints under `/granary/`.
pub const RESERVED_BUCKET: &str = "granary";

/// Checks a bucket name against S3's general-purpose bucket naming rules.
pub fn validate_bucket_name(name: &str) -> S3Result<()> {
    let bad = || S3Error::InvalidBucketName(name.to_string());
    let bytes = name.as_bytes();
    if !(3..=63).contains(&bytes.len()) {
        return Err(bad());
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'.' || *b == b'-')
    {
        return Err(bad());
    }
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !edge(bytes[0]) || !edge(bytes[bytes.len() - 1]) {
        return Err(bad());
    }
    if name.contains("..") || name.contains(".-") || name.contains("-.") {
        return Err(bad());
    }
    if ip_shaped(name) {
        return Err(bad());
    }
    const PREFIXES: [&str; 3] = ["xn--", "sthree-", "amzn-s3-demo-"];
    const SUFFIXES: [&str; 5] = ["-s3alias", "--ol-s3", "--x-s3", "--table-s3", ".mrap"];
    if PREFIXES.iter().any(|p| name.starts_with(p)) || SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return Err(bad());
    }
    if name == RESERVED_BUCKET {
        return Err(bad());
    }
    Ok(())
}

/// Whether `name` is "formatted as an IP address" (S3's rule, which gives
/// only `192.168.5.4` as an example): four dot-separated runs of digits,
/// as the Rust SDK's endpoint rules and minio-go read it — `077.0.0.3` and
/// `256.1.1.1` too, which an IPv4 parser refuses.
fn ip_shaped(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    labels.len() == 4
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks an object key: non-empty and at most 1,024 bytes.
pub fn validate_key(key: &str) -> S3Result<()> {
    if key.is_empty() {
        return Err(S3Error::InvalidArgument(
            "Object key must not be empty".into(),
            None,
        ));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(S3Error::KeyTooLong);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_rules() {
        for ok in ["abc", "my-bucket.data", "a1-b2", "0ab", &"a".repeat(63)] {
            assert!(validate_bucket_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "ab",
            "Abc",
            "a_b",
            "-ab",
            "ab-",
            "a..b",
            "a.-b",
            "192.168.5.4",
            "xn--ab",
            "ab-s3alias",
            "granary",
            &"a".repeat(64),
            "ab c",
        ] {
            assert!(validate_bucket_name(bad).is_err(), "{bad}");
        }
    }

    /// S3 refuses a name "formatted as an IP address", read as four
    /// dot-separated runs of digits (the Rust SDK's and minio-go's shape),
    /// whether or not an IPv4 parser takes them (leading zeros, labels
    /// over 255); found by the request_target fuzz target. Names ending
    /// in `.mrap` are reserved for Multi-Region Access Points.
    #[test]
    fn names_shaped_like_an_ip_address_are_refused() {
        for bad in [
            "077.0.0.3",
            "256.1.1.1",
            "999.999.999.999",
            "1.2.3.0004",
            "data.mrap",
        ] {
            assert!(validate_bucket_name(bad).is_err(), "{bad}");
        }
        for ok in ["1.2.3", "1.2.3.4.5", "1.2.3.a"] {
            assert!(validate_bucket_name(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn key_rules() {
        assert!(validate_key("../../etc/passwd").is_ok());
        assert!(validate_key(&"k".repeat(1024)).is_ok());
        assert!(matches!(
            validate_key(&"k".repeat(1025)),
            Err(S3Error::KeyTooLong)
        ));
        assert!(validate_key("").is_err());
    }
}
