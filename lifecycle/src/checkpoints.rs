//! Checkpoint-aware retention, a Granary rule beyond S3's lifecycle: under
//! a prefix, every "directory" (`<prefix><name>/`) is one checkpoint, and
//! it counts once it holds a completion marker object (`<dir><marker>`),
//! ordered by the marker's time. The newest `keep` complete checkpoints
//! stay as they are (and optionally every `keep_every`-th, counting from
//! the oldest, forever); every object of each older one is transitioned
//! or expired, the checkpoint as a whole. Checkpoints without a marker
//! (still being written) are never touched.
//!
//! The rules are kept apart from the bucket's S3 lifecycle configuration
//! (their own bucket document, admin API and CLI), so a tool that rewrites
//! the lifecycle XML cannot drop them.

use serde::{Deserialize, Serialize};

use crate::config::{Classes, TRANSITION_CLASSES};

/// Key of the checkpoint rules among a bucket's documents.
pub const CHECKPOINTS_KEY: &str = "granary-checkpoint-retention";

/// What happens to a checkpoint that is no longer kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "type"
)]
pub enum CheckpointAction {
    /// Its objects move to this storage class.
    Transition {
        /// A cold class (STANDARD_IA, GLACIER, COLD, ...).
        storage_class: String,
    },
    /// Its objects expire (delete markers in a versioned bucket).
    Expire,
}

/// One checkpoint retention rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRule {
    /// Rule id.
    pub id: String,
    /// Where the checkpoint directories are, e.g. `ckpt/`.
    pub prefix: String,
    /// Name of the completion marker inside a directory, e.g. `COMPLETE`.
    pub marker: String,
    /// How many of the newest complete checkpoints are kept.
    pub keep: u32,
    /// Also keep every this-many-th complete checkpoint (the oldest is the
    /// first) forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_every: Option<u32>,
    /// What happens to the others.
    pub action: CheckpointAction,
}

/// A bucket's checkpoint rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRules {
    /// The rules.
    pub rules: Vec<CheckpointRule>,
}

impl CheckpointRule {
    /// Checks the rule (`remote`: the remote tiers, which are storage
    /// classes too); the error says what is wrong.
    pub fn validate(&self, remote: &[String]) -> Result<(), String> {
        if self.id.is_empty() || self.id.len() > 255 {
            return Err("the id must have 1 to 255 characters".into());
        }
        if self.prefix.is_empty() {
            return Err("give a prefix (e.g. ckpt/): checkpoints are its directories".into());
        }
        if self.marker.is_empty() || self.marker.contains('/') {
            return Err(
                "the marker is an object name inside a checkpoint directory (no '/')".into(),
            );
        }
        if self.keep == 0 {
            return Err("keep at least one checkpoint".into());
        }
        if self.keep_every == Some(0) {
            return Err("keep-every must be at least 1".into());
        }
        if let CheckpointAction::Transition { storage_class } = &self.action {
            if !Classes::Remote(remote).allows(storage_class) {
                return Err(format!(
                    "storage class {storage_class:?} is not one of {}",
                    TRANSITION_CLASSES.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The checkpoint directory `key` belongs to, if it is in one.
    pub fn directory_of<'k>(&self, key: &'k str) -> Option<&'k str> {
        let rest = key.strip_prefix(&self.prefix)?;
        let slash = rest.find('/')?;
        Some(&key[..self.prefix.len() + slash + 1])
    }

    /// Which of `complete` checkpoints (completion times, oldest first)
    /// are kept: the newest `keep`, and every `keep_every`-th.
    pub fn kept(&self, complete: usize) -> Vec<bool> {
        (0..complete)
            .map(|i| {
                i + self.keep as usize >= complete
                    || self.keep_every.is_some_and(|k| (i + 1) % k as usize == 0)
            })
            .collect()
    }
}

impl CheckpointRules {
    /// Every storage class a rule transitions to.
    pub fn transition_classes(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().filter_map(|r| match &r.action {
            CheckpointAction::Transition { storage_class } => Some(storage_class.as_str()),
            CheckpointAction::Expire => None,
        })
    }

    /// Checks every rule and that ids are unique.
    pub fn validate(&self, remote: &[String]) -> Result<(), String> {
        for (i, r) in self.rules.iter().enumerate() {
            r.validate(remote)
                .map_err(|e| format!("rule {}: {e}", r.id))?;
            if self.rules[..i].iter().any(|o| o.id == r.id) {
                return Err(format!("rule id {} is given twice", r.id));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(keep: u32, keep_every: Option<u32>) -> CheckpointRule {
        CheckpointRule {
            id: "r".into(),
            prefix: "ckpt/".into(),
            marker: "COMPLETE".into(),
            keep,
            keep_every,
            action: CheckpointAction::Expire,
        }
    }

    #[test]
    fn the_newest_and_every_kth_are_kept() {
        assert_eq!(rule(2, None).kept(5), [false, false, false, true, true]);
        assert_eq!(
            rule(2, Some(2)).kept(6),
            [false, true, false, true, true, true]
        );
        assert_eq!(rule(3, None).kept(2), [true, true]);
    }

    #[test]
    fn directories_are_the_prefix_s_first_level() {
        let r = rule(1, None);
        assert_eq!(
            r.directory_of("ckpt/step-10/shard-0"),
            Some("ckpt/step-10/")
        );
        assert_eq!(r.directory_of("ckpt/step-10/a/b"), Some("ckpt/step-10/"));
        assert_eq!(r.directory_of("ckpt/loose-file"), None);
        assert_eq!(r.directory_of("other/x/y"), None);
    }

    #[test]
    fn bad_rules_are_refused_and_json_round_trips() {
        assert!(rule(0, None).validate(&[]).is_err());
        assert!(CheckpointRule {
            marker: "a/b".into(),
            ..rule(1, None)
        }
        .validate(&[])
        .is_err());
        let t = CheckpointRule {
            action: CheckpointAction::Transition {
                storage_class: "STANDARD".into(),
            },
            ..rule(1, None)
        };
        assert!(t.validate(&[]).is_err());
        let rules = CheckpointRules {
            rules: vec![
                rule(2, Some(10)),
                CheckpointRule {
                    id: "t".into(),
                    action: CheckpointAction::Transition {
                        storage_class: "COLD".into(),
                    },
                    ..rule(1, None)
                },
            ],
        };
        rules.validate(&[]).unwrap();
        let json = serde_json::to_string(&rules).unwrap();
        assert!(json.contains("\"keepEvery\":10"), "{json}");
        assert_eq!(
            serde_json::from_str::<CheckpointRules>(&json).unwrap(),
            rules
        );
        let twice = CheckpointRules {
            rules: vec![rule(1, None), rule(2, None)],
        };
        assert!(twice.validate(&[]).is_err());
    }
}
