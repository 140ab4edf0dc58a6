//! Locks on object names: serialise the commit phase of writes to one key
//! (data streaming runs unlocked; only record writes wait), including its
//! checks (conditional writes, multi-object deletes, version rewrites).
//!
//! In one process a striped table of async mutexes suffices. When several
//! gateways share the set's disks ([`KeyLocks::share`]), a name is also
//! leased on a majority of the set's disks before the guard is handed out,
//! and renewed while it is held: two gateways can never both hold a
//! majority, so they take turns exactly as two tasks of one process do.
//! This is the quorum-lease scheme of MinIO's dsync, on the disks the data
//! lives on, so it needs no coordination service and is as available as
//! writes themselves (a majority of disks).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use disk_engine::Disk;
use futures::future::join_all;
use tokio::sync::{Mutex, MutexGuard};
use uuid::Uuid;

use crate::error::SetError;

/// Number of lock stripes; two names share a lock only when they hash alike.
const KEY_LOCK_STRIPES: usize = 1024;
/// How long a lease lasts unless renewed; a gateway that dies holding one
/// blocks its names at most this long.
const LEASE_TTL: Duration = Duration::from_secs(30);
/// How often a held lease is renewed.
pub const LEASE_RENEWAL: Duration = Duration::from_secs(10);
/// How long to keep trying for a majority before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// A striped table of async mutexes keyed by (namespace, key), with quorum
/// leases on the set's disks once shared.
pub struct KeyLocks {
    stripes: Vec<Mutex<()>>,
    shared: OnceLock<Arc<Vec<Arc<dyn Disk>>>>,
}

/// A held lock; dropping it releases the name (locally at once, and its
/// leases in the background).
pub struct KeyGuard<'a> {
    _local: Vec<MutexGuard<'a, ()>>,
    _lease: Option<Lease>,
}

struct Lease {
    names: Vec<Vec<u8>>,
    owner: Uuid,
    disks: Arc<Vec<Arc<dyn Disk>>>,
    renew: tokio::task::JoinHandle<()>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renew.abort();
        let (names, owner, disks) = (
            std::mem::take(&mut self.names),
            self.owner,
            self.disks.clone(),
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(release(disks, names, owner));
        }
    }
}

/// Gives back the leases on `names` that `owner` holds on `disks`.
pub async fn release(disks: Arc<Vec<Arc<dyn Disk>>>, names: Vec<Vec<u8>>, owner: Uuid) {
    join_all(disks.iter().map(|d| d.release_leases(names.clone(), owner))).await;
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
            shared: OnceLock::new(),
        }
    }

    /// From now on, also lease every locked name on a majority of `disks`
    /// (for sets that other processes write too).
    pub fn share(&self, disks: Vec<Arc<dyn Disk>>) {
        let _ = self.shared.set(Arc::new(disks));
    }

    /// Whether other processes write the same disks.
    pub fn is_shared(&self) -> bool {
        self.shared.get().is_some()
    }

    /// Waits for and takes the lock of `ns/key`.
    pub async fn lock(&self, ns: &str, key: &str) -> Result<KeyGuard<'_>, SetError> {
        self.lock_all(ns, std::iter::once(key)).await
    }

    /// Waits for and takes the locks of every `ns/key` in `keys`, in
    /// ascending stripe order, then leases them all at once. Deadlock-free
    /// because every other caller holds at most one lock at a time (no code
    /// path waits for a second lock while holding one), and a lease request
    /// takes all its names or none.
    pub async fn lock_all<'a>(
        &self,
        ns: &str,
        keys: impl Iterator<Item = &'a str>,
    ) -> Result<KeyGuard<'_>, SetError> {
        let keys: Vec<&str> = keys.collect();
        let mut wanted: Vec<usize> = keys.iter().map(|k| stripe(ns, k)).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut held = Vec::with_capacity(wanted.len());
        for i in wanted {
            held.push(self.stripes[i].lock().await);
        }
        let lease = match self.shared.get() {
            Some(disks) => {
                let names = keys.iter().map(|k| name(ns, k)).collect();
                Some(acquire(disks.clone(), names).await?)
            }
            None => None,
        };
        Ok(KeyGuard {
            _local: held,
            _lease: lease,
        })
    }
}

/// Leases `names` on a majority of `disks`, retrying with backoff while
/// another owner holds them.
async fn acquire(disks: Arc<Vec<Arc<dyn Disk>>>, names: Vec<Vec<u8>>) -> Result<Lease, SetError> {
    let quorum = disks.len() / 2 + 1;
    let owner = Uuid::new_v4();
    let deadline = Instant::now() + LOCK_WAIT;
    let mut backoff = Duration::from_millis(2);
    loop {
        let (granted, answered) = ask(&disks, &names, owner, LEASE_TTL).await;
        if granted >= quorum {
            let renew = tokio::spawn(renew(disks.clone(), names.clone(), owner, "a held lock"));
            return Ok(Lease {
                names,
                owner,
                disks,
                renew,
            });
        }
        release(disks.clone(), names.clone(), owner).await;
        if answered < quorum {
            return Err(SetError::WriteQuorum {
                needed: quorum,
                got: answered,
            });
        }
        if Instant::now() >= deadline {
            return Err(SetError::LockTimeout(format!(
                "another writer held the object's lock for over {} s",
                LOCK_WAIT.as_secs()
            )));
        }
        let jitter = Duration::from_micros(rand_below(backoff.as_micros() as u64));
        tokio::time::sleep(backoff + jitter).await;
        backoff = (backoff * 2).min(Duration::from_millis(100));
    }
}

/// Asks every disk for (or to renew) the leases for `ttl`; returns how many
/// granted them and how many answered at all.
pub async fn ask(
    disks: &[Arc<dyn Disk>],
    names: &[Vec<u8>],
    owner: Uuid,
    ttl: Duration,
) -> (usize, usize) {
    let answers = join_all(
        disks
            .iter()
            .map(|d| d.acquire_leases(names.to_vec(), owner, ttl.as_millis() as u64)),
    )
    .await;
    (
        answers.iter().filter(|a| matches!(a, Ok(true))).count(),
        answers.iter().filter(|a| a.is_ok()).count(),
    )
}

/// Takes the leases `names` for `owner` on `disks` (`LEASE_TTL` long); an
/// error says how many granted them when fewer than a majority did.
pub async fn take(disks: &[Arc<dyn Disk>], names: &[Vec<u8>], owner: Uuid) -> Result<(), String> {
    let (granted, _) = ask(disks, names, owner, LEASE_TTL).await;
    if granted < disks.len() / 2 + 1 {
        return Err(format!(
            "granted by {granted} of {} disks, fewer than a majority",
            disks.len()
        ));
    }
    Ok(())
}

/// Renews held leases every `LEASE_RENEWAL` until dropped.
pub(crate) async fn renew(
    disks: Arc<Vec<Arc<dyn Disk>>>,
    names: Vec<Vec<u8>>,
    owner: Uuid,
    what: &'static str,
) {
    loop {
        tokio::time::sleep(LEASE_RENEWAL).await;
        if let Err(e) = take(&disks, &names, owner).await {
            tracing::warn!("{what} could not be renewed: {e}");
        }
    }
}

/// A cheap random number below `n` (jitter only).
fn rand_below(n: u64) -> u64 {
    let seed = Uuid::new_v4().as_u128() as u64;
    if n == 0 {
        0
    } else {
        seed % n
    }
}

/// The lease a process holds while it runs, on the disks it writes: its
/// staged data stays protected from garbage collection while it does.
pub fn writer_lease_name(owner: Uuid) -> Vec<u8> {
    format!("\0granary-writer\0{owner}").into_bytes()
}

fn name(ns: &str, key: &str) -> Vec<u8> {
    let mut name = Vec::with_capacity(ns.len() + key.len() + 1);
    name.extend_from_slice(ns.as_bytes());
    name.push(0);
    name.extend_from_slice(key.as_bytes());
    name
}

fn stripe(ns: &str, key: &str) -> usize {
    crc_fast::crc32_iscsi(&name(ns, key)) as usize % KEY_LOCK_STRIPES
}
