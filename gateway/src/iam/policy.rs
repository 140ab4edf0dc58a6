//! The IAM policy subset people use on S3: Allow/Deny statements over
//! principals (`*`, users), `s3:` actions and bucket/object ARNs with
//! wildcards, and conditions on `aws:SourceIp`, `aws:SecureTransport`,
//! `aws:username`, `s3:prefix`, `s3:delimiter` and `s3:max-keys`.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucket-policies.html>)

use std::net::IpAddr;

use serde_json::Value;

/// Whether a statement allows or denies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Grants.
    Allow,
    /// Refuses, overriding every Allow.
    Deny,
}

/// Who a statement is about.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Principals {
    /// Everyone, anonymous included.
    Any,
    /// These users (by name or access key), or every authenticated user
    /// (`arn:aws:iam::<account>:root`).
    Listed { names: Vec<String>, all_users: bool },
    /// Identity policies have no principal: the user it is attached to.
    Attached,
}

#[derive(Clone, Debug)]
struct Condition {
    operator: String,
    key: String,
    values: Vec<String>,
}

#[derive(Clone, Debug)]
struct Statement {
    effect: Effect,
    principals: Principals,
    actions: Vec<String>,
    resources: Vec<String>,
    conditions: Vec<Condition>,
}

/// A parsed policy.
#[derive(Clone, Debug)]
pub struct Policy {
    statements: Vec<Statement>,
}

/// Who is asking.
#[derive(Clone, Copy, Debug)]
pub enum Who<'a> {
    /// An unsigned request.
    Anonymous,
    /// A user (never the root user: root is not subject to policies).
    User {
        /// User name.
        name: &'a str,
        /// Access key id used.
        access_key: &'a str,
    },
}

/// Values condition keys are compared with.
#[derive(Clone, Debug, Default)]
pub struct ConditionValues {
    /// The client's address.
    pub source_ip: Option<IpAddr>,
    /// Whether the request came over TLS.
    pub secure: bool,
    /// ListBucket's prefix parameter.
    pub prefix: Option<String>,
    /// ListBucket's delimiter parameter.
    pub delimiter: Option<String>,
    /// ListBucket's max-keys parameter.
    pub max_keys: Option<String>,
}

/// One access to decide on.
#[derive(Clone, Debug)]
pub struct Access<'a> {
    /// IAM action, e.g. `s3:GetObject`.
    pub action: &'a str,
    /// Resource ARN, e.g. `arn:aws:s3:::bucket/key`.
    pub resource: &'a str,
    /// Who asks.
    pub who: Who<'a>,
    /// Request properties for conditions.
    pub values: &'a ConditionValues,
}

/// What a policy says about an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A statement allows it (and none denies).
    Allow,
    /// A statement denies it.
    Deny,
    /// No statement applies.
    NotApplicable,
}

const OPERATORS: [&str; 9] = [
    "StringEquals",
    "StringNotEquals",
    "StringEqualsIgnoreCase",
    "StringNotEqualsIgnoreCase",
    "StringLike",
    "StringNotLike",
    "IpAddress",
    "NotIpAddress",
    "Bool",
];

fn strings(v: &Value, what: &str) -> Result<Vec<String>, String> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{what} must be strings"))
            })
            .collect(),
        Value::Bool(b) => Ok(vec![b.to_string()]),
        Value::Number(n) => Ok(vec![n.to_string()]),
        _ => Err(format!("{what} must be a string or a list of strings")),
    }
}

/// Glob match with `*` (any run) and `?` (one character).
pub fn glob(pattern: &str, value: &str, case_insensitive: bool) -> bool {
    let fold = |s: &str| {
        if case_insensitive {
            s.to_lowercase()
        } else {
            s.to_string()
        }
    };
    let (p, v): (Vec<char>, Vec<char>) = (
        fold(pattern).chars().collect(),
        fold(value).chars().collect(),
    );
    let (mut pi, mut vi, mut star, mut mark) = (0, 0, None, 0);
    while vi < v.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == v[vi]) {
            pi += 1;
            vi += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = vi;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            vi = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

fn in_cidr(ip: IpAddr, cidr: &str) -> bool {
    let (net, bits) = match cidr.split_once('/') {
        Some((n, b)) => (n, b.parse::<u32>().ok()),
        None => (cidr, None),
    };
    let Ok(net) = net.parse::<IpAddr>() else {
        return false;
    };
    let ip = match (ip, net) {
        (IpAddr::V6(v6), IpAddr::V4(_)) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        _ => ip,
    };
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let bits = bits.unwrap_or(32).min(32);
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let bits = bits.unwrap_or(128).min(128);
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

impl Condition {
    fn holds(&self, access: &Access<'_>) -> bool {
        let values = access.values;
        let actual: Option<String> = match self.key.to_ascii_lowercase().as_str() {
            "aws:sourceip" => values.source_ip.map(|ip| ip.to_string()),
            "aws:securetransport" => Some(values.secure.to_string()),
            "aws:username" => match access.who {
                Who::User { name, .. } => Some(name.to_string()),
                Who::Anonymous => None,
            },
            "s3:prefix" => values.prefix.clone(),
            "s3:delimiter" => values.delimiter.clone(),
            "s3:max-keys" => values.max_keys.clone(),
            _ => None,
        };
        let negated = matches!(
            self.operator.as_str(),
            "StringNotEquals" | "StringNotEqualsIgnoreCase" | "StringNotLike" | "NotIpAddress"
        );
        let Some(actual) = actual else { return negated };
        let any = |f: &dyn Fn(&str) -> bool| self.values.iter().any(|v| f(v));
        match self.operator.as_str() {
            "StringEquals" => any(&|v| v == actual),
            "StringNotEquals" => !any(&|v| v == actual),
            "StringEqualsIgnoreCase" => any(&|v| v.eq_ignore_ascii_case(&actual)),
            "StringNotEqualsIgnoreCase" => !any(&|v| v.eq_ignore_ascii_case(&actual)),
            "StringLike" => any(&|v| glob(v, &actual, false)),
            "StringNotLike" => !any(&|v| glob(v, &actual, false)),
            "IpAddress" | "NotIpAddress" => {
                let Ok(ip) = actual.parse::<IpAddr>() else {
                    return negated;
                };
                any(&|v| in_cidr(ip, v)) != negated
            }
            "Bool" => any(&|v| v.eq_ignore_ascii_case(&actual)),
            _ => false,
        }
    }
}

impl Statement {
    fn applies(&self, access: &Access<'_>) -> bool {
        let principal = match (&self.principals, access.who) {
            (Principals::Any | Principals::Attached, _) => true,
            (Principals::Listed { .. }, Who::Anonymous) => false,
            (Principals::Listed { names, all_users }, Who::User { name, access_key }) => {
                *all_users || names.iter().any(|n| n == name || n == access_key)
            }
        };
        principal
            && self.actions.iter().any(|a| glob(a, access.action, true))
            && self
                .resources
                .iter()
                .any(|r| glob(r, access.resource, false))
            && self.conditions.iter().all(|c| c.holds(access))
    }
}

fn principals(v: Option<&Value>, attached: bool) -> Result<Principals, String> {
    match (v, attached) {
        (None, true) => Ok(Principals::Attached),
        (Some(_), true) => Err("identity policies cannot name a Principal".into()),
        (None, false) => Err("Missing required field Principal".into()),
        (Some(Value::String(s)), false) if s == "*" => Ok(Principals::Any),
        (Some(Value::Object(m)), false) => {
            let aws = m
                .get("AWS")
                .ok_or("Invalid principal in policy: only AWS principals are supported")?;
            let ids = strings(aws, "Principal")?;
            if ids.iter().any(|i| i == "*") {
                return Ok(Principals::Any);
            }
            let mut names = Vec::new();
            let mut all_users = false;
            for id in ids {
                if let Some(rest) = id.strip_prefix("arn:aws:iam::") {
                    match rest.split_once(':') {
                        Some((_, "root")) => all_users = true,
                        Some((_, user)) if user.starts_with("user/") => {
                            names.push(user["user/".len()..].to_string())
                        }
                        _ => return Err(format!("Invalid principal in policy: {id}")),
                    }
                } else {
                    names.push(id);
                }
            }
            Ok(Principals::Listed { names, all_users })
        }
        _ => Err("Invalid principal in policy".into()),
    }
}

impl Policy {
    /// Parses a policy document. A bucket policy (`bucket` given) needs a
    /// Principal in every statement and may only name that bucket's
    /// resources; an identity policy (`bucket` = None) has no Principal.
    pub fn parse(doc: &str, bucket: Option<&str>) -> Result<Policy, String> {
        let v: Value =
            serde_json::from_str(doc).map_err(|e| format!("Policies must be valid JSON ({e})"))?;
        let obj = v.as_object().ok_or("Policies must be a JSON object")?;
        match obj.get("Version").and_then(Value::as_str) {
            None | Some("2012-10-17") | Some("2008-10-17") => {}
            Some(other) => return Err(format!("The policy version {other} is not supported")),
        }
        let stmts = match obj.get("Statement") {
            Some(Value::Array(a)) => a.clone(),
            Some(s @ Value::Object(_)) => vec![s.clone()],
            _ => return Err("Missing required field Statement".into()),
        };
        if stmts.is_empty() {
            return Err("Missing required field Statement".into());
        }
        let mut statements = Vec::new();
        for s in &stmts {
            let s = s.as_object().ok_or("Statement must be an object")?;
            for unsupported in ["NotAction", "NotResource", "NotPrincipal"] {
                if s.contains_key(unsupported) {
                    return Err(format!("{unsupported} is not supported"));
                }
            }
            let effect = match s.get("Effect").and_then(Value::as_str) {
                Some("Allow") => Effect::Allow,
                Some("Deny") => Effect::Deny,
                _ => return Err("Invalid effect: must be Allow or Deny".into()),
            };
            let actions = strings(
                s.get("Action").ok_or("Missing required field Action")?,
                "Action",
            )?;
            if let Some(a) = actions
                .iter()
                .find(|a| *a != "*" && !a.to_ascii_lowercase().starts_with("s3:"))
            {
                return Err(format!("Policy has invalid action: {a}"));
            }
            let resources = strings(
                s.get("Resource").ok_or("Missing required field Resource")?,
                "Resource",
            )?;
            for r in &resources {
                if r == "*" && bucket.is_none() {
                    continue; // an identity policy may name every resource
                }
                let rest = r
                    .strip_prefix("arn:aws:s3:::")
                    .ok_or_else(|| format!("Policy has invalid resource: {r}"))?;
                if let Some(b) = bucket {
                    let named = rest.split('/').next().unwrap_or("");
                    if !glob(named, b, false) {
                        return Err(format!("Policy has invalid resource: {r}"));
                    }
                }
            }
            let mut conditions = Vec::new();
            if let Some(c) = s.get("Condition") {
                let c = c.as_object().ok_or("Condition must be an object")?;
                for (op, block) in c {
                    if !OPERATORS.contains(&op.as_str()) {
                        return Err(format!("Invalid condition operator: {op}"));
                    }
                    let block = block
                        .as_object()
                        .ok_or("Condition block must be an object")?;
                    for (key, values) in block {
                        conditions.push(Condition {
                            operator: op.clone(),
                            key: key.clone(),
                            values: strings(values, "Condition values")?,
                        });
                    }
                }
            }
            statements.push(Statement {
                effect,
                principals: principals(s.get("Principal"), bucket.is_none())?,
                actions,
                resources,
                conditions,
            });
        }
        Ok(Policy { statements })
    }

    /// What the policy says about `access`: any applicable Deny wins.
    pub fn evaluate(&self, access: &Access<'_>) -> Decision {
        let mut decision = Decision::NotApplicable;
        for s in self.statements.iter().filter(|s| s.applies(access)) {
            match s.effect {
                Effect::Deny => return Decision::Deny,
                Effect::Allow => decision = Decision::Allow,
            }
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access<'a>(
        action: &'a str,
        resource: &'a str,
        who: Who<'a>,
        values: &'a ConditionValues,
    ) -> Access<'a> {
        Access {
            action,
            resource,
            who,
            values,
        }
    }

    const ALICE: Who<'static> = Who::User {
        name: "alice",
        access_key: "AKALICE",
    };

    #[test]
    fn allow_deny_principals_and_wildcards() {
        let p = Policy::parse(
            r#"{"Version":"2012-10-17","Statement":[
                {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/public/*"},
                {"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123456789012:user/alice"]},"Action":["s3:*"],"Resource":["arn:aws:s3:::data","arn:aws:s3:::data/*"]},
                {"Effect":"Deny","Principal":{"AWS":"*"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::data/keep/*"}
            ]}"#,
            Some("data"),
        )
        .unwrap();
        let v = ConditionValues::default();
        assert_eq!(
            p.evaluate(&access(
                "s3:GetObject",
                "arn:aws:s3:::data/public/x",
                Who::Anonymous,
                &v
            )),
            Decision::Allow
        );
        assert_eq!(
            p.evaluate(&access(
                "s3:GetObject",
                "arn:aws:s3:::data/private/x",
                Who::Anonymous,
                &v
            )),
            Decision::NotApplicable
        );
        assert_eq!(
            p.evaluate(&access("s3:PutObject", "arn:aws:s3:::data/x", ALICE, &v)),
            Decision::Allow
        );
        assert_eq!(
            p.evaluate(&access(
                "s3:DeleteObject",
                "arn:aws:s3:::data/keep/x",
                ALICE,
                &v
            )),
            Decision::Deny
        );
        let bob = Who::User {
            name: "bob",
            access_key: "AKBOB",
        };
        assert_eq!(
            p.evaluate(&access("s3:PutObject", "arn:aws:s3:::data/x", bob, &v)),
            Decision::NotApplicable
        );
    }

    #[test]
    fn conditions() {
        let p = Policy::parse(
            r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b",
                "Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","127.0.0.1/32"]},"StringLike":{"s3:prefix":["home/*"]}}}}"#,
            Some("b"),
        )
        .unwrap();
        let mut v = ConditionValues {
            source_ip: Some("127.0.0.1".parse().unwrap()),
            prefix: Some("home/alice/".into()),
            ..Default::default()
        };
        assert_eq!(
            p.evaluate(&access(
                "s3:ListBucket",
                "arn:aws:s3:::b",
                Who::Anonymous,
                &v
            )),
            Decision::Allow
        );
        v.prefix = Some("etc/".into());
        assert_eq!(
            p.evaluate(&access(
                "s3:ListBucket",
                "arn:aws:s3:::b",
                Who::Anonymous,
                &v
            )),
            Decision::NotApplicable
        );
        v.prefix = Some("home/x".into());
        v.source_ip = Some("192.168.1.1".parse().unwrap());
        assert_eq!(
            p.evaluate(&access(
                "s3:ListBucket",
                "arn:aws:s3:::b",
                Who::Anonymous,
                &v
            )),
            Decision::NotApplicable
        );
        v.source_ip = Some("::ffff:10.1.2.3".parse().unwrap());
        assert_eq!(
            p.evaluate(&access(
                "s3:ListBucket",
                "arn:aws:s3:::b",
                Who::Anonymous,
                &v
            )),
            Decision::Allow
        );
    }

    #[test]
    fn malformed_policies_are_refused() {
        for (doc, bucket) in [
            ("not json", Some("b")),
            (r#"{"Statement":[]}"#, Some("b")),
            (
                r#"{"Statement":{"Effect":"Maybe","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b"}}"#,
                Some("b"),
            ),
            (
                r#"{"Statement":{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b"}}"#,
                Some("b"),
            ),
            (
                r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"ec2:*","Resource":"arn:aws:s3:::b"}}"#,
                Some("b"),
            ),
            (
                r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::other/*"}}"#,
                Some("b"),
            ),
            (
                r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b","Condition":{"Magic":{"a":"b"}}}}"#,
                Some("b"),
            ),
            (
                r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*"}}"#,
                None,
            ),
        ] {
            assert!(Policy::parse(doc, bucket).is_err(), "{doc}");
        }
    }

    #[test]
    fn globbing() {
        assert!(glob("s3:Get*", "s3:getobject", true));
        assert!(glob("a?c", "abc", false));
        assert!(glob("*", "", false));
        assert!(!glob("a*b", "ac", false));
        assert!(glob("arn:aws:s3:::b/*/x", "arn:aws:s3:::b/y/z/x", false));
    }
}
