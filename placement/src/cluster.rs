//! Opening a cluster's pools (see `pool_layout::cluster_file` for the
//! cluster file): each pool's erasure sets over the nodes' disks,
//! formatting them on first start.

use std::collections::BTreeMap;
use std::sync::Arc;

use disk_engine::rpc::{NodeAccess, NodeClient, RemoteDisk};
use disk_engine::{DirState, DiskId, FormatRecord};
use erasure_set::{open_set, LocalSet, OpenedSlot, SetError, SetWant, Slots};
use pool_layout::{ClusterMap, NodeDisk};

use crate::error::Error;

fn bad(msg: impl Into<String>) -> Error {
    Error::Setup(msg.into())
}

/// The slots of a pool on its nodes.
struct RemoteSlots {
    disks: Vec<(Arc<NodeClient>, NodeDisk)>,
    /// What each disk held when the pool was opened (or why it did not
    /// answer), asked once of all of them at the same time.
    probed: Vec<Result<DirState, String>>,
    runtime: tokio::runtime::Handle,
}

impl Slots for RemoteSlots {
    fn count(&self) -> usize {
        self.disks.len()
    }

    fn show(&self, slot: usize) -> String {
        self.disks[slot].1.to_string()
    }

    fn probe(&self, slot: usize) -> DirState {
        match &self.probed[slot] {
            Ok(s) => s.clone(),
            Err(e) => {
                tracing::warn!(disk = %self.disks[slot].1, error = %e, "disk not reachable");
                DirState::Missing
            }
        }
    }

    fn write_format(
        &self,
        slot: usize,
        record: &FormatRecord,
        expect: Option<DiskId>,
    ) -> Result<(), SetError> {
        let (node, d) = &self.disks[slot];
        self.runtime
            .block_on(node.format(&d.path, record, expect))
            .map_err(|e| SetError::Setup(format!("cannot format {d}: {e}")))
    }

    fn open(&self, slot: usize, record: &FormatRecord) -> Result<OpenedSlot, SetError> {
        let (node, d) = &self.disks[slot];
        Ok(OpenedSlot {
            disk: Arc::new(RemoteDisk::new(node.clone(), &d.path, record)),
            local: None,
        })
    }

    fn missing_may_answer_later(&self) -> bool {
        // A node that does not answer may still be starting.
        true
    }
}

/// Opens pool `index` of `map` over its nodes, formatting it on first
/// start: its sets in order. A new pool is only formatted when every disk
/// answers; once any disk holds a format, a set none of whose disks does
/// is offline (see `local_pool.rs`). Blocking:
/// call it from a blocking thread of `runtime`.
pub fn open_cluster_pool(
    map: &ClusterMap,
    index: usize,
    access: &NodeAccess,
    runtime: tokio::runtime::Handle,
) -> Result<Vec<LocalSet>, Error> {
    let pool = &map.pools[index];
    let mut nodes: BTreeMap<&str, Arc<NodeClient>> = BTreeMap::new();
    let disks: Vec<(Arc<NodeClient>, NodeDisk)> = pool
        .disks
        .iter()
        .map(|d| {
            let node = nodes
                .entry(&d.node)
                .or_insert_with(|| NodeClient::with_access(&d.node, access))
                .clone();
            (node, d.clone())
        })
        .collect();
    let probed: Vec<Result<DirState, String>> =
        runtime.block_on(futures::future::join_all(disks.iter().map(
            |(node, d)| async move { node.probe(&d.path).await.map_err(|e| e.to_string()) },
        )));
    let formatted = |p: &Result<DirState, String>| matches!(p, Ok(DirState::Formatted(_)));
    let unreachable: Vec<String> = disks
        .iter()
        .zip(&probed)
        .filter_map(|((_, d), p)| p.as_ref().err().map(|e| format!("{d} ({e})")))
        .collect();
    if !probed.iter().any(formatted) && !unreachable.is_empty() {
        return Err(bad(format!(
            "a new pool is formatted only when all its disks answer; not answering: {}",
            unreachable.join(", ")
        )));
    }
    let width = pool.set_width;
    let sets = disks.len() / width;
    let exists = probed.iter().any(formatted);
    let mut opened = Vec::with_capacity(sets);
    for s in 0..sets {
        let slots = RemoteSlots {
            disks: disks[s * width..(s + 1) * width].to_vec(),
            probed: probed[s * width..(s + 1) * width].to_vec(),
            runtime: runtime.clone(),
        };
        let want = SetWant {
            parity: Some(pool.parity),
            tier: pool.tier,
            pool: index as u32,
            set: s as u32,
            sets: sets as u32,
            pool_exists: exists,
            deployment: Some(map.deployment),
            default_parity: pool.parity,
            parity_name: "the cluster file's parity",
        };
        opened.push(open_set(&slots, &want)?);
    }
    Ok(opened)
}
