//! Opening an erasure set's disks, wherever they are: formats a new set,
//! recognises its own disks, formats an empty disk in a known slot as a
//! replacement, and refuses anything that contradicts the stored formats
//! (another deployment's disk, a swapped slot, another parity or tier).
//! Local directories and nodes' disks differ only in how a slot is probed,
//! formatted and opened ([`Slots`]).
//!
//! Formatting is decided per set, never over data that may still exist:
//!
//! - an empty slot of a formatted set is formatted as a replacement only
//!   while the set keeps at least a read quorum of formatted disks. With
//!   fewer, the empty directories are more likely failed mounts or a
//!   wrong path than new disks, and formatting them would start an empty
//!   set over the data still on the missing ones: the set is opened
//!   *offline* instead ([`LocalSet::offline`] says why) — none of its
//!   disks is opened or written, and it comes back as it was once the
//!   disks do;
//! - an empty directory that is not a mount point, in a set whose other
//!   disks each are one, is a mount that failed: its slot stays offline
//!   and unformatted (directories sharing one filesystem are formatted as
//!   usual).

use std::sync::Arc;

use disk_engine::{DirState, Disk, DiskId, FormatRecord, LocalDisk, OfflineDisk, Tier};
use uuid::Uuid;

use crate::error::SetError;
use crate::quorum::Quorum;

/// How one kind of disk slot is reached. Blocking.
pub trait Slots {
    /// Number of slots (the set's width).
    fn count(&self) -> usize;
    /// The slot's location, for messages.
    fn show(&self, slot: usize) -> String;
    /// What the slot holds now (`Missing` also for an unreachable one).
    fn probe(&self, slot: usize) -> DirState;
    /// Writes `record` into the slot if it still holds `expect` (`None`:
    /// nothing).
    fn write_format(
        &self,
        slot: usize,
        record: &FormatRecord,
        expect: Option<DiskId>,
    ) -> Result<(), SetError>;
    /// The disk of a slot after formatting, `record` being the format the
    /// set expects there; `None` for a local slot that cannot be opened now
    /// (it is then offline).
    fn open(&self, slot: usize, record: &FormatRecord) -> Result<OpenedSlot, SetError>;
    /// Whether the slot is a mount point of its own (`None`: unknown, as
    /// for a node's disk).
    fn mount_point(&self, _slot: usize) -> Option<bool> {
        None
    }
    /// Whether a `Missing` slot may only be unreachable for now (a node
    /// still starting) rather than absent.
    fn missing_may_answer_later(&self) -> bool {
        false
    }
}

/// A slot's disk once the set is open.
pub struct OpenedSlot {
    /// The disk, wherever it is.
    pub disk: Arc<dyn Disk>,
    /// The same disk when it is a local directory (its shard I/O mode and
    /// usage are read from it).
    pub local: Option<Arc<LocalDisk>>,
}

/// What the caller wants the set to be.
pub struct SetWant {
    /// Parity shards; `None` for the default for the width.
    pub parity: Option<usize>,
    /// Tier of the pool.
    pub tier: Tier,
    /// Pool index in the deployment.
    pub pool: u32,
    /// Index of this set in its pool.
    pub set: u32,
    /// Sets in the pool (1 for a pool formatted before pools had many).
    pub sets: u32,
    /// Whether other sets of the pool are formatted already: a set none
    /// of whose disks holds its format is then not formatted as new (its
    /// disks are more likely failed mounts than new), it is offline.
    pub pool_exists: bool,
    /// The deployment the set must belong to (`None`: any, or a new one).
    pub deployment: Option<Uuid>,
    /// Parity of a new set when `parity` is `None`.
    pub default_parity: usize,
    /// What the caller calls the parity setting, for messages.
    pub parity_name: &'static str,
}

/// The opened set: disks by slot (offline slots included) and its parity.
pub struct LocalSet {
    /// One disk per slot; missing ones are offline disks.
    pub disks: Vec<Arc<dyn Disk>>,
    /// The local disks that opened, for shutdown flushing and tests.
    pub local: Vec<Option<Arc<LocalDisk>>>,
    /// Parity shards (m).
    pub parity: usize,
    /// Deployment id shared by every disk.
    pub deployment_id: Uuid,
    /// Slots whose empty disk was formatted as a replacement now.
    pub replaced: Vec<usize>,
    /// Whether the set was formatted now (a new deployment or pool).
    pub created: bool,
    /// Why the set is offline (its disks were not opened), naming it and
    /// its missing disks; `None` for a set that opened.
    pub offline: Option<String>,
}

/// How set `set` (0-based) of pool `pool` is named in messages.
pub fn set_name(pool: u32, set: u32) -> String {
    format!("erasure set {} of pool {pool}", set + 1)
}

fn setup(msg: String) -> SetError {
    SetError::Setup(msg)
}

/// Opens (formatting where needed) the set behind `slots`.
pub fn open_set(slots: &dyn Slots, want: &SetWant) -> Result<LocalSet, SetError> {
    let n = slots.count();
    let states: Vec<DirState> = (0..n).map(|i| slots.probe(i)).collect();
    for (slot, st) in states.iter().enumerate() {
        if let DirState::Foreign(why) = st {
            return Err(setup(format!("{}: {why}", slots.show(slot))));
        }
    }
    let formatted: Vec<(usize, &FormatRecord)> = states
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            DirState::Formatted(f) => Some((i, f)),
            _ => None,
        })
        .collect();

    let Some(&(first_slot, reference)) = formatted.first() else {
        if want.pool_exists {
            let deployment = want.deployment.unwrap_or_default();
            return Ok(offline_set(
                slots,
                want,
                &states,
                0,
                want.default_parity,
                deployment,
            ));
        }
        return format_new(slots, want);
    };
    let reference = reference.clone();
    for &(slot, f) in &formatted {
        let dir = slots.show(slot);
        if f.deployment_id != reference.deployment_id {
            return Err(setup(format!(
                "{dir} belongs to deployment {} but {} belongs to {}; refusing to mix disks of two deployments",
                f.deployment_id,
                slots.show(first_slot),
                reference.deployment_id
            )));
        }
        if f.set_size() != n {
            return Err(setup(format!(
                "{dir} was formatted as one of {} disks, but {n} were given",
                f.set_size()
            )));
        }
        if f.position as usize != slot {
            return Err(setup(format!(
                "{dir} is disk {} of its set but was given in position {}; give the disks in their original order",
                f.position + 1,
                slot + 1
            )));
        }
        if f.set != want.set || f.sets != want.sets {
            return Err(setup(format!(
                "{dir} is a disk of erasure set {} of {} in its pool but was given in set {} of {}; \
                 give the disks in their original order",
                f.set + 1,
                f.sets,
                want.set + 1,
                want.sets
            )));
        }
        if f.parity_shards != reference.parity_shards
            || f.tier != reference.tier
            || f.pool != reference.pool
        {
            return Err(setup(format!(
                "{dir} disagrees with the other disks' format"
            )));
        }
    }
    if let Some(p) = want.parity {
        if p != reference.parity_shards as usize {
            return Err(setup(format!(
                "these disks were formatted with parity {}; started with {} {p}. Start without it or with {} {}",
                reference.parity_shards, want.parity_name, want.parity_name, reference.parity_shards
            )));
        }
    }
    if want.tier != reference.tier {
        return Err(setup(format!(
            "these disks were formatted as the {} tier; started as {}",
            reference.tier, want.tier
        )));
    }
    if let Some(dep) = want.deployment.filter(|d| *d != reference.deployment_id) {
        return Err(setup(format!(
            "{} belongs to deployment {} but the deployment is {dep}; refusing to mix disks of two deployments",
            slots.show(first_slot),
            reference.deployment_id
        )));
    }
    if want.pool != reference.pool {
        return Err(setup(format!(
            "{} was formatted as pool {} but given as pool {}",
            slots.show(first_slot),
            reference.pool,
            want.pool
        )));
    }

    // Empty slots that are failed mounts stay offline and unformatted.
    let mounted = |slot: usize| slots.mount_point(slot);
    let all_mounted = formatted
        .iter()
        .all(|&(slot, _)| mounted(slot) == Some(true));
    let mut failed_mounts = Vec::new();
    let mut empty = Vec::new();
    for (slot, st) in states.iter().enumerate() {
        if let DirState::Empty = st {
            if all_mounted && mounted(slot) == Some(false) {
                tracing::error!(disk = %slots.show(slot), slot = slot + 1, "{}", failed_mount(&slots.show(slot)));
                failed_mounts.push(slot);
            } else {
                empty.push(slot);
            }
        }
    }
    let parity = reference.parity_shards as usize;
    let read_quorum = Quorum::for_layout(n - parity, parity).read;
    if !empty.is_empty() && formatted.len() < read_quorum {
        let silent = states
            .iter()
            .filter(|s| matches!(s, DirState::Missing))
            .count();
        if silent > 0 && slots.missing_may_answer_later() {
            // Its formatted disks may be among those not answering yet:
            // the caller tries again (a gateway, until its deadline).
            return Err(setup(format!(
                "{}: only {} of its {n} disks answer with its format and {silent} do not answer; \
                 not formatting its empty disks until they do",
                set_name(want.pool, want.set),
                formatted.len()
            )));
        }
        return Ok(offline_set(
            slots,
            want,
            &states,
            formatted.len(),
            parity,
            reference.deployment_id,
        ));
    }

    // The format of `slot` in the set whose disks are `set_disks`.
    let slot_record = |slot: usize, set_disks: &[DiskId]| FormatRecord {
        disk_id: set_disks[slot],
        position: slot as u32,
        set_disks: set_disks.to_vec(),
        ..reference.clone()
    };
    let mut set_disks = reference.set_disks.clone();
    for &slot in &empty {
        set_disks[slot] = DiskId(Uuid::new_v4());
        let f = slot_record(slot, &set_disks);
        slots.write_format(slot, &f, None)?;
        tracing::warn!(disk = %slots.show(slot), slot = slot + 1, "empty disk formatted as a replacement; repair will refill it");
    }
    if !empty.is_empty() {
        // Every formatted disk learns the new ids of its set.
        for &(slot, f) in &formatted {
            let updated = FormatRecord {
                set_disks: set_disks.clone(),
                ..f.clone()
            };
            slots.write_format(slot, &updated, Some(f.disk_id))?;
        }
    }
    let expected: Vec<FormatRecord> = (0..n).map(|slot| slot_record(slot, &set_disks)).collect();
    let mut set = open_all(
        slots,
        parity,
        reference.deployment_id,
        &expected,
        &failed_mounts,
    )?;
    set.replaced = empty;
    Ok(set)
}

/// Why an empty directory was not formatted.
fn failed_mount(dir: &str) -> String {
    format!(
        "{dir} is empty and on its parent's filesystem while the set's other disks are mount points of their own: \
         a failed mount? Not formatting it. Mount the disk there (a new disk too) and restart"
    )
}

/// A set with too few formatted disks, opened offline: none of its disks
/// is opened or written.
fn offline_set(
    slots: &dyn Slots,
    want: &SetWant,
    states: &[DirState],
    formatted: usize,
    parity: usize,
    deployment_id: Uuid,
) -> LocalSet {
    let n = slots.count();
    let read_quorum = Quorum::for_layout(n - parity, parity).read;
    let why = set_offline_reason(slots, want, states, formatted, read_quorum);
    tracing::error!(set = %set_name(want.pool, want.set), "{why}");
    let disks = (0..n)
        .map(|slot| {
            Arc::new(OfflineDisk::new(slots.show(slot), "its set is offline")) as Arc<dyn Disk>
        })
        .collect();
    LocalSet {
        disks,
        local: vec![None; n],
        parity,
        deployment_id,
        replaced: Vec::new(),
        created: false,
        offline: Some(why),
    }
}

/// Why a set with too few formatted disks is not formatted, naming it and
/// each slot that lacks its format.
fn set_offline_reason(
    slots: &dyn Slots,
    want: &SetWant,
    states: &[DirState],
    formatted: usize,
    read_quorum: usize,
) -> String {
    let missing: Vec<String> = states
        .iter()
        .enumerate()
        .filter_map(|(slot, st)| {
            let what = match st {
                DirState::Empty => "empty",
                DirState::Missing => "missing",
                _ => return None,
            };
            Some(format!("{} ({what})", slots.show(slot)))
        })
        .collect();
    format!(
        "{} ({}) is offline: only {formatted} of its {} disks hold its format and reading it needs {read_quorum}; \
         not formatting empty disks over data the others may still hold. Missing or empty: {}. \
         Bring those disks back (check their mounts) and restart",
        set_name(want.pool, want.set),
        want.tier,
        states.len(),
        missing.join(", ")
    )
}

fn format_new(slots: &dyn Slots, want: &SetWant) -> Result<LocalSet, SetError> {
    let n = slots.count();
    let parity = want.parity.unwrap_or(want.default_parity);
    let mut formats = FormatRecord::new_set(want.tier, (n - parity) as u32, parity as u32);
    let deployment = want.deployment.unwrap_or(formats[0].deployment_id);
    for f in &mut formats {
        f.pool = want.pool;
        f.set = want.set;
        f.sets = want.sets;
        f.deployment_id = deployment;
    }
    let deployment_id = formats[0].deployment_id;
    for (slot, f) in formats.iter().enumerate() {
        slots.write_format(slot, f, None)?;
    }
    tracing::info!(disks = n, data = n - parity, parity, tier = %want.tier, %deployment_id, set = %set_name(want.pool, want.set), "formatted a new erasure set");
    let mut set = open_all(slots, parity, deployment_id, &formats, &[])?;
    set.created = true;
    Ok(set)
}

fn open_all(
    slots: &dyn Slots,
    parity: usize,
    deployment_id: Uuid,
    expected: &[FormatRecord],
    failed_mounts: &[usize],
) -> Result<LocalSet, SetError> {
    let mut disks = Vec::new();
    let mut local = Vec::new();
    for (slot, record) in expected.iter().enumerate() {
        if failed_mounts.contains(&slot) {
            let why = failed_mount(&slots.show(slot));
            disks.push(Arc::new(OfflineDisk::new(slots.show(slot), why)) as Arc<dyn Disk>);
            local.push(None);
            continue;
        }
        let opened = slots.open(slot, record)?;
        disks.push(opened.disk);
        local.push(opened.local);
    }
    Ok(LocalSet {
        disks,
        local,
        parity,
        deployment_id,
        replaced: Vec::new(),
        created: false,
        offline: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    /// Slots whose states and mount points the test sets; formats written
    /// are recorded.
    struct Given {
        states: Vec<DirState>,
        mounted: Vec<bool>,
        written: Mutex<Vec<usize>>,
    }

    impl Slots for Given {
        fn count(&self) -> usize {
            self.states.len()
        }
        fn show(&self, slot: usize) -> String {
            format!("/mnt/d{slot}")
        }
        fn probe(&self, slot: usize) -> DirState {
            self.states[slot].clone()
        }
        fn write_format(
            &self,
            slot: usize,
            _: &FormatRecord,
            _: Option<DiskId>,
        ) -> Result<(), SetError> {
            self.written.lock().push(slot);
            Ok(())
        }
        fn open(&self, slot: usize, _: &FormatRecord) -> Result<OpenedSlot, SetError> {
            Ok(OpenedSlot {
                disk: Arc::new(OfflineDisk::new(self.show(slot), "opened")),
                local: None,
            })
        }
        fn mount_point(&self, slot: usize) -> Option<bool> {
            Some(self.mounted[slot])
        }
    }

    fn want() -> SetWant {
        SetWant {
            parity: None,
            tier: Tier::Hot,
            pool: 0,
            set: 0,
            sets: 1,
            pool_exists: false,
            deployment: None,
            default_parity: 2,
            parity_name: "--parity",
        }
    }

    fn given(empty: &[usize], mounted: [bool; 4]) -> Given {
        let formats = FormatRecord::new_set(Tier::Hot, 2, 2);
        Given {
            states: (0..4)
                .map(|i| match empty.contains(&i) {
                    true => DirState::Empty,
                    false => DirState::Formatted(formats[i].clone()),
                })
                .collect(),
            mounted: mounted.to_vec(),
            written: Mutex::new(Vec::new()),
        }
    }

    #[test]
    fn an_empty_directory_on_its_parents_filesystem_beside_mounted_disks_is_a_failed_mount() {
        // The others are mount points, slot 3 is not: not formatted, offline.
        let g = given(&[3], [true, true, true, false]);
        let set = open_set(&g, &want()).unwrap();
        assert!(set.offline.is_none());
        assert!(set.replaced.is_empty());
        assert!(g.written.lock().is_empty());
        let why = futures::executor::block_on(set.disks[3].health());
        assert!(format!("{why:?}").contains("failed mount"), "{why:?}");
        // Directories on one filesystem are formatted as usual.
        let g = given(&[3], [false; 4]);
        let set = open_set(&g, &want()).unwrap();
        assert_eq!(set.replaced, vec![3]);
        assert_eq!(*g.written.lock(), vec![3, 0, 1, 2]);
        // So is a new disk mounted in the slot.
        let g = given(&[3], [true; 4]);
        assert_eq!(open_set(&g, &want()).unwrap().replaced, vec![3]);
    }

    #[test]
    fn a_set_below_its_read_quorum_is_not_formatted() {
        let g = given(&[1, 2, 3], [false; 4]);
        let set = open_set(&g, &want()).unwrap();
        assert!(g.written.lock().is_empty());
        let why = set.offline.unwrap();
        assert!(why.contains("only 1 of its 4 disks"), "{why}");
        assert!(
            why.contains("/mnt/d1 (empty), /mnt/d2 (empty), /mnt/d3 (empty)"),
            "{why}"
        );
    }
}
