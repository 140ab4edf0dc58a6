//! The policy document of a POST Object form: decoded, its expiration
//! and `content-length-range` checked, then every condition checked
//! against the form's fields.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html>)

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::error::{S3Error, S3Result};

/// Fields every policy may leave unmentioned.
const EXEMPT: [&str; 6] = [
    "x-amz-signature",
    "file",
    "policy",
    "x-amz-security-token",
    "awsaccesskeyid",
    "signature",
];

fn denied(why: &str) -> S3Error {
    S3Error::AccessDenied(format!("Invalid according to Policy: {why}"))
}

/// The signed policy document's conditions, checked against the form.
#[derive(Clone, Debug)]
pub struct PostPolicy {
    conditions: Vec<Value>,
    /// The `content-length-range` condition's bounds, if it has one.
    pub length_range: Option<(u64, u64)>,
}

impl PostPolicy {
    /// Decodes and checks a policy document (base64 of JSON) at time
    /// `now`: its expiration, its conditions' shape and its length range.
    pub fn parse(b64: &str, now: OffsetDateTime) -> S3Result<PostPolicy> {
        let raw = B64.decode(b64.trim()).map_err(|_| {
            S3Error::InvalidArgument("Invalid Policy: Invalid 'Base64' encoding".into(), None)
        })?;
        let doc: Value = serde_json::from_slice(&raw)
            .map_err(|_| S3Error::InvalidArgument("Invalid Policy: Invalid JSON.".into(), None))?;
        let expiration = doc
            .get("expiration")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                S3Error::InvalidArgument("Invalid Policy: Policy missing expiration.".into(), None)
            })?;
        // ISO 8601 in UTC as S3 writes it: 2026-06-01T00:00:00.000Z.
        let bad_expiration =
            || S3Error::InvalidArgument("Invalid Policy: Invalid 'expiration' value.".into(), None);
        let shaped = expiration.len() >= 20
            && expiration.as_bytes()[10] == b'T'
            && expiration.ends_with('Z');
        if !shaped {
            return Err(bad_expiration());
        }
        let expires = OffsetDateTime::parse(expiration, &Rfc3339).map_err(|_| bad_expiration())?;
        if now > expires {
            return Err(denied("Policy expired."));
        }
        let conditions = doc
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .ok_or_else(|| {
                S3Error::InvalidArgument("Invalid Policy: Policy missing conditions.".into(), None)
            })?;
        let mut length_range = None;
        for c in &conditions {
            if let Some(a) = c.as_array() {
                if a.first().and_then(Value::as_str) == Some("content-length-range") {
                    // Both bounds, as numbers (or numeric strings), in order.
                    let n = |i: usize| match a.get(i) {
                        Some(Value::Number(n)) => n.as_u64(),
                        Some(Value::String(s)) => s.trim().parse().ok(),
                        _ => None,
                    };
                    match (a.len(), n(1), n(2)) {
                        (3, Some(lo), Some(hi)) if lo <= hi => length_range = Some((lo, hi)),
                        _ => {
                            return Err(S3Error::InvalidArgument(
                                "Invalid Policy: Invalid content-length-range condition: it takes a minimum and a maximum size.".into(),
                                None,
                            ))
                        }
                    }
                }
            }
        }
        Ok(PostPolicy {
            conditions,
            length_range,
        })
    }

    /// Checks every condition against the fields (lower-case names), and
    /// that no field goes unmentioned.
    pub fn check(&self, fields: &[(String, String)], bucket: &str) -> S3Result<()> {
        let get = |name: &str| -> String {
            if name == "bucket" {
                return bucket.to_string();
            }
            fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let mut covered: Vec<String> = vec!["bucket".into()];
        for c in &self.conditions {
            let failed = || denied(&format!("Policy Condition failed: {c}"));
            match c {
                Value::Object(m) => {
                    for (k, v) in m {
                        let name = k.to_ascii_lowercase();
                        if get(&name) != v.as_str().unwrap_or_default() {
                            return Err(failed());
                        }
                        covered.push(name);
                    }
                }
                Value::Array(a) => {
                    let op = a
                        .first()
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_ascii_lowercase();
                    if op == "content-length-range" {
                        continue;
                    }
                    let name = a
                        .get(1)
                        .and_then(Value::as_str)
                        .and_then(|f| f.strip_prefix('$'))
                        .ok_or_else(failed)?
                        .to_ascii_lowercase();
                    let want = a.get(2).and_then(Value::as_str).unwrap_or_default();
                    let have = get(&name);
                    let ok = match op.as_str() {
                        "eq" => have == want,
                        "starts-with" => have.starts_with(want),
                        _ => false,
                    };
                    if !ok {
                        return Err(failed());
                    }
                    covered.push(name);
                }
                _ => return Err(failed()),
            }
        }
        for (k, _) in fields {
            if !EXEMPT.contains(&k.as_str()) && !k.starts_with("x-ignore-") && !covered.contains(k)
            {
                return Err(denied(&format!("Extra input fields: {k}")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(conditions: &str, expires: &str) -> String {
        B64.encode(format!(
            r#"{{"expiration":"{expires}","conditions":{conditions}}}"#
        ))
    }

    #[test]
    fn conditions_are_enforced() {
        let now = OffsetDateTime::parse("2026-01-01T00:00:00Z", &Rfc3339).unwrap();
        let p = PostPolicy::parse(
            &policy(r#"[{"bucket":"uploads"},["starts-with","$key","user/"],{"success_action_status":"201"},["content-length-range",1,1000],["starts-with","$Content-Type","image/"]]"#, "2026-06-01T00:00:00.000Z"),
            now,
        )
        .unwrap();
        assert_eq!(p.length_range, Some((1, 1000)));
        let mut fields = vec![
            ("key".to_string(), "user/a.png".to_string()),
            ("success_action_status".to_string(), "201".to_string()),
            ("content-type".to_string(), "image/png".to_string()),
        ];
        p.check(&fields, "uploads").unwrap();
        assert!(matches!(
            p.check(&fields, "other"),
            Err(S3Error::AccessDenied(_))
        ));
        fields[0].1 = "admin/a.png".into();
        assert!(matches!(
            p.check(&fields, "uploads"),
            Err(S3Error::AccessDenied(_))
        ));
        fields[0].1 = "user/a.png".into();
        fields.push(("x-amz-meta-extra".into(), "1".into()));
        let e = p.check(&fields, "uploads").unwrap_err();
        assert!(e.message().contains("Extra input fields"), "{e}");
        let late = OffsetDateTime::parse("2026-07-01T00:00:00Z", &Rfc3339).unwrap();
        let e = PostPolicy::parse(&policy("[]", "2026-06-01T00:00:00Z"), late)
            .err()
            .unwrap();
        assert!(e.message().contains("Policy expired"), "{e}");
        assert!(PostPolicy::parse("!!!", now).is_err());
    }

    #[test]
    fn malformed_expirations_and_length_ranges_are_refused() {
        let now = OffsetDateTime::parse("2026-01-01T00:00:00Z", &Rfc3339).unwrap();
        let refused = |conditions: &str, expires: &str| match PostPolicy::parse(
            &policy(conditions, expires),
            now,
        ) {
            Err(e @ S3Error::InvalidArgument(..)) => e.message(),
            other => panic!(
                "{conditions} {expires}: {:?}",
                other.map(|p| p.length_range)
            ),
        };
        for expires in [
            "2026-06-01",
            "2026-06-01T00:00:00+02:00",
            "June 1st",
            "2026-06-01 00:00:00Z",
        ] {
            assert!(refused("[]", expires).contains("expiration"), "{expires}");
        }
        for range in [
            r#"[["content-length-range",1]]"#,
            r#"[["content-length-range"]]"#,
            r#"[["content-length-range",10,1]]"#,
            r#"[["content-length-range","a",5]]"#,
            r#"[["content-length-range",1,5,9]]"#,
        ] {
            assert!(
                refused(range, "2026-06-01T00:00:00.000Z").contains("content-length-range"),
                "{range}"
            );
        }
        let p = PostPolicy::parse(
            &policy(
                r#"[["content-length-range","1","5"]]"#,
                "2026-06-01T00:00:00Z",
            ),
            now,
        )
        .unwrap();
        assert_eq!(p.length_range, Some((1, 5)));
    }
}
