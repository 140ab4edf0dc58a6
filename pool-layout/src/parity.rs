//! How many disks an erasure set may have, and its parity when none is
//! pinned.

use disk_format::format::Tier;

/// Parity of a new cold pool unless `--cold-parity` says otherwise (or
/// the pool has too few directories for it).
pub const DEFAULT_COLD_PARITY: usize = 2;

/// Most directories one erasure set takes.
pub const MAX_SET_DISKS: usize = 16;

/// The parity of a set of `width` disks in a pool of `tier` unless
/// pinned: by width as [`default_parity`] says, and at most
/// [`DEFAULT_COLD_PARITY`] in a cold pool (cold pools trade fault
/// tolerance for space: wider, cheaper stripes than the hot pool's on as
/// many disks).
pub fn default_parity_in(tier: Tier, width: usize) -> usize {
    match tier {
        Tier::Hot => default_parity(width),
        Tier::Cold => default_parity(width).min(DEFAULT_COLD_PARITY),
    }
}

/// Default parity for `n` directories: none for one, mirroring for two or
/// three, then 2 for 4–5, 3 for 6–7 and 4 for 8 or more.
pub fn default_parity(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        2 | 3 => n - 1,
        4 | 5 => 2,
        6 | 7 => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_directory_count() {
        assert_eq!(
            (1..=16).map(default_parity).collect::<Vec<_>>(),
            vec![0, 1, 2, 2, 2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4]
        );
    }
}
