//! Which bucket and key a request addresses: virtual-hosted style when
//! the Host is `<bucket>.<domain>`, path style otherwise; the path is
//! percent-decoded once (a key may hold any UTF-8, `/` included).

use http::request::Parts;

use crate::error::{S3Error, S3Result};

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
