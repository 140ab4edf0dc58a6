//! The request headers a presigned URL carries in its query: SDKs
//! presigning a request move its `x-amz-*` headers into the URL, and S3
//! takes them as those headers once the signature is checked.

use http::request::Parts;
use http::{HeaderName, HeaderValue};

use super::{query_pairs, Signing, SESSION_TOKEN};
use crate::error::{S3Error, S3Result};

/// `x-amz-*` query parameters that belong to authentication itself rather
/// than standing for request headers.
const AUTH_PARAMS: [&str; 8] = [
    "x-amz-algorithm",
    "x-amz-credential",
    "x-amz-date",
    "x-amz-expires",
    "x-amz-signedheaders",
    "x-amz-signature",
    SESSION_TOKEN,
    "x-amz-content-sha256",
];

/// The request headers a request's other `x-amz-*` query parameters stand
/// for. SDKs presigning a request move its `x-amz-*` headers into the URL
/// (`x-amz-meta-*`, `x-amz-storage-class`, `x-amz-checksum-*`...), and S3
/// takes them as those headers; so does Granary, so each is honoured or
/// refused like the header. A SigV4 signature (presigned or in the
/// Authorization header) covers the query, and an anonymous request could
/// send the headers themselves; a SigV2 signature does not cover the
/// query, so there they are refused as unsigned. A parameter given twice,
/// or also as a header, with another value is refused, and so is a value
/// no header can carry (not UTF-8, or a control character).
pub fn query_headers(parts: &Parts, signing: Signing) -> S3Result<Vec<(HeaderName, HeaderValue)>> {
    let mut out: Vec<(HeaderName, HeaderValue)> = Vec::new();
    for (k, v) in query_pairs(parts.uri.query().unwrap_or("")) {
        let name = String::from_utf8_lossy(&k).to_ascii_lowercase();
        if !name.starts_with("x-amz-") || AUTH_PARAMS.contains(&name.as_str()) {
            continue;
        }
        if signing == Signing::V2Query {
            return Err(S3Error::HeadersNotSigned(vec![name]));
        }
        let shown = String::from_utf8_lossy(&v).into_owned();
        let bad =
            |why: &str| S3Error::InvalidArgument(why.into(), Some((name.clone(), shown.clone())));
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| bad("The query parameter is not a valid header name"))?;
        // Taken as UTF-8, as a header's value is; bytes that are not
        // UTF-8 are refused, not replaced.
        let value = std::str::from_utf8(&v)
            .ok()
            .and_then(|v| HeaderValue::from_str(v).ok())
            .ok_or_else(|| bad("The query parameter's value is not a valid header value"))?;
        let other = out
            .iter()
            .find(|(n, _)| *n == header)
            .map(|(_, v)| v)
            .or_else(|| parts.headers.get(&header));
        match other {
            Some(o) if *o != value => {
                return Err(S3Error::InvalidRequest(format!(
                    "{name} is given twice, as a header or a query parameter, with different values"
                )))
            }
            Some(_) => {}
            None => out.push((header, value)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn x_amz_parameters_other_than_the_signatures_own_become_headers() {
        let p = parts(
            "http://h/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab&X-Amz-Meta-Origin=q&x-amz-storage-class=STANDARD&versionId=1&X-Amz-Content-Sha256=UNSIGNED-PAYLOAD",
            &[],
        );
        let got = query_headers(&p, Signing::V4Query).unwrap();
        let got: Vec<(&str, &str)> = got
            .iter()
            .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                ("x-amz-meta-origin", "q"),
                ("x-amz-storage-class", "STANDARD")
            ]
        );
    }

    #[test]
    fn the_same_value_twice_is_taken_once_and_another_is_refused() {
        let same = parts("http://h/k?x-amz-meta-a=1&x-amz-meta-a=1", &[]);
        assert_eq!(query_headers(&same, Signing::V4Query).unwrap().len(), 1);
        let as_header = parts("http://h/k?x-amz-meta-a=1", &[("x-amz-meta-a", "1")]);
        assert!(query_headers(&as_header, Signing::V4Query)
            .unwrap()
            .is_empty());
        for p in [
            parts("http://h/k?x-amz-meta-a=1&x-amz-meta-a=2", &[]),
            parts("http://h/k?x-amz-meta-a=1", &[("x-amz-meta-a", "2")]),
        ] {
            let e = query_headers(&p, Signing::V4Query).unwrap_err();
            assert!(matches!(e, S3Error::InvalidRequest(_)), "{e:?}");
        }
    }

    #[test]
    fn a_sigv2_url_does_not_sign_its_query_so_they_are_refused() {
        let p = parts(
            "http://h/k?AWSAccessKeyId=a&Signature=s&Expires=1&x-amz-meta-a=1",
            &[],
        );
        let e = query_headers(&p, Signing::V2Query).unwrap_err();
        assert!(
            matches!(&e, S3Error::HeadersNotSigned(n) if n == &["x-amz-meta-a"]),
            "{e:?}"
        );
        let none = parts("http://h/k?AWSAccessKeyId=a&Signature=s&Expires=1", &[]);
        assert!(query_headers(&none, Signing::V2Query).unwrap().is_empty());
    }

    #[test]
    fn a_value_no_header_can_carry_is_an_invalid_argument() {
        for q in ["x-amz-meta-a=line%0Abreak", "x-amz-meta-a=caf%E9"] {
            let p = parts(&format!("http://h/k?{q}"), &[]);
            let e = query_headers(&p, Signing::V4Query).unwrap_err();
            assert!(matches!(e, S3Error::InvalidArgument(..)), "{q}: {e:?}");
        }
    }
}
