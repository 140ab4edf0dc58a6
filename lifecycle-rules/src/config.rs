//! The S3 lifecycle configuration: the `LifecycleConfiguration` document
//! parsed, validated as S3 validates it, and rendered back.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html>)

use serde::Deserialize;
use time::OffsetDateTime;

/// Most rules one configuration may hold.
pub const MAX_RULES: usize = 1000;
/// Longest rule id.
const MAX_ID_CHARS: usize = 255;
/// Most tags an `And` filter may hold.
const MAX_FILTER_TAGS: usize = 10;
/// Storage classes a transition may target.
pub const TRANSITION_CLASSES: &[&str] = &[
    "STANDARD_IA",
    "ONEZONE_IA",
    "GLACIER_IR",
    "GLACIER",
    "DEEP_ARCHIVE",
    "COLD",
];
/// Classes S3 moves objects into only after 30 days.
const THIRTY_DAY_CLASSES: &[&str] = &["STANDARD_IA", "ONEZONE_IA"];
/// `x-amz-transition-default-minimum-object-size` values.
pub const MIN_SIZE_ALL_128K: &str = "all_storage_classes_128K";
/// See [`MIN_SIZE_ALL_128K`].
pub const MIN_SIZE_VARIES: &str = "varies_by_storage_class";

/// Why a configuration was refused, as the S3 error it becomes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// MalformedXML: not the published schema.
    #[error("MalformedXML: {0}")]
    MalformedXml(String),
    /// InvalidArgument: a value out of range.
    #[error("InvalidArgument: {0}")]
    InvalidArgument(String),
    /// InvalidRequest: a combination S3 does not allow.
    #[error("InvalidRequest: {0}")]
    InvalidRequest(String),
}

fn malformed(why: &str) -> ConfigError {
    ConfigError::MalformedXml(format!(
        "The XML you provided was not well-formed or did not validate against our published schema ({why})"
    ))
}

fn argument(why: impl Into<String>) -> ConfigError {
    ConfigError::InvalidArgument(why.into())
}

fn request(why: impl Into<String>) -> ConfigError {
    ConfigError::InvalidRequest(why.into())
}

/// When a current-version action applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum When {
    /// This many days after the object's creation (S3 rounds the result
    /// up to the next midnight UTC).
    Days(u32),
    /// From this midnight UTC on (seconds since the epoch).
    Date(i64),
}

/// Which objects a rule applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Key prefix ("" for all).
    pub prefix: String,
    /// Tags the object must all carry.
    pub tags: Vec<(String, String)>,
    /// Objects strictly larger than this.
    pub size_greater_than: Option<u64>,
    /// Objects strictly smaller than this.
    pub size_less_than: Option<u64>,
    /// How the filter was written, to render it back the same way.
    shape: Shape,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Shape {
    /// No Filter element (or a rule-level Prefix, see `legacy_prefix`).
    #[default]
    None,
    /// `<Filter/>` or `<Filter><Prefix>..</Prefix></Filter>`, etc.
    Single,
    /// `<Filter><And>..</And></Filter>`.
    And,
}

impl Filter {
    /// Whether an object with this key, size and tags is selected.
    pub fn matches(&self, key: &str, size: u64, tags: &[(String, String)]) -> bool {
        key.starts_with(&self.prefix)
            && self.size_greater_than.is_none_or(|g| size > g)
            && self.size_less_than.is_none_or(|l| size < l)
            && self.tags.iter().all(|t| tags.contains(t))
    }

    /// S3's rendering of the filter in error messages, e.g. `(prefix=logs/)`.
    fn describe(&self) -> String {
        let mut parts = vec![format!("prefix={}", self.prefix)];
        for (k, v) in &self.tags {
            parts.push(format!("tag={{key={k}, value={v}}}"));
        }
        if let Some(g) = self.size_greater_than {
            parts.push(format!("objectsizegreaterthan={g}"));
        }
        if let Some(l) = self.size_less_than {
            parts.push(format!("objectsizelessthan={l}"));
        }
        format!("({})", parts.join(" and "))
    }
}

/// Expiration of current versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expiration {
    /// When current versions expire; `None` with only the marker cleanup.
    pub when: Option<When>,
    /// Remove delete markers that have no noncurrent versions left.
    pub expired_object_delete_marker: bool,
}

/// A move of current versions to a colder class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// When.
    pub when: When,
    /// The target storage class.
    pub class: String,
}

/// Expiration or transition of noncurrent versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Noncurrent {
    /// Days after a version became noncurrent.
    pub days: u32,
    /// This many newest noncurrent versions are kept regardless.
    pub newer_versions: Option<u32>,
    /// Target class for a transition; `None` for an expiration.
    pub class: Option<String>,
}

/// One lifecycle rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Rule id (generated when the document gave none).
    pub id: String,
    /// `Status` is `Enabled`.
    pub enabled: bool,
    /// Which objects.
    pub filter: Filter,
    /// The filter was a rule-level `Prefix` (the older form).
    legacy_prefix: bool,
    /// Expiration of current versions.
    pub expiration: Option<Expiration>,
    /// Transitions of current versions.
    pub transitions: Vec<Transition>,
    /// Expiration of noncurrent versions.
    pub noncurrent_expiration: Option<Noncurrent>,
    /// Transitions of noncurrent versions.
    pub noncurrent_transitions: Vec<Noncurrent>,
    /// Abort multipart uploads this many days after initiation.
    pub abort_multipart_days: Option<u32>,
}

/// A bucket's lifecycle configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LifecycleConfig {
    /// The rules, in document order.
    pub rules: Vec<Rule>,
    /// Objects smaller than 128 KiB are transitioned only to the classes
    /// that allow it (`varies_by_storage_class`) or never (the default).
    pub small_objects_by_class: bool,
}

// ---- the document as written ----

#[derive(Deserialize)]
struct Doc {
    #[serde(rename = "Rule", default)]
    rules: Vec<DocRule>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DocRule {
    #[serde(rename = "ID")]
    id: Option<String>,
    status: Option<String>,
    prefix: Option<String>,
    filter: Option<DocFilter>,
    expiration: Option<DocExpiration>,
    #[serde(default)]
    transition: Vec<DocTransition>,
    noncurrent_version_expiration: Option<DocNoncurrent>,
    #[serde(default)]
    noncurrent_version_transition: Vec<DocNoncurrent>,
    abort_incomplete_multipart_upload: Option<DocAbort>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct DocFilter {
    prefix: Option<String>,
    #[serde(default)]
    tag: Vec<DocTag>,
    and: Option<DocAnd>,
    object_size_greater_than: Option<String>,
    object_size_less_than: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct DocAnd {
    prefix: Option<String>,
    #[serde(default)]
    tag: Vec<DocTag>,
    object_size_greater_than: Option<String>,
    object_size_less_than: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DocTag {
    key: Option<String>,
    value: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DocExpiration {
    days: Option<String>,
    date: Option<String>,
    expired_object_delete_marker: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DocTransition {
    days: Option<String>,
    date: Option<String>,
    storage_class: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DocNoncurrent {
    noncurrent_days: Option<String>,
    newer_noncurrent_versions: Option<String>,
    storage_class: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DocAbort {
    days_after_initiation: Option<String>,
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| malformed(&format!("{what} is not a number: {text:?}")))
}

/// Parses an ISO 8601 date that must be midnight UTC.
///
/// Both forms take RFC 3339's four-digit year, 0000 to 9999, so every
/// accepted date renders back (`render_when`) to text this reads again:
/// `[year]` alone would also take a signed year, and a stored "-2492-…"
/// would no longer parse, losing the bucket's whole configuration.
fn midnight(text: &str) -> Result<i64, ConfigError> {
    let t = text.trim();
    let parsed = OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
        .ok()
        .or_else(|| {
            // A bare date ("2026-01-01") is midnight UTC.
            if !t.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let date =
                time::Date::parse(t, time::macros::format_description!("[year]-[month]-[day]"))
                    .ok()?;
            Some(date.midnight().assume_utc())
        })
        .ok_or_else(|| malformed(&format!("Date is not an ISO 8601 date: {t:?}")))?;
    let secs = parsed.unix_timestamp();
    if parsed.nanosecond() != 0 || secs.rem_euclid(86_400) != 0 {
        return Err(argument("'Date' must be at midnight GMT"));
    }
    Ok(secs)
}

fn tag(t: DocTag) -> Result<(String, String), ConfigError> {
    match (t.key, t.value) {
        (Some(k), Some(v)) if !k.is_empty() => Ok((k, v)),
        _ => Err(malformed("a Tag needs a Key and a Value")),
    }
}

fn filter(doc: Option<DocFilter>) -> Result<Filter, ConfigError> {
    let Some(f) = doc else {
        return Ok(Filter::default());
    };
    let given = [
        f.prefix.is_some(),
        !f.tag.is_empty(),
        f.and.is_some(),
        f.object_size_greater_than.is_some() || f.object_size_less_than.is_some(),
    ]
    .iter()
    .filter(|g| **g)
    .count();
    if given > 1 || f.tag.len() > 1 {
        return Err(malformed(
            "a Filter holds one of Prefix, Tag, ObjectSizeGreaterThan/LessThan or And",
        ));
    }
    let (prefix, tags, gt, lt, shape) = match f.and {
        Some(a) => (
            a.prefix,
            a.tag,
            a.object_size_greater_than,
            a.object_size_less_than,
            Shape::And,
        ),
        None => (
            f.prefix,
            f.tag,
            f.object_size_greater_than,
            f.object_size_less_than,
            Shape::Single,
        ),
    };
    if tags.len() > MAX_FILTER_TAGS {
        return Err(argument(format!(
            "A Filter may contain at most {MAX_FILTER_TAGS} Tags"
        )));
    }
    let tags: Vec<(String, String)> = tags.into_iter().map(tag).collect::<Result<_, _>>()?;
    for (i, (k, _)) in tags.iter().enumerate() {
        if tags[..i].iter().any(|(o, _)| o == k) {
            return Err(request("Duplicate Tag Keys are not allowed."));
        }
    }
    let size_greater_than = gt
        .map(|g| number::<u64>(&g, "ObjectSizeGreaterThan"))
        .transpose()?;
    let size_less_than = lt
        .map(|l| number::<u64>(&l, "ObjectSizeLessThan"))
        .transpose()?;
    if let (Some(g), Some(l)) = (size_greater_than, size_less_than) {
        if g >= l {
            return Err(argument(
                "ObjectSizeGreaterThan must be less than ObjectSizeLessThan",
            ));
        }
    }
    if size_less_than == Some(0) {
        return Err(argument("ObjectSizeLessThan must be greater than 0"));
    }
    Ok(Filter {
        prefix: prefix.unwrap_or_default(),
        tags,
        size_greater_than,
        size_less_than,
        shape,
    })
}

fn when(days: Option<String>, date: Option<String>, action: &str) -> Result<When, ConfigError> {
    match (days, date) {
        (Some(_), Some(_)) => Err(malformed(&format!(
            "{action} holds either Days or Date, not both"
        ))),
        (Some(d), None) => Ok(When::Days(number(&d, "Days")?)),
        (None, Some(d)) => Ok(When::Date(midnight(&d)?)),
        (None, None) => Err(argument(format!(
            "'{action}' action must specify either 'Days' or 'Date'"
        ))),
    }
}

/// The storage classes a configuration may transition to besides
/// [`TRANSITION_CLASSES`]: the remote tiers configured now, or (`Any`, for a
/// configuration already stored) any name but STANDARD.
#[derive(Clone, Copy, Debug)]
pub enum Classes<'a> {
    /// These remote tiers.
    Remote(&'a [String]),
    /// Any class name.
    Any,
}

impl Classes<'_> {
    /// Whether a transition may name `class`.
    pub fn allows(&self, class: &str) -> bool {
        TRANSITION_CLASSES.contains(&class)
            || match self {
                Classes::Remote(names) => names.iter().any(|n| n == class),
                Classes::Any => !class.is_empty() && class != "STANDARD",
            }
    }
}

fn transition_class(
    class: Option<String>,
    action: &str,
    classes: Classes<'_>,
) -> Result<String, ConfigError> {
    match class {
        Some(c) if classes.allows(&c) => Ok(c),
        Some(c) => Err(malformed(&format!(
            "{action} StorageClass {c:?} is not one of {}",
            TRANSITION_CLASSES.join(", ")
        ))),
        None => Err(malformed(&format!("{action} needs a StorageClass"))),
    }
}

fn newer_versions(text: Option<String>) -> Result<Option<u32>, ConfigError> {
    let Some(t) = text else { return Ok(None) };
    let n: u32 = number(&t, "NewerNoncurrentVersions")?;
    if !(1..=100).contains(&n) {
        return Err(argument(
            "'NewerNoncurrentVersions' must be between 1 and 100",
        ));
    }
    Ok(Some(n))
}

fn noncurrent(
    doc: DocNoncurrent,
    action: &str,
    transition: bool,
    classes: Classes<'_>,
) -> Result<Noncurrent, ConfigError> {
    let days: u32 = number(
        &doc.noncurrent_days
            .ok_or_else(|| malformed(&format!("{action} needs NoncurrentDays")))?,
        "NoncurrentDays",
    )?;
    let class = if transition {
        let class = transition_class(doc.storage_class, action, classes)?;
        if THIRTY_DAY_CLASSES.contains(&class.as_str()) && days < 30 {
            return Err(argument(format!(
                "'NoncurrentDays' in NoncurrentVersionTransition action must be greater than or equal to 30 for storageClass '{class}'"
            )));
        }
        Some(class)
    } else {
        if days == 0 {
            return Err(argument(
                "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer",
            ));
        }
        None
    };
    Ok(Noncurrent {
        days,
        newer_versions: newer_versions(doc.newer_noncurrent_versions)?,
        class,
    })
}

fn rule(doc: DocRule, classes: Classes<'_>) -> Result<Rule, ConfigError> {
    let id = match doc.id {
        Some(id) if id.chars().count() > MAX_ID_CHARS => {
            return Err(argument(format!(
                "ID length should not exceed allowed limit of {MAX_ID_CHARS}"
            )))
        }
        Some(id) => id,
        None => uuid::Uuid::new_v4().simple().to_string(),
    };
    let enabled = match doc.status.as_deref() {
        Some("Enabled") => true,
        Some("Disabled") => false,
        _ => return Err(malformed("Status is Enabled or Disabled")),
    };
    if doc.prefix.is_some() && doc.filter.is_some() {
        return Err(malformed(
            "the Filter and Prefix elements are mutually exclusive",
        ));
    }
    let legacy_prefix = doc.prefix.is_some();
    let filter = match doc.prefix {
        Some(p) => Filter {
            prefix: p,
            ..Filter::default()
        },
        None => match doc.filter {
            // An empty <Filter/> is read as no element at all by the
            // deserializer; both mean every object.
            None => Filter {
                shape: Shape::Single,
                ..Filter::default()
            },
            f => filter(f)?,
        },
    };
    let expiration = doc
        .expiration
        .map(|e| -> Result<Expiration, ConfigError> {
            let marker = match e.expired_object_delete_marker.as_deref().map(str::trim) {
                None => None,
                Some("true") => Some(true),
                Some("false") => Some(false),
                Some(v) => {
                    return Err(malformed(&format!(
                        "ExpiredObjectDeleteMarker is true or false, not {v:?}"
                    )))
                }
            };
            let given = [e.days.is_some(), e.date.is_some(), marker.is_some()]
                .iter()
                .filter(|g| **g)
                .count();
            if given != 1 {
                return Err(malformed(
                    "Expiration holds exactly one of Days, Date and ExpiredObjectDeleteMarker",
                ));
            }
            let when = match (e.days, e.date) {
                (None, None) => None,
                (d, t) => Some(when(d, t, "Expiration")?),
            };
            if when == Some(When::Days(0)) {
                return Err(argument(
                    "'Days' for Expiration action must be a positive integer",
                ));
            }
            Ok(Expiration {
                when,
                expired_object_delete_marker: marker.unwrap_or(false),
            })
        })
        .transpose()?;
    if expiration
        .as_ref()
        .is_some_and(|e| e.expired_object_delete_marker)
        && !filter.tags.is_empty()
    {
        return Err(request(
            "ExpiredObjectDeleteMarker cannot be specified with object tags",
        ));
    }
    let mut transitions = Vec::new();
    for t in doc.transition {
        let class = transition_class(t.storage_class, "Transition", classes)?;
        let when = when(t.days, t.date, "Transition")?;
        if let When::Days(d) = when {
            if THIRTY_DAY_CLASSES.contains(&class.as_str()) && d < 30 {
                return Err(argument(format!(
                    "'Days' in Transition action must be greater than or equal to 30 for storageClass '{class}'"
                )));
            }
        }
        transitions.push(Transition { when, class });
    }
    let described = filter.describe();
    check_transitions(&transitions, expiration.as_ref(), &described)?;
    let noncurrent_expiration = doc
        .noncurrent_version_expiration
        .map(|n| noncurrent(n, "NoncurrentVersionExpiration", false, classes))
        .transpose()?;
    let noncurrent_transitions: Vec<Noncurrent> = doc
        .noncurrent_version_transition
        .into_iter()
        .map(|n| noncurrent(n, "NoncurrentVersionTransition", true, classes))
        .collect::<Result<_, _>>()?;
    for (i, t) in noncurrent_transitions.iter().enumerate() {
        if noncurrent_transitions[..i]
            .iter()
            .any(|o| o.class == t.class)
        {
            return Err(request(format!(
                "'StorageClass' must be different for 'NoncurrentVersionTransition' actions in same 'Rule' with filter '{described}'"
            )));
        }
        if let Some(e) = &noncurrent_expiration {
            if e.days <= t.days {
                return Err(argument(format!(
                    "'NoncurrentDays' in the NoncurrentVersionExpiration action for filter '{described}' must be greater than 'NoncurrentDays' in the NoncurrentVersionTransition action"
                )));
            }
        }
    }
    let abort_multipart_days = doc
        .abort_incomplete_multipart_upload
        .map(|a| -> Result<u32, ConfigError> {
            let days: u32 = number(
                &a.days_after_initiation
                    .ok_or_else(|| malformed("AbortIncompleteMultipartUpload needs DaysAfterInitiation"))?,
                "DaysAfterInitiation",
            )?;
            if days == 0 {
                return Err(argument(
                    "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer",
                ));
            }
            Ok(days)
        })
        .transpose()?;
    if abort_multipart_days.is_some()
        && (!filter.tags.is_empty()
            || filter.size_greater_than.is_some()
            || filter.size_less_than.is_some())
    {
        return Err(request(
            "AbortIncompleteMultipartUpload cannot be specified with Tag or ObjectSize filters",
        ));
    }
    if expiration.is_none()
        && transitions.is_empty()
        && noncurrent_expiration.is_none()
        && noncurrent_transitions.is_empty()
        && abort_multipart_days.is_none()
    {
        return Err(request(
            "At least one action needs to be specified in a rule",
        ));
    }
    Ok(Rule {
        id,
        enabled,
        filter,
        legacy_prefix,
        expiration,
        transitions,
        noncurrent_expiration,
        noncurrent_transitions,
        abort_multipart_days,
    })
}

/// Transitions of one rule: one per class, all by days or all by date,
/// and all before the rule's expiration.
fn check_transitions(
    transitions: &[Transition],
    expiration: Option<&Expiration>,
    described: &str,
) -> Result<(), ConfigError> {
    let by_days = transitions.iter().any(|t| matches!(t.when, When::Days(_)));
    let by_date = transitions.iter().any(|t| matches!(t.when, When::Date(_)));
    if by_days && by_date {
        return Err(request(format!(
            "Found mixed 'Date' and 'Days' based Transition actions in lifecycle rule for filter '{described}'"
        )));
    }
    for (i, t) in transitions.iter().enumerate() {
        if transitions[..i].iter().any(|o| o.class == t.class) {
            return Err(request(format!(
                "'StorageClass' must be different for 'Transition' actions in same 'Rule' with filter '{described}'"
            )));
        }
        match (expiration.and_then(|e| e.when.as_ref()), &t.when) {
            (Some(When::Days(e)), When::Days(d)) if e <= d => {
                return Err(argument(format!(
                    "'Days' in the Expiration action for filter '{described}' must be greater than 'Days' in the Transition action"
                )))
            }
            (Some(When::Date(e)), When::Date(d)) if e <= d => {
                return Err(argument(format!(
                    "'Date' in the Expiration action for filter '{described}' must be later than 'Date' in the Transition action"
                )))
            }
            (Some(When::Days(_)), When::Date(_)) | (Some(When::Date(_)), When::Days(_)) => {
                return Err(request(format!(
                    "Found mixed 'Date' and 'Days' based Expiration and Transition actions in lifecycle rule for filter '{described}'"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Parses and validates a `LifecycleConfiguration` document;
/// `min_size_header` is the request's
/// `x-amz-transition-default-minimum-object-size`, `classes` the storage
/// classes beyond S3's (and COLD) that transitions may name.
pub fn parse(
    doc: &[u8],
    min_size_header: Option<&str>,
    classes: Classes<'_>,
) -> Result<LifecycleConfig, ConfigError> {
    let small_objects_by_class = match min_size_header {
        None | Some(MIN_SIZE_ALL_128K) => false,
        Some(MIN_SIZE_VARIES) => true,
        Some(other) => {
            return Err(argument(format!(
                "Invalid x-amz-transition-default-minimum-object-size: {other:?} (use {MIN_SIZE_ALL_128K} or {MIN_SIZE_VARIES})"
            )))
        }
    };
    let text = std::str::from_utf8(doc).map_err(|_| malformed("not UTF-8"))?;
    let doc: Doc = quick_xml::de::from_str(text).map_err(|e| malformed(&e.to_string()))?;
    if doc.rules.is_empty() {
        return Err(malformed(
            "a LifecycleConfiguration holds at least one Rule",
        ));
    }
    if doc.rules.len() > MAX_RULES {
        return Err(argument(format!(
            "The lifecycle configuration cannot have more than {MAX_RULES} rules"
        )));
    }
    let rules: Vec<Rule> = doc
        .rules
        .into_iter()
        .map(|r| rule(r, classes))
        .collect::<Result<_, _>>()?;
    for (i, r) in rules.iter().enumerate() {
        if rules[..i].iter().any(|o| o.id == r.id) {
            return Err(argument(
                "Rule ID must be unique. Found same ID for more than one rule",
            ));
        }
    }
    Ok(LifecycleConfig {
        rules,
        small_objects_by_class,
    })
}

impl LifecycleConfig {
    /// Every storage class a rule transitions to (current or noncurrent).
    pub fn transition_classes(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().flat_map(|r| {
            r.transitions.iter().map(|t| t.class.as_str()).chain(
                r.noncurrent_transitions
                    .iter()
                    .filter_map(|n| n.class.as_deref()),
            )
        })
    }

    /// The value of `x-amz-transition-default-minimum-object-size`.
    pub fn min_size_header(&self) -> &'static str {
        if self.small_objects_by_class {
            MIN_SIZE_VARIES
        } else {
            MIN_SIZE_ALL_128K
        }
    }

    /// The configuration as a `LifecycleConfiguration` document.
    pub fn to_xml(&self) -> String {
        let mut x = Xml::default();
        x.raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
        for r in &self.rules {
            x.raw("<Rule>");
            x.text("ID", &r.id);
            if r.legacy_prefix {
                x.text("Prefix", &r.filter.prefix);
            } else {
                render_filter(&mut x, &r.filter);
            }
            x.text("Status", if r.enabled { "Enabled" } else { "Disabled" });
            if let Some(e) = &r.expiration {
                x.raw("<Expiration>");
                match &e.when {
                    Some(w) => render_when(&mut x, w),
                    None => x.text("ExpiredObjectDeleteMarker", "true"),
                }
                x.raw("</Expiration>");
            }
            for t in &r.transitions {
                x.raw("<Transition>");
                render_when(&mut x, &t.when);
                x.text("StorageClass", &t.class);
                x.raw("</Transition>");
            }
            if let Some(n) = &r.noncurrent_expiration {
                x.raw("<NoncurrentVersionExpiration>");
                render_noncurrent(&mut x, n);
                x.raw("</NoncurrentVersionExpiration>");
            }
            for n in &r.noncurrent_transitions {
                x.raw("<NoncurrentVersionTransition>");
                render_noncurrent(&mut x, n);
                x.raw("</NoncurrentVersionTransition>");
            }
            if let Some(d) = r.abort_multipart_days {
                x.raw("<AbortIncompleteMultipartUpload>");
                x.text("DaysAfterInitiation", &d.to_string());
                x.raw("</AbortIncompleteMultipartUpload>");
            }
            x.raw("</Rule>");
        }
        x.raw("</LifecycleConfiguration>");
        x.0
    }
}

#[derive(Default)]
struct Xml(String);

impl Xml {
    fn raw(&mut self, s: &str) {
        self.0.push_str(s);
    }

    fn text(&mut self, name: &str, value: &str) {
        self.0.push('<');
        self.0.push_str(name);
        self.0.push('>');
        self.0.push_str(&quick_xml::escape::escape(value));
        self.0.push_str("</");
        self.0.push_str(name);
        self.0.push('>');
    }
}

fn render_filter(x: &mut Xml, f: &Filter) {
    let size = |x: &mut Xml| {
        if let Some(g) = f.size_greater_than {
            x.text("ObjectSizeGreaterThan", &g.to_string());
        }
        if let Some(l) = f.size_less_than {
            x.text("ObjectSizeLessThan", &l.to_string());
        }
    };
    let tags = |x: &mut Xml| {
        for (k, v) in &f.tags {
            x.raw("<Tag>");
            x.text("Key", k);
            x.text("Value", v);
            x.raw("</Tag>");
        }
    };
    match f.shape {
        Shape::None => {}
        Shape::And => {
            x.raw("<Filter><And>");
            x.text("Prefix", &f.prefix);
            tags(x);
            size(x);
            x.raw("</And></Filter>");
        }
        Shape::Single => {
            x.raw("<Filter>");
            if !f.tags.is_empty() {
                tags(x);
            } else if f.size_greater_than.is_some() || f.size_less_than.is_some() {
                size(x);
            } else {
                x.text("Prefix", &f.prefix);
            }
            x.raw("</Filter>");
        }
    }
}

fn render_when(x: &mut Xml, w: &When) {
    match w {
        When::Days(d) => x.text("Days", &d.to_string()),
        When::Date(secs) => {
            let t =
                OffsetDateTime::from_unix_timestamp(*secs).unwrap_or(OffsetDateTime::UNIX_EPOCH);
            let s = t
                .format(time::macros::format_description!(
                    "[year]-[month]-[day]T00:00:00.000Z"
                ))
                .unwrap_or_default();
            x.text("Date", &s)
        }
    }
}

fn render_noncurrent(x: &mut Xml, n: &Noncurrent) {
    x.text("NoncurrentDays", &n.days.to_string());
    if let Some(c) = &n.class {
        x.text("StorageClass", c);
    }
    if let Some(v) = n.newer_versions {
        x.text("NewerNoncurrentVersions", &v.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(rules: &str) -> Vec<u8> {
        format!("<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{rules}</LifecycleConfiguration>").into_bytes()
    }

    fn err(rules: &str) -> ConfigError {
        parse(&doc(rules), None, Classes::Remote(&[])).unwrap_err()
    }

    #[test]
    fn the_full_grammar_round_trips() {
        let d = doc(
            "<Rule><ID>a</ID><Filter><And><Prefix>ckpt/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>\
             <ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>99</ObjectSizeLessThan></And></Filter>\
             <Status>Enabled</Status><Expiration><Days>90</Days></Expiration>\
             <Transition><Days>30</Days><StorageClass>STANDARD_IA</StorageClass></Transition>\
             <Transition><Days>60</Days><StorageClass>GLACIER</StorageClass></Transition>\
             <NoncurrentVersionExpiration><NoncurrentDays>40</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration>\
             <NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays><StorageClass>COLD</StorageClass></NoncurrentVersionTransition></Rule>\
             <Rule><ID>b</ID><Filter><Tag><Key>x</Key><Value>y</Value></Tag></Filter><Status>Disabled</Status>\
             <Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>\
             <Rule><ID>c</ID><Prefix>tmp/</Prefix><Status>Enabled</Status>\
             <AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload>\
             <Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>\
             <Rule><ID>d</ID><Filter></Filter><Status>Enabled</Status><Transition><Days>0</Days><StorageClass>COLD</StorageClass></Transition></Rule>",
        );
        let cfg = parse(&d, Some(MIN_SIZE_VARIES), Classes::Remote(&[])).unwrap();
        assert_eq!(cfg.rules.len(), 4);
        let a = &cfg.rules[0];
        assert_eq!(a.filter.prefix, "ckpt/");
        assert_eq!(a.filter.tags, vec![("k".to_string(), "v".to_string())]);
        assert_eq!(
            (a.filter.size_greater_than, a.filter.size_less_than),
            (Some(10), Some(99))
        );
        assert_eq!(a.transitions.len(), 2);
        assert_eq!(
            a.noncurrent_expiration.as_ref().unwrap().newer_versions,
            Some(3)
        );
        assert_eq!(
            cfg.rules[1].expiration.as_ref().unwrap().when,
            Some(When::Date(1_893_456_000))
        );
        assert!(
            cfg.rules[2]
                .expiration
                .as_ref()
                .unwrap()
                .expired_object_delete_marker
        );
        assert_eq!(cfg.rules[2].abort_multipart_days, Some(2));
        let again = parse(
            cfg.to_xml().as_bytes(),
            Some(cfg.min_size_header()),
            Classes::Any,
        )
        .unwrap();
        assert_eq!(again, cfg);
    }

    /// From a review of the upgrade to quick-xml 0.42: a rule's text
    /// holding a carriage return (sent as `&#13;`), NEL or LINE SEPARATOR
    /// renders to a document that reads back to the same rule — before,
    /// the rendering left CR raw and the reader turned CR, NEL and LINE
    /// SEPARATOR into line feeds, so the stored rule the scanner read
    /// matched another prefix than the one the client set.
    #[test]
    fn line_end_characters_in_a_rule_survive_its_rendering() {
        let d = doc(
            "<Rule><ID>a&#13;b</ID><Filter><Prefix>p&#x2028;q&#x85;r&#13;</Prefix></Filter>\
             <Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>",
        );
        let cfg = parse(&d, None, Classes::Any).unwrap();
        assert_eq!(cfg.rules[0].id, "a\rb");
        assert_eq!(cfg.rules[0].filter.prefix, "p\u{2028}q\u{85}r\r");
        let again = parse(cfg.to_xml().as_bytes(), None, Classes::Any).unwrap();
        assert_eq!(again, cfg);
    }

    #[test]
    fn s3s_rules_are_enforced_with_its_errors() {
        let t = |days: u32, class: &str| {
            format!("<Rule><ID>r</ID><Filter/><Status>Enabled</Status><Transition><Days>{days}</Days><StorageClass>{class}</StorageClass></Transition></Rule>")
        };
        assert!(
            matches!(err(&t(29, "STANDARD_IA")), ConfigError::InvalidArgument(m) if m.contains("greater than or equal to 30"))
        );
        assert!(parse(&doc(&t(0, "COLD")), None, Classes::Remote(&[])).is_ok());
        assert!(parse(&doc(&t(1, "GLACIER")), None, Classes::Remote(&[])).is_ok());
        assert!(matches!(
            err(&t(1, "STANDARD")),
            ConfigError::MalformedXml(_)
        ));
        assert!(matches!(
            err(
                "<Rule><ID>r</ID><Status>On</Status><Expiration><Days>1</Days></Expiration></Rule>"
            ),
            ConfigError::MalformedXml(_)
        ));
        assert!(
            matches!(err("<Rule><ID>r</ID><Filter/><Status>Enabled</Status></Rule>"), ConfigError::InvalidRequest(m) if m.contains("At least one action"))
        );
        assert!(matches!(err("<Rule><ID>r</ID><Status>Enabled</Status><Expiration><Days>0</Days></Expiration></Rule>"), ConfigError::InvalidArgument(_)));
        assert!(
            matches!(err("<Rule><ID>r</ID><Status>Enabled</Status><Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration></Rule>"), ConfigError::InvalidArgument(m) if m.contains("midnight"))
        );
        assert!(matches!(err("<Rule><ID>r</ID><Status>Enabled</Status><Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>"), ConfigError::MalformedXml(_)));
        assert!(
            matches!(err("<Rule><ID>r</ID><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule><Rule><ID>r</ID><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>"), ConfigError::InvalidArgument(m) if m.contains("unique"))
        );
        assert!(
            matches!(err("<Rule><ID>r</ID><Status>Enabled</Status><Expiration><Days>10</Days></Expiration><Transition><Days>10</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>"), ConfigError::InvalidArgument(m) if m.contains("must be greater than 'Days' in the Transition"))
        );
        assert!(matches!(err("<Rule><ID>r</ID><Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>"), ConfigError::InvalidRequest(_)));
        assert!(matches!(err("<Rule><ID>r</ID><Filter><Prefix>a</Prefix><Tag><Key>a</Key><Value>b</Value></Tag></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"), ConfigError::MalformedXml(_)));
        assert!(matches!(err("<Rule><ID>r</ID><Filter><And><ObjectSizeGreaterThan>9</ObjectSizeGreaterThan><ObjectSizeLessThan>9</ObjectSizeLessThan></And></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"), ConfigError::InvalidArgument(_)));
        assert!(matches!(err("<Rule><ID>r</ID><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>"), ConfigError::InvalidArgument(_)));
        assert!(matches!(
            parse(b"<LifecycleConfiguration><Rule>", None, Classes::Any).unwrap_err(),
            ConfigError::MalformedXml(_)
        ));
        assert!(matches!(
            parse(&doc(""), None, Classes::Any).unwrap_err(),
            ConfigError::MalformedXml(_)
        ));
        assert!(matches!(
            parse(&doc(&t(1, "COLD")), Some("tiny"), Classes::Any).unwrap_err(),
            ConfigError::InvalidArgument(_)
        ));
    }

    #[test]
    fn dates_take_a_four_digit_year_and_render_back() {
        let rule = |date: &str| {
            format!("<Rule><ID>r</ID><Status>Enabled</Status><Expiration><Date>{date}</Date></Expiration></Rule>")
        };
        // A signed year is not RFC 3339's; "-2492-02-01" was accepted and
        // rendered to text that no longer parsed.
        for bad in [
            "-2492-02-01",
            "+2030-01-01",
            "-2492-02-01T00:00:00Z",
            "999-01-01",
        ] {
            assert!(
                matches!(err(&rule(bad)), ConfigError::MalformedXml(m) if m.contains("ISO 8601")),
                "{bad}"
            );
        }
        for (good, secs) in [
            ("2030-01-01", 1_893_456_000),
            ("0000-01-01", -62_167_219_200),
            ("9999-12-31T00:00:00.000Z", 253_402_214_400),
        ] {
            let cfg = parse(&doc(&rule(good)), None, Classes::Remote(&[])).unwrap();
            let when = cfg.rules[0]
                .expiration
                .as_ref()
                .and_then(|e| e.when.clone());
            assert_eq!(when, Some(When::Date(secs)), "{good}");
            let again = parse(cfg.to_xml().as_bytes(), None, Classes::Remote(&[])).unwrap();
            assert_eq!(again, cfg, "{good}");
        }
    }

    #[test]
    fn filters_select_by_prefix_tags_and_size() {
        let f = Filter {
            prefix: "a/".into(),
            tags: vec![("t".into(), "1".into())],
            size_greater_than: Some(10),
            size_less_than: Some(20),
            shape: Shape::And,
        };
        let tags = vec![("t".to_string(), "1".to_string()), ("u".into(), "2".into())];
        assert!(f.matches("a/x", 15, &tags));
        assert!(!f.matches("b/x", 15, &tags));
        assert!(!f.matches("a/x", 10, &tags));
        assert!(!f.matches("a/x", 20, &tags));
        assert!(!f.matches("a/x", 15, &tags[1..]));
    }
}
