//! CORS: the bucket's CORSConfiguration, preflight (OPTIONS) answers, and
//! the Access-Control-* headers of requests that carry an Origin.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html>)

use http::{HeaderMap, HeaderValue, Method};
use serde::{Deserialize, Serialize};

use crate::error::{S3Error, S3Result};
use crate::xml::{from_xml, to_xml, NS};

/// Most rules one configuration may hold.
const MAX_RULES: usize = 100;
const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "HEAD"];

/// A bucket's CORS configuration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct CorsConfiguration {
    /// Namespace.
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    pub xmlns: &'static str,
    /// Rules, in order; the first that matches applies.
    #[serde(rename = "CORSRule", default)]
    pub rules: Vec<CorsRule>,
}

/// One CORS rule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct CorsRule {
    /// Optional id.
    #[serde(rename = "ID", skip_serializing_if = "Option::is_none", default)]
    pub id: Option<String>,
    /// Origins (one `*` wildcard each at most).
    #[serde(rename = "AllowedOrigin", default)]
    pub allowed_origins: Vec<String>,
    /// Methods: GET, PUT, POST, DELETE, HEAD.
    #[serde(rename = "AllowedMethod", default)]
    pub allowed_methods: Vec<String>,
    /// Request headers a preflight may ask for (wildcards allowed).
    #[serde(rename = "AllowedHeader", default)]
    pub allowed_headers: Vec<String>,
    /// Response headers the browser may read.
    #[serde(rename = "ExposeHeader", default)]
    pub expose_headers: Vec<String>,
    /// How long a preflight answer may be cached.
    #[serde(
        rename = "MaxAgeSeconds",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub max_age_seconds: Option<u64>,
}

/// Parses and validates a CORSConfiguration document.
pub fn parse(doc: &[u8]) -> S3Result<CorsConfiguration> {
    let cfg: CorsConfiguration = from_xml(doc)?;
    if cfg.rules.is_empty() || cfg.rules.len() > MAX_RULES {
        return Err(S3Error::MalformedXml(format!(
            "The XML you provided was not well-formed or did not validate against our published schema (1 to {MAX_RULES} CORSRule elements)"
        )));
    }
    for r in &cfg.rules {
        if r.allowed_origins.is_empty() || r.allowed_methods.is_empty() {
            return Err(S3Error::MalformedXml(
                "The XML you provided was not well-formed or did not validate against our published schema (each CORSRule needs AllowedOrigin and AllowedMethod)".into(),
            ));
        }
        if let Some(m) = r
            .allowed_methods
            .iter()
            .find(|m| !METHODS.contains(&m.as_str()))
        {
            return Err(S3Error::InvalidRequest(format!(
                "Found unsupported HTTP method in CORS config. Unsupported method is {m}"
            )));
        }
        if let Some(o) = r
            .allowed_origins
            .iter()
            .find(|o| o.matches('*').count() > 1)
        {
            return Err(S3Error::InvalidRequest(format!(
                "AllowedOrigin \"{o}\" can not have more than one wildcard."
            )));
        }
    }
    Ok(cfg)
}

/// The document as stored and returned.
pub fn xml(cfg: &CorsConfiguration) -> String {
    let mut c = cfg.clone();
    c.xmlns = NS;
    to_xml("CORSConfiguration", &c)
}

/// Matches `value` against a pattern with at most one `*`.
fn wildcard(pattern: &str, value: &str, case_insensitive: bool) -> bool {
    let (p, v) = if case_insensitive {
        (pattern.to_ascii_lowercase(), value.to_ascii_lowercase())
    } else {
        (pattern.to_string(), value.to_string())
    };
    match p.split_once('*') {
        None => p == v,
        Some((pre, post)) => {
            v.len() >= pre.len() + post.len() && v.starts_with(pre) && v.ends_with(post)
        }
    }
}

impl CorsRule {
    fn allows(&self, origin: &str, method: &str, headers: &[String]) -> bool {
        self.allowed_origins
            .iter()
            .any(|o| wildcard(o, origin, false))
            && self.allowed_methods.iter().any(|m| m == method)
            && headers
                .iter()
                .all(|h| self.allowed_headers.iter().any(|a| wildcard(a, h, true)))
    }
}

impl CorsConfiguration {
    /// The first rule allowing `origin` to use `method` with `headers`.
    pub fn matching(&self, origin: &str, method: &str, headers: &[String]) -> Option<&CorsRule> {
        self.rules
            .iter()
            .find(|r| r.allows(origin, method, headers))
    }
}

fn set(h: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        h.insert(name, v);
    }
}

/// Adds the response headers of a rule that allowed `origin`.
fn allow_headers(h: &mut HeaderMap, rule: &CorsRule, origin: &str) {
    let any = rule.allowed_origins.iter().any(|o| o == "*");
    set(
        h,
        "access-control-allow-origin",
        if any { "*" } else { origin },
    );
    if !any {
        set(h, "access-control-allow-credentials", "true");
    }
    set(
        h,
        "access-control-allow-methods",
        &rule.allowed_methods.join(", "),
    );
    if !rule.expose_headers.is_empty() {
        set(
            h,
            "access-control-expose-headers",
            &rule.expose_headers.join(", "),
        );
    }
    if let Some(age) = rule.max_age_seconds {
        set(h, "access-control-max-age", &age.to_string());
    }
    h.append(
        http::header::VARY,
        HeaderValue::from_static(
            "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
        ),
    );
}

/// Answers a preflight request: the headers to send with 200, or S3's
/// 403 AccessForbidden / 400 BadRequest.
pub fn preflight(cfg: Option<&CorsConfiguration>, req: &HeaderMap) -> S3Result<HeaderMap> {
    let text = |n: &str| req.get(n).and_then(|v| v.to_str().ok());
    let (Some(origin), Some(method)) = (text("origin"), text("access-control-request-method"))
    else {
        return Err(S3Error::BadRequest(
            "Insufficient information. Origin request header needed.".into(),
        ));
    };
    let Some(cfg) = cfg else {
        return Err(S3Error::AccessForbidden(
            "CORSResponse: CORS is not enabled for this bucket.".into(),
        ));
    };
    let headers: Vec<String> = text("access-control-request-headers")
        .unwrap_or("")
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect();
    let rule = cfg.matching(origin, method, &headers).ok_or_else(|| {
        S3Error::AccessForbidden("CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.".into())
    })?;
    let mut out = HeaderMap::new();
    allow_headers(&mut out, rule, origin);
    if !headers.is_empty() {
        set(
            &mut out,
            "access-control-allow-headers",
            &headers.join(", "),
        );
    }
    Ok(out)
}

/// Adds CORS headers to the response of an actual (non-preflight) request
/// that carried an Origin, when a rule allows it.
pub fn decorate(cfg: &CorsConfiguration, method: &Method, req: &HeaderMap, resp: &mut HeaderMap) {
    let Some(origin) = req.get("origin").and_then(|v| v.to_str().ok()) else {
        return;
    };
    if let Some(rule) = cfg.matching(origin, method.as_str(), &[]) {
        allow_headers(resp, rule, origin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &[u8] = br#"<CORSConfiguration>
        <CORSRule><AllowedOrigin>https://*.example.com</AllowedOrigin><AllowedMethod>PUT</AllowedMethod>
          <AllowedMethod>GET</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader><AllowedHeader>content-type</AllowedHeader>
          <ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>600</MaxAgeSeconds></CORSRule>
        <CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>
      </CORSConfiguration>"#;

    fn h(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    #[test]
    fn preflights() {
        let cfg = parse(DOC).unwrap();
        let ok = preflight(
            Some(&cfg),
            &h(&[
                ("origin", "https://app.example.com"),
                ("access-control-request-method", "PUT"),
                ("access-control-request-headers", "Content-Type, X-Amz-Date"),
            ]),
        )
        .unwrap();
        assert_eq!(ok["access-control-allow-origin"], "https://app.example.com");
        assert_eq!(ok["access-control-max-age"], "600");
        assert!(ok["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("PUT"));
        let any = preflight(
            Some(&cfg),
            &h(&[
                ("origin", "https://evil.test"),
                ("access-control-request-method", "GET"),
            ]),
        )
        .unwrap();
        assert_eq!(any["access-control-allow-origin"], "*");
        for bad in [
            h(&[
                ("origin", "https://evil.test"),
                ("access-control-request-method", "PUT"),
            ]),
            h(&[
                ("origin", "https://app.example.com"),
                ("access-control-request-method", "PUT"),
                ("access-control-request-headers", "authorization-x"),
            ]),
        ] {
            assert!(matches!(
                preflight(Some(&cfg), &bad),
                Err(S3Error::AccessForbidden(_))
            ));
        }
        assert!(matches!(
            preflight(
                None,
                &h(&[("origin", "a"), ("access-control-request-method", "GET")])
            ),
            Err(S3Error::AccessForbidden(_))
        ));
        assert!(matches!(
            preflight(Some(&cfg), &h(&[("origin", "a")])),
            Err(S3Error::BadRequest(_))
        ));
        assert_eq!(parse(xml(&cfg).as_bytes()).unwrap().rules, cfg.rules);
    }

    #[test]
    fn invalid_documents() {
        assert!(parse(b"<CORSConfiguration></CORSConfiguration>").is_err());
        assert!(matches!(
            parse(b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>"),
            Err(S3Error::InvalidRequest(_))
        ));
        assert!(parse(b"<CORSConfiguration><CORSRule><AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>").is_err());
    }
}
