//! A set's quorums, and the tally of how the disks of one fan-out
//! answered — the arithmetic `decision.rs` decides with.

use disk_engine::DiskError;

/// Write and read quorums of a k + m set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quorum {
    /// Disks that must durably hold a write before it is acknowledged.
    pub write: usize,
    /// Disks that must agree on a record (and shards needed to read data).
    pub read: usize,
}

impl Quorum {
    /// The design's quorums: W = k (k + 1 when k = m), R = k. Where k < m
    /// (three-way mirrors, or a `--parity` above half) W is raised to a
    /// majority and R so that R + W > k + m: any read quorum then meets every
    /// acknowledged write.
    pub fn for_layout(data: usize, parity: usize) -> Quorum {
        let n = data + parity;
        let write = if data == parity {
            data + 1
        } else {
            data.max(n / 2 + 1)
        }
        .min(n);
        let read = data.max(n + 1 - write);
        Quorum { write, read }
    }
}

/// How the disks of one fan-out answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Disks that did it (or hold it).
    pub ok: usize,
    /// Disks that answered that they do not have it.
    pub absent: usize,
    /// Whether a disk refused for want of space.
    pub full: bool,
}

impl Tally {
    /// The tally of one fan-out's results.
    pub fn of<T>(results: &[Result<T, DiskError>]) -> Tally {
        let mut t = Tally::default();
        for r in results {
            match r {
                Ok(_) => t.ok += 1,
                Err(DiskError::NotFound) => t.absent += 1,
                Err(DiskError::Full) => t.full = true,
                Err(_) => {}
            }
        }
        t
    }

    /// `ok` disks still writing, after the errors of those that stopped.
    pub fn writing(ok: usize, errors: &[DiskError]) -> Tally {
        Tally {
            ok,
            absent: 0,
            full: errors.iter().any(|e| matches!(e, DiskError::Full)),
        }
    }

    /// Disks that answered, holding it or not.
    pub fn answered(&self) -> usize {
        self.ok + self.absent
    }
}

/// Where a listing merged from the disks' pages must end: at the smallest
/// last entry among the disks that said more follow (`lasts`), since
/// entries beyond it may be missing only because that disk's page ended.
/// `None` when no disk had more.
pub(crate) fn horizon<K: Ord>(lasts: impl IntoIterator<Item = K>) -> Option<K> {
    lasts.into_iter().min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorums_match_the_design() {
        assert_eq!(Quorum::for_layout(1, 0), Quorum { write: 1, read: 1 });
        assert_eq!(Quorum::for_layout(1, 1), Quorum { write: 2, read: 1 });
        assert_eq!(Quorum::for_layout(1, 2), Quorum { write: 2, read: 2 });
        assert_eq!(Quorum::for_layout(2, 2), Quorum { write: 3, read: 2 });
        assert_eq!(Quorum::for_layout(4, 2), Quorum { write: 4, read: 4 });
        assert_eq!(Quorum::for_layout(8, 4), Quorum { write: 8, read: 8 });
        for k in 1..12 {
            for m in 0..8 {
                let q = Quorum::for_layout(k, m);
                assert!(q.read + q.write > k + m, "{k}+{m}: {q:?}");
                assert!(q.write <= k + m && q.read >= k);
            }
        }
    }

    #[test]
    fn a_tally_counts_holders_absences_and_full_disks() {
        let results: Vec<Result<u8, DiskError>> = vec![
            Ok(1),
            Err(DiskError::NotFound),
            Err(DiskError::Full),
            Err(DiskError::Offline("gone".into())),
            Ok(2),
        ];
        let t = Tally::of(&results);
        assert_eq!(
            t,
            Tally {
                ok: 2,
                absent: 1,
                full: true
            }
        );
        assert_eq!(t.answered(), 3);
        assert!(!Tally::writing(3, &[DiskError::Offline("gone".into())]).full);
        assert!(Tally::writing(3, &[DiskError::Full]).full);
    }

    #[test]
    fn the_horizon_is_the_shortest_page() {
        assert_eq!(horizon([5u32, 3, 9]), Some(3));
        assert_eq!(horizon(Vec::<u32>::new()), None);
    }
}
