//! The scanner's pass of checkpoint retention rules (see
//! [`crate::checkpoints`]): group the current objects under each rule's
//! prefix into checkpoint directories, order the complete ones by their
//! marker's time, and transition or expire every object of those no longer
//! kept — the marker last, so a pass cut short leaves the checkpoint
//! complete and the next pass finishes it.

use std::collections::BTreeMap;

use placement::{Error, ListStart, ObjectSummary, VersionRef};

use crate::checkpoints::{CheckpointAction, CheckpointRules};
use crate::eval::{class_rank, Action};
use crate::scanner::{action_name, Plan, Scanner, Seen, PAGE_KEYS};

impl Scanner {
    /// Applies (`act`) or plans every checkpoint rule of `bucket`.
    pub(crate) async fn checkpoints(
        &self,
        bucket: &str,
        rules: &CheckpointRules,
        act: bool,
        plan: &mut Plan,
    ) -> Result<(), Error> {
        for rule in &rules.rules {
            let stats_id = format!("checkpoint:{}", rule.id);
            let mut dirs: BTreeMap<String, Vec<(String, ObjectSummary)>> = BTreeMap::new();
            let mut start = ListStart::Beginning;
            loop {
                let page = self
                    .store()
                    .list_objects(bucket, &rule.prefix, start, PAGE_KEYS)
                    .await?;
                for (key, summary) in page.entries {
                    if let Some(dir) = rule.directory_of(&key) {
                        dirs.entry(dir.to_string())
                            .or_default()
                            .push((key, summary));
                    }
                }
                match page.next {
                    Some(next) => start = ListStart::After(next.into_bytes()),
                    None => break,
                }
            }
            let mut complete: Vec<(u64, &str)> = dirs
                .iter()
                .filter_map(|(dir, objects)| {
                    let marker = format!("{dir}{}", rule.marker);
                    objects
                        .iter()
                        .find(|(k, _)| *k == marker)
                        .map(|(_, s)| (s.mtime_ns, dir.as_str()))
                })
                .collect();
            complete.sort();
            let kept = rule.kept(complete.len());
            for (&(_, dir), keep) in complete.iter().zip(kept) {
                if keep {
                    continue;
                }
                let marker = format!("{dir}{}", rule.marker);
                let mut objects: Vec<&(String, ObjectSummary)> = dirs[dir].iter().collect();
                objects.sort_by_key(|(k, _)| *k == marker);
                for (key, summary) in objects {
                    let class = summary.meta.storage_class.as_deref().unwrap_or("STANDARD");
                    let action = match &rule.action {
                        CheckpointAction::Transition { storage_class } => {
                            if class_rank(storage_class) <= class_rank(class) {
                                continue;
                            }
                            Action::Transition(storage_class.clone())
                        }
                        CheckpointAction::Expire => Action::Expire,
                    };
                    if !act {
                        plan.note(&stats_id, action_name(&action), key, summary.size);
                        continue;
                    }
                    let seen = Seen {
                        version: VersionRef::of_id(summary.version_id),
                        mtime_ns: summary.mtime_ns,
                        size: summary.size,
                        delete_marker: false,
                        class: class.to_string(),
                        tags: None,
                    };
                    self.take(bucket, key, &seen, &stats_id, &action).await;
                }
            }
        }
        Ok(())
    }
}
