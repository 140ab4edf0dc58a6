//! Listing a disk's shard files: `shards/xx/<id>`, fanned out over 256
//! directories by the id's last byte. A listing goes directory by
//! directory and by id within each, so it can continue after any id.

use std::path::Path;

use uuid::Uuid;

use crate::error::DiskError;
use crate::types::{ShardFile, ShardId};

/// The directory (by index) a shard file lives in.
pub(crate) fn dir_index(id: ShardId) -> usize {
    id.0.as_bytes()[15] as usize
}

/// Shard files after `after` in listing order, at most `max`.
pub(crate) fn list(
    shards: &Path,
    after: Option<ShardId>,
    max: usize,
) -> Result<Vec<ShardFile>, DiskError> {
    let first = after.map_or(0, dir_index);
    let mut out = Vec::new();
    for d in first..=255 {
        let entries = match std::fs::read_dir(shards.join(format!("{d:02x}"))) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry?;
            let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|n| Uuid::try_parse(n).ok())
                .map(ShardId)
            else {
                continue;
            };
            if after.is_some_and(|a| d == first && id <= a) {
                continue;
            }
            // A file deleted meanwhile is simply not listed.
            if let Ok(m) = entry.metadata() {
                files.push(ShardFile { id, bytes: m.len() });
            }
        }
        files.sort_by_key(|f| f.id);
        for f in files {
            out.push(f);
            if out.len() == max {
                return Ok(out);
            }
        }
    }
    Ok(out)
}
