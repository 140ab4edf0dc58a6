//! The IAM policy subset people use on S3: Allow/Deny statements over
//! principals (`*`, users), `s3:` actions and bucket/object ARNs with
//! wildcards, and conditions (String, Numeric, Date, Bool, IpAddress and
//! Null operators, `...IfExists`, `ForAnyValue:` / `ForAllValues:`) on the
//! keys of [`Key`]. A condition on any other key is refused when a policy
//! is put (MalformedPolicy); in a policy stored before a key was known, it
//! matches in Deny statements and never in Allow ones, so it fails closed.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucket-policies.html>,
//! <https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html>)

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

/// A condition key Granary knows.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    SourceIp,
    SecureTransport,
    Username,
    UserId,
    PrincipalType,
    CurrentTime,
    EpochTime,
    Referer,
    UserAgent,
    Prefix,
    Delimiter,
    MaxKeys,
    TlsVersion,
    SignatureVersion,
    AuthType,
    ContentSha256,
    ExistingObjectTag(String),
    RequestObjectTag(String),
    RequestObjectTagKeys,
    VersionId,
    CopySource,
    MetadataDirective,
    StorageClass,
    /// The If-Match header (conditional writes and deletes).
    IfMatch,
    /// Stored before this key was known (only [`Policy::load`] keeps one).
    Unknown(String),
}

impl Key {
    /// Condition keys are case-insensitive; a tag key after the `/` is not.
    fn parse(name: &str) -> Key {
        const EXISTING_TAG: &str = "s3:existingobjecttag/";
        const REQUEST_TAG: &str = "s3:requestobjecttag/";
        let lower = name.to_ascii_lowercase();
        // The tag key as written: the prefix is ASCII, so its length is the
        // same in `name`.
        let tag = |prefix: &str| name[prefix.len()..].to_string();
        match lower.as_str() {
            "aws:sourceip" => Key::SourceIp,
            "aws:securetransport" => Key::SecureTransport,
            "aws:username" => Key::Username,
            "aws:userid" => Key::UserId,
            "aws:principaltype" => Key::PrincipalType,
            "aws:currenttime" => Key::CurrentTime,
            "aws:epochtime" => Key::EpochTime,
            "aws:referer" => Key::Referer,
            "aws:useragent" => Key::UserAgent,
            "s3:prefix" => Key::Prefix,
            "s3:delimiter" => Key::Delimiter,
            "s3:max-keys" => Key::MaxKeys,
            "s3:tlsversion" => Key::TlsVersion,
            "s3:signatureversion" => Key::SignatureVersion,
            "s3:authtype" => Key::AuthType,
            "s3:x-amz-content-sha256" => Key::ContentSha256,
            "s3:requestobjecttagkeys" => Key::RequestObjectTagKeys,
            "s3:versionid" => Key::VersionId,
            "s3:x-amz-copy-source" => Key::CopySource,
            "s3:x-amz-metadata-directive" => Key::MetadataDirective,
            "s3:x-amz-storage-class" => Key::StorageClass,
            "s3:if-match" => Key::IfMatch,
            l if l.len() > EXISTING_TAG.len() && l.starts_with(EXISTING_TAG) => {
                Key::ExistingObjectTag(tag(EXISTING_TAG))
            }
            l if l.len() > REQUEST_TAG.len() && l.starts_with(REQUEST_TAG) => {
                Key::RequestObjectTag(tag(REQUEST_TAG))
            }
            _ => Key::Unknown(name.to_string()),
        }
    }

    /// The request's values of this key; `None` when it has none.
    fn values(&self, access: &Access<'_>) -> Option<Vec<String>> {
        let v = access.values;
        let one = |s: Option<&str>| s.map(|s| vec![s.to_string()]);
        let tag = |tags: &Option<Vec<(String, String)>>, k: &str| {
            one(tags
                .as_ref()?
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str()))
        };
        match self {
            Key::SourceIp => v.source_ip.map(|ip| vec![ip.to_string()]),
            Key::SecureTransport => Some(vec![v.secure.to_string()]),
            Key::Username => match access.who {
                Who::User { name, .. } => one(Some(name)),
                Who::Anonymous => None,
            },
            Key::UserId => match access.who {
                Who::User { access_key, .. } => one(Some(access_key)),
                Who::Anonymous => one(Some("anonymous")),
            },
            Key::PrincipalType => one(Some(match access.who {
                Who::User { .. } => "User",
                Who::Anonymous => "Anonymous",
            })),
            Key::CurrentTime => v.now.map(|t| {
                vec![t
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default()]
            }),
            Key::EpochTime => v.now.map(|t| vec![t.unix_timestamp().to_string()]),
            Key::Referer => one(v.referer.as_deref()),
            Key::UserAgent => one(v.user_agent.as_deref()),
            Key::Prefix => one(v.prefix.as_deref()),
            Key::Delimiter => one(v.delimiter.as_deref()),
            Key::MaxKeys => one(v.max_keys.as_deref()),
            Key::TlsVersion => one(v.tls_version),
            Key::SignatureVersion => one(v.signature_version),
            Key::AuthType => one(v.auth_type),
            Key::ContentSha256 => one(v.content_sha256.as_deref()),
            Key::ExistingObjectTag(k) => tag(&v.existing_tags, k),
            Key::RequestObjectTag(k) => tag(&v.request_tags, k),
            Key::RequestObjectTagKeys => v
                .request_tags
                .as_ref()
                .map(|t| t.iter().map(|(k, _)| k.clone()).collect()),
            Key::VersionId => one(v.version_id.as_deref()),
            Key::CopySource => one(v.copy_source.as_deref()),
            Key::MetadataDirective => one(v.metadata_directive.as_deref()),
            Key::StorageClass => one(v.storage_class.as_deref()),
            Key::IfMatch => one(v.if_match.as_deref()),
            Key::Unknown(_) => None,
        }
    }
}

/// How a condition treats several request values (`ForAnyValue:` and
/// `ForAllValues:`), or a single one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SetOp {
    Single,
    Any,
    All,
}

#[derive(Clone, Debug)]
struct Condition {
    set: SetOp,
    /// The operator without its set prefix and `IfExists` suffix.
    operator: String,
    if_exists: bool,
    key: Key,
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
    /// The request's time (`aws:CurrentTime`, `aws:EpochTime`).
    pub now: Option<time::OffsetDateTime>,
    /// The Referer header.
    pub referer: Option<String>,
    /// The User-Agent header.
    pub user_agent: Option<String>,
    /// TLS protocol version, e.g. "1.3"; `None` on plain HTTP.
    pub tls_version: Option<&'static str>,
    /// "AWS4-HMAC-SHA256" or "AWS" (SigV2); `None` when unsigned.
    pub signature_version: Option<&'static str>,
    /// "REST-HEADER", "REST-QUERY-STRING" or "POST"; `None` when unsigned.
    pub auth_type: Option<&'static str>,
    /// The x-amz-content-sha256 header.
    pub content_sha256: Option<String>,
    /// Tags of the object the request names, if it exists and a policy
    /// asks (`s3:ExistingObjectTag/<key>`).
    pub existing_tags: Option<Vec<(String, String)>>,
    /// Tags the request sets (`x-amz-tagging`).
    pub request_tags: Option<Vec<(String, String)>>,
    /// The versionId parameter.
    pub version_id: Option<String>,
    /// The x-amz-copy-source header.
    pub copy_source: Option<String>,
    /// The x-amz-metadata-directive header.
    pub metadata_directive: Option<String>,
    /// The x-amz-storage-class header.
    pub storage_class: Option<String>,
    /// The If-Match header (or a DeleteObjects entry's ETag).
    pub if_match: Option<String>,
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

const OPERATORS: [&str; 22] = [
    "StringEquals",
    "StringNotEquals",
    "StringEqualsIgnoreCase",
    "StringNotEqualsIgnoreCase",
    "StringLike",
    "StringNotLike",
    "NumericEquals",
    "NumericNotEquals",
    "NumericLessThan",
    "NumericLessThanEquals",
    "NumericGreaterThan",
    "NumericGreaterThanEquals",
    "DateEquals",
    "DateNotEquals",
    "DateLessThan",
    "DateLessThanEquals",
    "DateGreaterThan",
    "DateGreaterThanEquals",
    "IpAddress",
    "NotIpAddress",
    "Bool",
    "Null",
];

/// Splits `ForAnyValue:StringLikeIfExists` into its parts; `None` for an
/// operator Granary does not know.
fn parse_operator(op: &str) -> Option<(SetOp, String, bool)> {
    let (set, rest) = if let Some(r) = op.strip_prefix("ForAnyValue:") {
        (SetOp::Any, r)
    } else if let Some(r) = op.strip_prefix("ForAllValues:") {
        (SetOp::All, r)
    } else {
        (SetOp::Single, op)
    };
    let (base, if_exists) = match rest.strip_suffix("IfExists") {
        Some(b) if b != "Null" => (b, true),
        _ => (rest, false),
    };
    OPERATORS
        .contains(&base)
        .then(|| (set, base.to_string(), if_exists))
}

/// A number or date of a Numeric or Date condition, as seconds.
fn number(v: &str, date: bool) -> Option<f64> {
    if let Ok(n) = v.trim().parse::<f64>() {
        return Some(n);
    }
    if date {
        use time::format_description::well_known::Rfc3339;
        let t = time::OffsetDateTime::parse(v.trim(), &Rfc3339).ok()?;
        return Some(t.unix_timestamp_nanos() as f64 / 1e9);
    }
    None
}

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
    fn negated(&self) -> bool {
        matches!(
            self.operator.as_str(),
            "StringNotEquals"
                | "StringNotEqualsIgnoreCase"
                | "StringNotLike"
                | "NumericNotEquals"
                | "DateNotEquals"
                | "NotIpAddress"
        )
    }

    /// Whether one request value matches the policy's values.
    fn matches(&self, actual: &str) -> bool {
        let any = |f: &dyn Fn(&str) -> bool| self.values.iter().any(|v| f(v));
        let compare = |date: bool, f: &dyn Fn(f64, f64) -> bool| {
            let Some(a) = number(actual, date) else {
                return false;
            };
            any(&|v| number(v, date).is_some_and(|v| f(a, v)))
        };
        match self.operator.as_str() {
            "StringEquals" => any(&|v| v == actual),
            "StringNotEquals" => !any(&|v| v == actual),
            "StringEqualsIgnoreCase" => any(&|v| v.eq_ignore_ascii_case(actual)),
            "StringNotEqualsIgnoreCase" => !any(&|v| v.eq_ignore_ascii_case(actual)),
            "StringLike" => any(&|v| glob(v, actual, false)),
            "StringNotLike" => !any(&|v| glob(v, actual, false)),
            "NumericEquals" => compare(false, &|a, v| a == v),
            "NumericNotEquals" => !compare(false, &|a, v| a == v),
            "NumericLessThan" => compare(false, &|a, v| a < v),
            "NumericLessThanEquals" => compare(false, &|a, v| a <= v),
            "NumericGreaterThan" => compare(false, &|a, v| a > v),
            "NumericGreaterThanEquals" => compare(false, &|a, v| a >= v),
            "DateEquals" => compare(true, &|a, v| a == v),
            "DateNotEquals" => !compare(true, &|a, v| a == v),
            "DateLessThan" => compare(true, &|a, v| a < v),
            "DateLessThanEquals" => compare(true, &|a, v| a <= v),
            "DateGreaterThan" => compare(true, &|a, v| a > v),
            "DateGreaterThanEquals" => compare(true, &|a, v| a >= v),
            "IpAddress" | "NotIpAddress" => {
                let Ok(ip) = actual.parse::<IpAddr>() else {
                    return self.negated();
                };
                any(&|v| in_cidr(ip, v)) != self.negated()
            }
            "Bool" => any(&|v| v.eq_ignore_ascii_case(actual)),
            _ => false,
        }
    }

    fn holds(&self, access: &Access<'_>, effect: Effect) -> bool {
        if let Key::Unknown(_) = self.key {
            // A key Granary cannot evaluate: fail closed.
            return effect == Effect::Deny;
        }
        let actual = self.key.values(access);
        if self.operator == "Null" {
            let absent = actual.as_ref().is_none_or(|a| a.is_empty());
            return self
                .values
                .iter()
                .any(|v| v.eq_ignore_ascii_case(&absent.to_string()));
        }
        let actual = match actual {
            Some(a) if !a.is_empty() => a,
            _ => {
                return self.if_exists
                    || self.set == SetOp::All
                    || (self.set == SetOp::Single && self.negated())
            }
        };
        match self.set {
            SetOp::Single => self.matches(&actual[0]),
            SetOp::Any => actual.iter().any(|a| self.matches(a)),
            SetOp::All => actual.iter().all(|a| self.matches(a)),
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
            && self.conditions.iter().all(|c| c.holds(access, self.effect))
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
    /// Parses a policy document being put. A bucket policy (`bucket`
    /// given) needs a Principal in every statement and may only name that
    /// bucket's resources; an identity policy (`bucket` = None) has no
    /// Principal. A condition key Granary does not know is refused.
    pub fn parse(doc: &str, bucket: Option<&str>) -> Result<Policy, String> {
        let p = Policy::load(doc, bucket)?;
        match p.unknown_keys().first() {
            Some(k) => Err(format!("Policy has an invalid condition key: {k}")),
            None => Ok(p),
        }
    }

    /// Condition keys of the policy Granary does not know (only a policy
    /// stored before they were refused has any).
    pub fn unknown_keys(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.statements.iter().flat_map(|s| &s.conditions) {
            if let Key::Unknown(k) = &c.key {
                if !out.contains(k) {
                    out.push(k.clone());
                }
            }
        }
        out
    }

    /// Whether a condition needs the tags of the object the request names.
    pub fn wants_existing_tags(&self) -> bool {
        self.statements
            .iter()
            .flat_map(|s| &s.conditions)
            .any(|c| matches!(c.key, Key::ExistingObjectTag(_)))
    }

    /// Parses a stored policy document as [`Policy::parse`] does, except
    /// that a condition key Granary does not know is kept: it matches in
    /// Deny statements and never in Allow ones.
    pub fn load(doc: &str, bucket: Option<&str>) -> Result<Policy, String> {
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
                    let Some((set, operator, if_exists)) = parse_operator(op) else {
                        return Err(format!("Invalid condition operator: {op}"));
                    };
                    let block = block
                        .as_object()
                        .ok_or("Condition block must be an object")?;
                    for (key, values) in block {
                        conditions.push(Condition {
                            set,
                            operator: operator.clone(),
                            if_exists,
                            key: Key::parse(key),
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
    fn request_keys_numeric_date_null_and_set_operators() {
        let p = Policy::parse(
            r#"{"Statement":[
                {"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/*"},
                {"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/private/*",
                 "Condition":{"StringEquals":{"aws:PrincipalType":"Anonymous"}}},
                {"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/*",
                 "Condition":{"NumericLessThan":{"s3:TlsVersion":"1.2"}}},
                {"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/old/*",
                 "Condition":{"DateGreaterThan":{"aws:CurrentTime":"2020-01-01T00:00:00Z"}}},
                {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*",
                 "Condition":{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["secret"]}}},
                {"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*",
                 "Condition":{"StringEquals":{"s3:ExistingObjectTag/Class":"restricted"}}},
                {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/sha/*",
                 "Condition":{"Null":{"s3:x-amz-content-sha256":"true"}}},
                {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/std/*",
                 "Condition":{"StringNotEqualsIfExists":{"s3:x-amz-storage-class":"STANDARD"}}}
            ]}"#,
            Some("b"),
        )
        .unwrap();
        let mut v = ConditionValues {
            now: Some(time::OffsetDateTime::now_utc()),
            ..Default::default()
        };
        let at = |p: &Policy, action: &str, key: &str, who: Who<'_>, v: &ConditionValues| {
            p.evaluate(&access(action, &format!("arn:aws:s3:::b/{key}"), who, v))
        };
        assert_eq!(
            at(&p, "s3:GetObject", "private/x", Who::Anonymous, &v),
            Decision::Deny
        );
        assert_eq!(
            at(&p, "s3:GetObject", "private/x", ALICE, &v),
            Decision::Allow
        );
        assert_eq!(at(&p, "s3:GetObject", "old/x", ALICE, &v), Decision::Deny);
        assert_eq!(at(&p, "s3:GetObject", "new/x", ALICE, &v), Decision::Allow);
        v.tls_version = Some("1.0");
        assert_eq!(at(&p, "s3:GetObject", "new/x", ALICE, &v), Decision::Deny);
        v.tls_version = Some("1.3");
        assert_eq!(at(&p, "s3:GetObject", "new/x", ALICE, &v), Decision::Allow);
        v.request_tags = Some(vec![
            ("a".into(), "1".into()),
            ("secret".into(), "x".into()),
        ]);
        v.content_sha256 = Some("UNSIGNED-PAYLOAD".into());
        assert_eq!(at(&p, "s3:PutObject", "new/x", ALICE, &v), Decision::Deny);
        v.request_tags = Some(vec![("a".into(), "1".into())]);
        assert_eq!(at(&p, "s3:PutObject", "new/x", ALICE, &v), Decision::Allow);
        v.existing_tags = Some(vec![("Class".into(), "restricted".into())]);
        assert_eq!(at(&p, "s3:GetObject", "new/x", ALICE, &v), Decision::Deny);
        assert!(p.wants_existing_tags());
        v.existing_tags = None;
        assert_eq!(at(&p, "s3:PutObject", "sha/x", ALICE, &v), Decision::Allow);
        v.content_sha256 = None;
        assert_eq!(at(&p, "s3:PutObject", "sha/x", ALICE, &v), Decision::Deny);
        v.content_sha256 = Some("UNSIGNED-PAYLOAD".into());
        // ...IfExists holds when the key is absent, as AWS evaluates it.
        assert_eq!(at(&p, "s3:PutObject", "std/x", ALICE, &v), Decision::Deny);
        v.storage_class = Some("STANDARD".into());
        assert_eq!(at(&p, "s3:PutObject", "std/x", ALICE, &v), Decision::Allow);
        v.storage_class = Some("GLACIER".into());
        assert_eq!(at(&p, "s3:PutObject", "std/x", ALICE, &v), Decision::Deny);
    }

    #[test]
    fn unknown_keys_are_refused_when_put_and_fail_closed_when_stored() {
        let doc = r#"{"Statement":[
            {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"},
            {"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/deny/*",
             "Condition":{"StringEquals":{"aws:MadeUpKey":"x"}}},
            {"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*",
             "Condition":{"StringEquals":{"s3:AnotherMadeUp":"x"}}}
        ]}"#;
        let e = Policy::parse(doc, Some("b")).unwrap_err();
        assert!(e.contains("invalid condition key: aws:MadeUpKey"), "{e}");
        let p = Policy::load(doc, Some("b")).unwrap();
        assert_eq!(p.unknown_keys(), ["aws:MadeUpKey", "s3:AnotherMadeUp"]);
        let v = ConditionValues::default();
        let get = |k: &'static str| p.evaluate(&access("s3:GetObject", k, Who::Anonymous, &v));
        assert_eq!(get("arn:aws:s3:::b/deny/x"), Decision::Deny);
        assert_eq!(get("arn:aws:s3:::b/open/x"), Decision::Allow);
        let put = access("s3:PutObject", "arn:aws:s3:::b/x", Who::Anonymous, &v);
        assert_eq!(p.evaluate(&put), Decision::NotApplicable);
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
