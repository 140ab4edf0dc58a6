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
        let mut name = Vec::with_capacity(ns.len() + key.len() + 1);
        name.extend_from_slice(ns.as_bytes());
        name.push(0);
        name.extend_from_slice(key.as_bytes());
        let h = crc_fast::crc32_iscsi(&name) as usize % KEY_LOCK_STRIPES;
        self.stripes[h].lock().await
    }
}
