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

    /// Waits for and takes the locks of every `ns/key` in `keys`. Never
    /// waits while holding some of them (it takes all it can, and on a busy
    /// one lets go of everything, waits for that one and starts over), so it
    /// cannot deadlock with writers that nest two single locks.
    pub async fn lock_all<'a>(
        &self,
        ns: &str,
        keys: impl Iterator<Item = &'a str>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut wanted: Vec<usize> = keys.map(|k| stripe(ns, k)).collect();
        wanted.sort_unstable();
        wanted.dedup();
        'again: loop {
            let mut held = Vec::with_capacity(wanted.len());
            for &i in &wanted {
                match self.stripes[i].try_lock() {
                    Ok(g) => held.push(g),
                    Err(_) => {
                        drop(held);
                        drop(self.stripes[i].lock().await);
                        continue 'again;
                    }
                }
            }
            return held;
        }
    }
}

fn stripe(ns: &str, key: &str) -> usize {
    let mut name = Vec::with_capacity(ns.len() + key.len() + 1);
    name.extend_from_slice(ns.as_bytes());
    name.push(0);
    name.extend_from_slice(key.as_bytes());
    crc_fast::crc32_iscsi(&name) as usize % KEY_LOCK_STRIPES
}
