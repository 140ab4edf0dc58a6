//! How a pool of N disks is divided into erasure sets of one width: the
//! rule of `granary server` (every disk its own failure domain) and of a
//! cluster (the node is the failure domain). A set may hold at most m
//! disks (its parity) of any one failure domain, so losing a domain costs
//! each set at most what it can rebuild.
//!
//! The default width is the widest in 4–16 that divides N and meets that
//! rule (wider sets spend less on parity for the same fault tolerance);
//! fewer than 4 disks, or up to 16 with no such width, make one set of N
//! as before pools had many sets. The choice is recorded in every disk's
//! format, and a pool already formatted keeps its width whatever this
//! rule would say today.

use disk_format::format::Tier;

use crate::parity::{default_parity_in, MAX_SET_DISKS};

/// The narrowest set the default divides a pool into.
pub const MIN_DEFAULT_SET_WIDTH: usize = 4;

/// How a pool's disks are divided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolLayout {
    /// Disks per set.
    pub width: usize,
    /// Sets in the pool.
    pub sets: usize,
    /// Parity shards of every set.
    pub parity: usize,
}

/// What a pool of `domains.len()` disks is asked to be: `domains[i]` is
/// the failure domain of disk `i` in pool order, set `s` taking disks
/// `s * width .. (s + 1) * width`. `width` and `parity` are the pinned
/// values, if any; `default_parity_of` gives a width's parity otherwise.
pub fn choose_layout(
    domains: &[usize],
    width: Option<usize>,
    parity: Option<usize>,
    default_parity_of: impl Fn(usize) -> usize,
) -> Result<PoolLayout, String> {
    let n = domains.len();
    if n == 0 {
        return Err("a pool needs at least one disk".into());
    }
    let parity_of = |w: usize| parity.unwrap_or_else(|| default_parity_of(w));
    let layout = |w: usize| PoolLayout {
        width: w,
        sets: n / w,
        parity: parity_of(w),
    };
    if let Some(w) = width {
        if w == 0 || w > MAX_SET_DISKS {
            return Err(format!(
                "a set width of {w} is outside 1–{MAX_SET_DISKS} disks"
            ));
        }
        if !n.is_multiple_of(w) {
            return Err(format!(
                "{n} disks cannot be divided into sets of {w}; give a multiple of {w}"
            ));
        }
        if parity_of(w) >= w {
            return Err(format!(
                "parity {} needs sets wider than {w} disks",
                parity_of(w)
            ));
        }
        if let Some(why) = breaks_domain_rule(domains, w, parity_of(w)) {
            return Err(why);
        }
        return Ok(layout(w));
    }
    let fits = |w: usize| {
        n.is_multiple_of(w)
            && parity_of(w) < w
            && breaks_domain_rule(domains, w, parity_of(w)).is_none()
    };
    if let Some(w) = (MIN_DEFAULT_SET_WIDTH..=MAX_SET_DISKS)
        .rev()
        .find(|&w| fits(w))
    {
        return Ok(layout(w));
    }
    if n < MIN_DEFAULT_SET_WIDTH || n <= MAX_SET_DISKS {
        if parity_of(n) >= n {
            return Err(format!(
                "parity {} needs more than {} disks (got {n})",
                parity_of(n),
                parity_of(n)
            ));
        }
        if let Some(why) = breaks_domain_rule(domains, n, parity_of(n)) {
            return Err(why);
        }
        return Ok(layout(n));
    }
    Err(format!(
        "{n} disks cannot be divided into erasure sets of {MIN_DEFAULT_SET_WIDTH} to \
         {MAX_SET_DISKS} disks each (no width in that range divides {n}); give a multiple \
         of one ({}), or pin the width",
        nearby_counts(n).join(", ")
    ))
}

/// Why sets of `width` with `parity` over `domains` hold more than
/// `parity` disks of one domain (at least one, so a pool of one disk per
/// domain always fits); `None` when they do not.
fn breaks_domain_rule(domains: &[usize], width: usize, parity: usize) -> Option<String> {
    let allowed = parity.max(1);
    for (s, set) in domains.chunks(width).enumerate() {
        for d in set {
            let held = set.iter().filter(|x| *x == d).count();
            if held > allowed {
                return Some(format!(
                    "erasure set {} of {width} disks would hold {held} disks of one node \
                     (failure domain), more than its parity {parity} can rebuild, so losing it \
                     would lose data; spread the disks over more nodes, or choose a width and \
                     parity that fit",
                    s + 1
                ));
            }
        }
    }
    None
}

/// Disk counts near `n` that a default width divides, one disk per
/// failure domain.
fn nearby_counts(n: usize) -> Vec<String> {
    let lo = n.saturating_sub(8).max(MAX_SET_DISKS + 1);
    (lo..=n + 8)
        .filter(|&c| (MIN_DEFAULT_SET_WIDTH..=MAX_SET_DISKS).any(|w| c.is_multiple_of(w)))
        .map(|c| c.to_string())
        .collect()
}

/// [`choose_layout`] for `granary server`: every directory its own
/// failure domain, parity by width as
/// [`default_parity_in`] says.
pub fn local_layout(
    n: usize,
    width: Option<usize>,
    parity: Option<usize>,
    tier: Tier,
) -> Result<PoolLayout, String> {
    let domains: Vec<usize> = (0..n).collect();
    choose_layout(&domains, width, parity, |w| default_parity_in(tier, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parity::{default_parity, DEFAULT_COLD_PARITY};

    fn width(n: usize) -> Result<(usize, usize, usize), String> {
        local_layout(n, None, None, Tier::Hot).map(|l| (l.width, l.sets, l.parity))
    }

    #[test]
    fn the_default_is_the_widest_dividing_width_or_one_set() {
        assert_eq!(width(1), Ok((1, 1, 0)));
        assert_eq!(width(3), Ok((3, 1, 2)));
        // Up to 16 a pool is one set, as before.
        for n in 4..=16 {
            assert_eq!(width(n).unwrap().0, n);
        }
        assert_eq!(width(24), Ok((12, 2, 4)));
        assert_eq!(width(32), Ok((16, 2, 4)));
        assert_eq!(width(20), Ok((10, 2, 4)));
        assert_eq!(width(100), Ok((10, 10, 4)));
        let err = width(17).unwrap_err();
        assert!(err.contains("18, 20"), "{err}");
        assert!(!err.contains("17,") && !err.contains("19"), "{err}");
    }

    #[test]
    fn a_pinned_width_must_divide_the_pool() {
        let l = local_layout(32, Some(8), Some(2), Tier::Hot).unwrap();
        assert_eq!((l.width, l.sets, l.parity), (8, 4, 2));
        assert!(local_layout(30, Some(8), None, Tier::Hot).is_err());
        assert!(local_layout(32, Some(32), None, Tier::Hot).is_err());
        assert!(local_layout(8, Some(4), Some(4), Tier::Hot).is_err());
        // Parity 0 with one disk per domain is allowed, as before.
        assert!(local_layout(8, None, Some(0), Tier::Hot).is_ok());
        // A cold pool's sets keep the cold default parity.
        let l = local_layout(24, None, None, Tier::Cold).unwrap();
        assert_eq!((l.width, l.sets, l.parity), (12, 2, DEFAULT_COLD_PARITY));
    }

    /// Found by the cluster_file fuzz target: a pool too small for any
    /// default width took a pinned parity as wide as itself, and formatting
    /// it then subtracted past zero (`n - parity` data shards).
    #[test]
    fn a_pool_of_one_set_needs_more_disks_than_its_parity() {
        for (n, parity) in [(2, 2), (2, 3), (3, 3), (1, 1), (16, 16)] {
            let domains: Vec<usize> = (0..n).collect();
            let err = choose_layout(&domains, None, Some(parity), default_parity).unwrap_err();
            assert!(err.contains("parity"), "{n} disks, parity {parity}: {err}");
        }
        assert_eq!(width(1), Ok((1, 1, 0)));
        assert!(local_layout(3, None, Some(2), Tier::Hot).is_ok());
    }

    #[test]
    fn no_set_holds_more_disks_of_a_node_than_its_parity() {
        // 4 nodes x 4 disks, node-major: a set of 16 holds 4 of each node
        // with parity 4; at parity 2, sets of 8 hold 2 of each.
        let node_major: Vec<usize> = (0..16).map(|i| i % 4).collect();
        assert_eq!(
            choose_layout(&node_major, None, None, default_parity)
                .unwrap()
                .width,
            16
        );
        let l = choose_layout(&node_major, None, Some(2), default_parity).unwrap();
        assert_eq!((l.width, l.sets), (8, 2));
        // Disks listed node by node: a set of 8 would hold 4 of one node.
        let grouped: Vec<usize> = (0..16).map(|i| i / 4).collect();
        let err = choose_layout(&grouped, Some(8), Some(2), default_parity).unwrap_err();
        assert!(err.contains("failure domain"), "{err}");
    }
}
