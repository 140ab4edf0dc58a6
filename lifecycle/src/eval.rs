//! What a lifecycle configuration says about one version, and when: S3's
//! day arithmetic (days after creation, or after becoming noncurrent,
//! rounded up to the next midnight UTC), filters, precedence (expiration
//! before transition), the 128 KiB transition minimum, and the
//! `x-amz-expiration` header.

use std::time::Duration;

use time::OffsetDateTime;

use crate::config::{LifecycleConfig, Rule, When};

/// Objects smaller than this are not transitioned unless the
/// configuration or the rule's size filter says otherwise.
pub const MIN_TRANSITION_BYTES: u64 = 128 << 10;
/// Classes that take objects under the minimum with
/// `varies_by_storage_class`.
const SMALL_OBJECT_CLASSES: &[&str] = &["GLACIER", "DEEP_ARCHIVE", "COLD"];

/// The length of a lifecycle day: 24 hours in production; tests run with
/// a shorter one (`granary server --lifecycle-day-secs`). Day boundaries
/// ("midnight UTC") are the multiples of it since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// One day.
    pub day: Duration,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            day: Duration::from_secs(86_400),
        }
    }
}

impl Clock {
    fn day_ns(&self) -> u64 {
        (self.day.as_nanos() as u64).max(1)
    }

    /// When an action `days` days after `from_ns` is due: S3 adds the days
    /// and rounds up to the next midnight.
    pub fn due_ns(&self, from_ns: u64, days: u32) -> u64 {
        let d = self.day_ns();
        from_ns
            .saturating_add(days as u64 * d)
            .div_ceil(d)
            .saturating_mul(d)
    }

    /// Nanoseconds since the epoch of `when` for an object created at
    /// `from_ns`.
    pub fn when_ns(&self, when: &When, from_ns: u64) -> u64 {
        match when {
            When::Days(d) => self.due_ns(from_ns, *d),
            When::Date(secs) => (*secs).max(0) as u64 * 1_000_000_000,
        }
    }
}

/// What the scanner knows of one version.
#[derive(Clone, Debug)]
pub struct Version<'a> {
    /// Modification time.
    pub mtime_ns: u64,
    /// Bytes.
    pub size: u64,
    /// A delete marker.
    pub delete_marker: bool,
    /// Its storage class.
    pub class: &'a str,
    /// Its tags (`None` when not read: then tag filters do not match).
    pub tags: Option<&'a [(String, String)]>,
}

/// What a rule does to a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// The current version expires (a delete marker in a versioned bucket).
    Expire,
    /// A delete marker with no noncurrent versions left is removed.
    RemoveMarker,
    /// A noncurrent version is removed for good.
    DeleteVersion,
    /// The version moves to this storage class.
    Transition(String),
}

impl Action {
    /// Expirations win over transitions when both are due.
    fn removes(&self) -> bool {
        !matches!(self, Action::Transition(_))
    }
}

/// One rule's action for a version and when it is due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The rule's id.
    pub rule: String,
    /// What.
    pub action: Action,
    /// From when (ns since the epoch).
    pub due_ns: u64,
}

/// How cold a storage class is: transitions only go colder. Remote tiers
/// (any other name) count as the coldest: archives outside the deployment.
pub fn class_rank(class: &str) -> u8 {
    match class {
        "STANDARD" | "" => 0,
        "STANDARD_IA" | "ONEZONE_IA" => 1,
        "GLACIER_IR" => 2,
        "COLD" | "GLACIER" => 3,
        "DEEP_ARCHIVE" => 4,
        _ => 5,
    }
}

fn matches(rule: &Rule, key: &str, v: &Version<'_>) -> bool {
    if !rule.enabled {
        return false;
    }
    if !rule.filter.tags.is_empty() && v.tags.is_none() {
        return false;
    }
    rule.filter.matches(key, v.size, v.tags.unwrap_or(&[]))
}

fn may_transition(cfg: &LifecycleConfig, rule: &Rule, v: &Version<'_>, class: &str) -> bool {
    !v.delete_marker
        && class_rank(class) > class_rank(v.class)
        && (v.size >= MIN_TRANSITION_BYTES
            || rule.filter.size_greater_than.is_some()
            || (cfg.small_objects_by_class && SMALL_OBJECT_CLASSES.contains(&class)))
}

/// Every action the configuration has in store for `versions[index]`
/// (`versions` is one key's versions, newest first), due or not.
pub fn candidates(
    cfg: &LifecycleConfig,
    clock: &Clock,
    key: &str,
    versions: &[Version<'_>],
    index: usize,
) -> Vec<Decision> {
    let v = &versions[index];
    let mut out = Vec::new();
    let mut push = |rule: &Rule, action, due_ns| {
        out.push(Decision {
            rule: rule.id.clone(),
            action,
            due_ns,
        })
    };
    for rule in cfg.rules.iter().filter(|r| matches(r, key, v)) {
        if index == 0 {
            if v.delete_marker {
                if versions.len() == 1 {
                    if let Some(e) = &rule.expiration {
                        if e.expired_object_delete_marker {
                            push(rule, Action::RemoveMarker, v.mtime_ns);
                        } else if let Some(When::Days(d)) = e.when {
                            push(rule, Action::RemoveMarker, clock.due_ns(v.mtime_ns, d));
                        }
                    }
                }
                continue;
            }
            if let Some(when) = rule.expiration.as_ref().and_then(|e| e.when.as_ref()) {
                push(rule, Action::Expire, clock.when_ns(when, v.mtime_ns));
            }
            for t in &rule.transitions {
                if may_transition(cfg, rule, v, &t.class) {
                    push(
                        rule,
                        Action::Transition(t.class.clone()),
                        clock.when_ns(&t.when, v.mtime_ns),
                    );
                }
            }
        } else {
            // Noncurrent since the next newer version was written.
            let since = versions[index - 1].mtime_ns;
            let newer = (index - 1) as u32;
            if let Some(n) = &rule.noncurrent_expiration {
                if n.newer_versions.is_none_or(|keep| newer >= keep) {
                    push(rule, Action::DeleteVersion, clock.due_ns(since, n.days));
                }
            }
            for n in &rule.noncurrent_transitions {
                let class = n.class.clone().unwrap_or_default();
                if n.newer_versions.is_none_or(|keep| newer >= keep)
                    && may_transition(cfg, rule, v, &class)
                {
                    push(rule, Action::Transition(class), clock.due_ns(since, n.days));
                }
            }
        }
    }
    out
}

/// The action to take at `at_ns` among `candidates`: a due expiration
/// before a due transition, and of transitions the coldest.
pub fn pick(candidates: &[Decision], at_ns: u64) -> Option<&Decision> {
    let due = candidates.iter().filter(|d| d.due_ns <= at_ns);
    due.max_by_key(|d| match &d.action {
        a if a.removes() => (1, 0, u64::MAX - d.due_ns),
        Action::Transition(c) => (0, class_rank(c), u64::MAX - d.due_ns),
        _ => (0, 0, 0),
    })
}

/// The `x-amz-expiration` value for an object: the earliest expiration
/// of a rule that applies, as `expiry-date="<HTTP date>", rule-id="<id>"`.
pub fn expiration_header(
    cfg: &LifecycleConfig,
    clock: &Clock,
    key: &str,
    v: &Version<'_>,
) -> Option<String> {
    let (due, rule) = cfg
        .rules
        .iter()
        .filter(|r| matches(r, key, v))
        .filter_map(|r| {
            let when = r.expiration.as_ref()?.when.as_ref()?;
            Some((clock.when_ns(when, v.mtime_ns), r))
        })
        .min_by_key(|(due, _)| *due)?;
    let t = OffsetDateTime::from_unix_timestamp((due / 1_000_000_000) as i64).ok()?;
    let date = t
        .format(time::macros::format_description!(
            "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
        ))
        .ok()?;
    Some(format!(
        "expiry-date=\"{date}\", rule-id=\"{}\"",
        rule.id.replace('"', "\\\"")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, Classes};

    const DAY: u64 = 86_400 * 1_000_000_000;

    fn cfg(rules: &str) -> LifecycleConfig {
        parse(
            format!("<LifecycleConfiguration>{rules}</LifecycleConfiguration>").as_bytes(),
            None,
            Classes::Remote(&[]),
        )
        .unwrap()
    }

    fn obj(mtime_ns: u64, size: u64) -> Version<'static> {
        Version {
            mtime_ns,
            size,
            delete_marker: false,
            class: "STANDARD",
            tags: Some(&[]),
        }
    }

    #[test]
    fn days_round_up_to_the_next_midnight() {
        let c = Clock::default();
        // Created 2014-01-15 10:30 UTC, 3 days: due 2014-01-19 00:00 UTC.
        let created = 1_389_781_800 * 1_000_000_000;
        assert_eq!(c.due_ns(created, 3), 1_390_089_600 * 1_000_000_000);
        let fast = Clock {
            day: Duration::from_secs(2),
        };
        assert_eq!(fast.due_ns(3_000_000_000, 1), 6_000_000_000);
    }

    #[test]
    fn expiration_wins_and_transitions_respect_size_and_order() {
        let c = Clock::default();
        let cfg = cfg("<Rule><ID>x</ID><Filter><Prefix>a/</Prefix></Filter><Status>Enabled</Status>\
            <Expiration><Days>10</Days></Expiration>\
            <Transition><Days>1</Days><StorageClass>GLACIER_IR</StorageClass></Transition>\
            <Transition><Days>2</Days><StorageClass>DEEP_ARCHIVE</StorageClass></Transition></Rule>");
        let big = [obj(0, 1 << 20)];
        let cands = candidates(&cfg, &c, "a/k", &big, 0);
        assert_eq!(cands.len(), 3);
        assert_eq!(pick(&cands, DAY / 2), None);
        assert_eq!(
            pick(&cands, DAY).unwrap().action,
            Action::Transition("GLACIER_IR".into())
        );
        assert_eq!(
            pick(&cands, 2 * DAY).unwrap().action,
            Action::Transition("DEEP_ARCHIVE".into())
        );
        assert_eq!(pick(&cands, 10 * DAY).unwrap().action, Action::Expire);
        // Other prefixes, small objects and colder classes are left alone.
        assert!(candidates(&cfg, &c, "b/k", &big, 0).is_empty());
        let small = [obj(0, 1000)];
        assert_eq!(candidates(&cfg, &c, "a/k", &small, 0).len(), 1);
        let mut deep = obj(0, 1 << 20);
        deep.class = "DEEP_ARCHIVE";
        assert_eq!(candidates(&cfg, &c, "a/k", &[deep], 0).len(), 1);
    }

    #[test]
    fn noncurrent_versions_count_from_their_successor_and_keep_the_newest() {
        let c = Clock::default();
        let cfg = cfg("<Rule><ID>n</ID><Filter/><Status>Enabled</Status>\
            <NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>");
        let vs = [obj(5 * DAY, 1), obj(3 * DAY, 1), obj(DAY, 1)];
        assert!(candidates(&cfg, &c, "k", &vs, 0).is_empty());
        // The newest noncurrent version is kept.
        assert!(candidates(&cfg, &c, "k", &vs, 1).is_empty());
        let d = candidates(&cfg, &c, "k", &vs, 2);
        assert_eq!(d[0].action, Action::DeleteVersion);
        assert_eq!(d[0].due_ns, 4 * DAY);
    }

    #[test]
    fn lone_delete_markers_are_removed_only_when_asked() {
        let c = Clock::default();
        let marker = Version {
            delete_marker: true,
            ..obj(DAY, 0)
        };
        let eodm = cfg("<Rule><ID>m</ID><Filter/><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>");
        assert_eq!(
            candidates(&eodm, &c, "k", std::slice::from_ref(&marker), 0)[0].action,
            Action::RemoveMarker
        );
        assert!(candidates(&eodm, &c, "k", &[marker, obj(0, 1)], 0).is_empty());
    }

    #[test]
    fn the_expiration_header_names_the_earliest_rule() {
        let c = Clock::default();
        let cfg = cfg("<Rule><ID>late</ID><Filter/><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>\
            <Rule><ID>soon</ID><Filter><Prefix>t</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>");
        let h = expiration_header(&cfg, &c, "tmp", &obj(0, 1)).unwrap();
        assert_eq!(
            h,
            "expiry-date=\"Fri, 02 Jan 1970 00:00:00 GMT\", rule-id=\"soon\""
        );
        let h = expiration_header(&cfg, &c, "x", &obj(0, 1)).unwrap();
        assert!(h.ends_with("rule-id=\"late\""), "{h}");
    }
}
