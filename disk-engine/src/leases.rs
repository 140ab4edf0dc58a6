//! Name leases held in a disk's memory: the building block of locks that
//! several gateways share. A gateway holds a name once a majority of a
//! set's disks granted it the lease (see placement's `locks.rs`); a lease
//! expires unless renewed, so a gateway that dies does not block the name
//! for longer than the lease. Leases are not persisted: a disk that
//! restarts forgets them, which a majority tolerates.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use uuid::Uuid;

/// Longest lease a caller may ask for.
pub const MAX_LEASE: Duration = Duration::from_secs(120);

/// The leases of one disk.
#[derive(Default)]
pub struct LeaseTable {
    held: Mutex<HashMap<Vec<u8>, (Uuid, Instant)>>,
}

impl LeaseTable {
    /// Grants (or renews, for the same owner) every name in `names` for
    /// `ttl`, or none of them if any is held by another owner.
    pub fn acquire(&self, names: &[Vec<u8>], owner: Uuid, ttl: Duration) -> bool {
        let now = Instant::now();
        let until = now + ttl.min(MAX_LEASE);
        let mut held = self.held.lock();
        let free = names.iter().all(|n| match held.get(n) {
            Some((o, expires)) => *o == owner || *expires <= now,
            None => true,
        });
        if free {
            for n in names {
                held.insert(n.clone(), (owner, until));
            }
            // Forget expired leases now and then, so the table stays small.
            if held.len() > 4096 {
                held.retain(|_, (_, e)| *e > now);
            }
        }
        free
    }

    /// Gives up the names `owner` holds.
    pub fn release(&self, names: &[Vec<u8>], owner: Uuid) {
        let mut held = self.held.lock();
        for n in names {
            if held.get(n).is_some_and(|(o, _)| *o == owner) {
                held.remove(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_has_one_owner_until_released_or_expired() {
        let t = LeaseTable::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let names = vec![b"k1".to_vec(), b"k2".to_vec()];
        assert!(t.acquire(&names, a, Duration::from_secs(5)));
        assert!(t.acquire(&names, a, Duration::from_secs(5)), "renewal");
        assert!(!t.acquire(&[b"k2".to_vec(), b"k3".to_vec()], b, Duration::from_secs(5)));
        // All or nothing: k3 was not taken by the refused request.
        assert!(t.acquire(&[b"k3".to_vec()], b, Duration::from_secs(5)));
        t.release(&names, b);
        assert!(
            !t.acquire(&names, b, Duration::from_secs(5)),
            "not b's to release"
        );
        t.release(&names, a);
        assert!(t.acquire(&names, b, Duration::from_millis(1)));
        std::thread::sleep(Duration::from_millis(5));
        assert!(t.acquire(&names, a, Duration::from_secs(5)), "expired");
    }
}
