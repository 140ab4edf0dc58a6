//! In-process locks on object names: serialise the commit phase of writes
//! to one key (data streaming runs unlocked; only record writes wait).

use tokio::sync::{Mutex, MutexGuard};

/// Number of lock stripes; two names share a lock only when they hash alike.
const KEY_LOCK_STRIPES: usize = 1024;

/// A striped table of async mutexes keyed by (namespace, key).
pub struct KeyLocks {
    stripes: Vec<Mutex<()>>,
}

impl Default for KeyLocks {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyLocks {
    /// A fresh table.
    pub fn new() -> KeyLocks {
        KeyLocks {
            stripes: (0..KEY_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// Waits for and takes the lock of `ns/key`.
    pub async fn lock(&self, ns: &str, key: &str) -> MutexGuard<'_, ()> {
        self.stripes[stripe(ns, key)].lock().await
    }

    /// Waits for and takes the locks of every `ns/key` in `keys`, in
    /// ascending stripe order. Deadlock-free because every other caller
    /// holds at most one lock at a time (no code path waits for a second
    /// lock while holding one).
    pub async fn lock_all<'a>(
        &self,
        ns: &str,
        keys: impl Iterator<Item = &'a str>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut wanted: Vec<usize> = keys.map(|k| stripe(ns, k)).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut held = Vec::with_capacity(wanted.len());
        for i in wanted {
            held.push(self.stripes[i].lock().await);
        }
        held
    }
}

fn stripe(ns: &str, key: &str) -> usize {
    let mut name = Vec::with_capacity(ns.len() + key.len() + 1);
    name.extend_from_slice(ns.as_bytes());
    name.push(0);
    name.extend_from_slice(key.as_bytes());
    crc_fast::crc32_iscsi(&name) as usize % KEY_LOCK_STRIPES
}
