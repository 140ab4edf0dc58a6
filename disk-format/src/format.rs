//! The per-disk format record: which deployment, pool, tier, erasure set and
//! slot a directory belongs to. Written once at formatting, checked at every
//! start so that a directory from elsewhere is never mixed in.

use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::atomic::write_file_atomic;
use crate::error::DiskError;
use crate::types::DiskId;

/// File name of the format record inside a disk directory.
pub const FORMAT_FILE: &str = "format.json";
/// Current format version. Older versions get an explicit migration here.
pub const FORMAT_VERSION: u32 = 1;
const MAGIC: &str = "granary-disk-format";

/// Storage tier of a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Fast media (NVMe); where new objects land.
    Hot,
    /// Dense media (QLC); where lifecycle rules move old objects.
    Cold,
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tier::Hot => "hot",
            Tier::Cold => "cold",
        })
    }
}

/// What a disk knows about its place in the deployment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatRecord {
    /// Deployment this disk belongs to; a disk of another deployment is refused.
    pub deployment_id: Uuid,
    /// This disk's own id.
    pub disk_id: DiskId,
    /// Pool index within the deployment.
    pub pool: u32,
    /// Tier of the pool.
    pub tier: Tier,
    /// Erasure set index within the pool.
    pub set: u32,
    /// Erasure sets in the pool, all of the same width (`set_disks`).
    /// Records written before pools had many sets lack it: one. The
    /// checksum of a one-set record leaves it out, so theirs still match.
    #[serde(default = "one")]
    pub sets: u32,
    /// Slot of this disk within its set (0-based).
    pub position: u32,
    /// Data shards per stripe (k).
    pub data_shards: u32,
    /// Parity shards per stripe (m).
    pub parity_shards: u32,
    /// Ids of every disk of the set by slot, so a slot's history is known.
    pub set_disks: Vec<DiskId>,
}

fn one() -> u32 {
    1
}

/// A one-set record as records were before `sets` existed: what its
/// checksum covers.
#[derive(Serialize)]
struct OneSet<'a> {
    deployment_id: &'a Uuid,
    disk_id: &'a DiskId,
    pool: u32,
    tier: Tier,
    set: u32,
    position: u32,
    data_shards: u32,
    parity_shards: u32,
    set_disks: &'a [DiskId],
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    magic: String,
    version: u32,
    format: FormatRecord,
    /// CRC32C (hex) of the canonical JSON of `format`.
    checksum: String,
}

impl FormatRecord {
    /// Format records for every slot of a new set of `data + parity` disks
    /// in a new deployment's first pool and set.
    pub fn new_set(tier: Tier, data: u32, parity: u32) -> Vec<FormatRecord> {
        let deployment_id = Uuid::new_v4();
        let ids: Vec<DiskId> = (0..data + parity).map(|_| DiskId(Uuid::new_v4())).collect();
        (0..ids.len())
            .map(|slot| FormatRecord {
                deployment_id,
                disk_id: ids[slot],
                pool: 0,
                tier,
                set: 0,
                sets: 1,
                position: slot as u32,
                data_shards: data,
                parity_shards: parity,
                set_disks: ids.clone(),
            })
            .collect()
    }

    /// Width of the erasure set (k + m).
    pub fn set_size(&self) -> usize {
        (self.data_shards + self.parity_shards) as usize
    }

    fn checksum(&self) -> String {
        let body = match self.sets {
            1 => serde_json::to_vec(&OneSet {
                deployment_id: &self.deployment_id,
                disk_id: &self.disk_id,
                pool: self.pool,
                tier: self.tier,
                set: self.set,
                position: self.position,
                data_shards: self.data_shards,
                parity_shards: self.parity_shards,
                set_disks: &self.set_disks,
            }),
            _ => serde_json::to_vec(self),
        }
        .expect("format record serialises");
        format!("{:08x}", crc_fast::crc32_iscsi(&body))
    }

    /// Encodes the record with magic, version and checksum.
    pub fn encode(&self) -> Vec<u8> {
        let env = Envelope {
            magic: MAGIC.to_string(),
            version: FORMAT_VERSION,
            format: self.clone(),
            checksum: self.checksum(),
        };
        let mut out = serde_json::to_vec_pretty(&env).expect("format record serialises");
        out.push(b'\n');
        out
    }

    /// Decodes and verifies a record written by [`FormatRecord::encode`].
    pub fn decode(bytes: &[u8]) -> Result<FormatRecord, DiskError> {
        let env: Envelope = serde_json::from_slice(bytes)
            .map_err(|e| DiskError::corrupt("format record", e.to_string()))?;
        if env.magic != MAGIC {
            return Err(DiskError::corrupt("format record", "wrong magic"));
        }
        if env.version != FORMAT_VERSION {
            return Err(DiskError::Format(format!(
                "format version {} is not supported by this build (it reads version {})",
                env.version, FORMAT_VERSION
            )));
        }
        if env.format.checksum() != env.checksum {
            return Err(DiskError::corrupt("format record", "checksum mismatch"));
        }
        let f = env.format;
        if f.position as usize >= f.set_size() || f.set_disks.len() != f.set_size() {
            return Err(DiskError::corrupt("format record", "slot outside its set"));
        }
        if f.sets == 0 || f.set >= f.sets {
            return Err(DiskError::corrupt("format record", "set outside its pool"));
        }
        Ok(f)
    }

    /// Writes the record into `dir` atomically and durably.
    pub fn write_to(&self, dir: &Path) -> Result<(), DiskError> {
        fs::create_dir_all(dir)?;
        write_file_atomic(&dir.join(FORMAT_FILE), &self.encode(), 0o644)?;
        Ok(())
    }
}

/// What a directory given on the command line turned out to be.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum DirState {
    /// The path does not exist.
    Missing,
    /// The directory exists and is empty: new, or a replaced disk.
    Empty,
    /// A formatted Granary disk.
    Formatted(FormatRecord),
    /// Something else: not empty but without a valid format record.
    Foreign(String),
}

/// Looks at a directory without changing it.
pub fn probe_dir(dir: &Path) -> DirState {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return DirState::Missing,
        Err(e) => return DirState::Foreign(format!("cannot read directory: {e}")),
    };
    let mut any = false;
    for entry in entries.flatten() {
        let name = entry.file_name();
        // lost+found is what a freshly made filesystem holds.
        if name != "lost+found" {
            any = true;
            break;
        }
    }
    if !any {
        return DirState::Empty;
    }
    match fs::read(dir.join(FORMAT_FILE)) {
        Ok(bytes) => match FormatRecord::decode(&bytes) {
            Ok(f) => DirState::Formatted(f),
            Err(e) => DirState::Foreign(format!("unreadable {FORMAT_FILE}: {e}")),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => DirState::Foreign(format!(
            "directory is not empty and has no {FORMAT_FILE}; refusing to use it"
        )),
        Err(e) => DirState::Foreign(format!("cannot read {FORMAT_FILE}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FormatRecord {
        FormatRecord::new_set(Tier::Hot, 2, 2).swap_remove(1)
    }

    #[test]
    fn round_trip_and_probe() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        assert!(matches!(probe_dir(&d), DirState::Missing));
        fs::create_dir(&d).unwrap();
        assert!(matches!(probe_dir(&d), DirState::Empty));
        let f = sample();
        f.write_to(&d).unwrap();
        match probe_dir(&d) {
            DirState::Formatted(g) => assert_eq!(g, f),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_format_written_before_sets_were_recorded_still_opens() {
        // A record written by the release before the `sets` field existed
        // (its checksum covers the fields it had): one set, and written
        // again it is byte for byte what it was.
        let old = include_str!("testdata/format-one-set.json");
        let f = FormatRecord::decode(old.as_bytes()).unwrap();
        assert_eq!((f.set, f.sets, f.set_size()), (0, 1, 4));
        let text = String::from_utf8(f.encode()).unwrap();
        assert!(text.contains("\"checksum\": \"f717125d\""), "{text}");
        assert_eq!(FormatRecord::decode(&f.encode()).unwrap(), f);
        let many = FormatRecord {
            set: 2,
            sets: 4,
            ..f
        };
        let text = String::from_utf8(many.encode()).unwrap();
        assert!(text.contains("\"sets\": 4"), "{text}");
        assert_eq!(FormatRecord::decode(text.as_bytes()).unwrap(), many);
        let outside = FormatRecord { set: 4, ..many };
        assert!(FormatRecord::decode(&outside.encode()).is_err());
    }

    #[test]
    fn detects_tampering_and_foreign_dirs() {
        let f = sample();
        let mut text = String::from_utf8(f.encode()).unwrap();
        text = text.replace("\"position\": 1", "\"position\": 2");
        assert!(matches!(
            FormatRecord::decode(text.as_bytes()),
            Err(DiskError::Corrupt { .. })
        ));
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("photo.jpg"), b"x").unwrap();
        assert!(matches!(probe_dir(dir.path()), DirState::Foreign(_)));
    }
}
