//! Opening an erasure set's disks, wherever they are: formats a new set,
//! recognises its own disks, formats an empty disk in a known slot as a
//! replacement, and refuses anything that contradicts the stored formats
//! (another deployment's disk, a swapped slot, another parity or tier).
//! Local directories and nodes' disks differ only in how a slot is probed,
//! formatted and opened ([`Slots`]).

use std::sync::Arc;

use disk_engine::{DirState, Disk, DiskId, FormatRecord, LocalDisk, Tier};
use uuid::Uuid;

use crate::error::Error;

/// How one kind of disk slot is reached. Blocking.
pub(crate) trait Slots {
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
    ) -> Result<(), Error>;
    /// The disk of a slot after formatting, `record` being the format the
    /// set expects there; `None` for a local slot that cannot be opened now
    /// (it is then offline).
    fn open(&self, slot: usize, record: &FormatRecord) -> Result<OpenedSlot, Error>;
}

/// A slot's disk once the set is open.
pub(crate) struct OpenedSlot {
    pub disk: Arc<dyn Disk>,
    pub local: Option<Arc<LocalDisk>>,
}

/// What the caller wants the set to be.
pub(crate) struct SetWant {
    /// Parity shards; `None` for the default for the width.
    pub parity: Option<usize>,
    /// Tier of the pool.
    pub tier: Tier,
    /// Pool index in the deployment.
    pub pool: u32,
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
}

fn setup(msg: String) -> Error {
    Error::Setup(msg)
}

/// Opens (formatting where needed) the set behind `slots`.
pub(crate) fn open_set(slots: &dyn Slots, want: &SetWant) -> Result<LocalSet, Error> {
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

    // The format of `slot` in the set whose disks are `set_disks`.
    let slot_record = |slot: usize, set_disks: &[DiskId]| FormatRecord {
        disk_id: set_disks[slot],
        position: slot as u32,
        set_disks: set_disks.to_vec(),
        ..reference.clone()
    };
    let mut set_disks = reference.set_disks.clone();
    let mut replaced = Vec::new();
    for (slot, st) in states.iter().enumerate() {
        if let DirState::Empty = st {
            set_disks[slot] = DiskId(Uuid::new_v4());
            let f = slot_record(slot, &set_disks);
            slots.write_format(slot, &f, None)?;
            tracing::warn!(disk = %slots.show(slot), slot = slot + 1, "empty disk formatted as a replacement; repair will refill it");
            replaced.push(slot);
        }
    }
    if !replaced.is_empty() {
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
        reference.parity_shards as usize,
        reference.deployment_id,
        &expected,
    )?;
    set.replaced = replaced;
    Ok(set)
}

fn format_new(slots: &dyn Slots, want: &SetWant) -> Result<LocalSet, Error> {
    let n = slots.count();
    let parity = want.parity.unwrap_or(want.default_parity);
    let mut formats = FormatRecord::new_set(want.tier, (n - parity) as u32, parity as u32);
    for f in &mut formats {
        f.pool = want.pool;
        f.deployment_id = want.deployment.unwrap_or(f.deployment_id);
    }
    let deployment_id = formats[0].deployment_id;
    for (slot, f) in formats.iter().enumerate() {
        slots.write_format(slot, f, None)?;
    }
    tracing::info!(disks = n, data = n - parity, parity, tier = %want.tier, %deployment_id, "formatted a new pool");
    open_all(slots, parity, deployment_id, &formats)
}

fn open_all(
    slots: &dyn Slots,
    parity: usize,
    deployment_id: Uuid,
    expected: &[FormatRecord],
) -> Result<LocalSet, Error> {
    let mut disks = Vec::new();
    let mut local = Vec::new();
    for (slot, record) in expected.iter().enumerate() {
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
    })
}
