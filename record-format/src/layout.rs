//! Erasure layout of an object and the stripe arithmetic that follows.
//!
//! A part of `size` bytes is cut into stripes of `k × block_size` bytes.
//! Stripe `j` gives each of the `k` data shards one block of
//! `block_len(j)` bytes (zero-padded at the end of the last stripe) and the
//! codec adds `m` parity blocks of the same length. Block `j` of every shard
//! file starts at `j × block_size`, so shard files are plain concatenations
//! of their blocks.

use serde::{Deserialize, Serialize};

/// How one object's shards are spread: k data + m parity shards of
/// `block_size`-byte blocks, shard `i` on disk `(i + rotation) mod (k + m)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasureLayout {
    /// Data shards per stripe (k).
    pub data: u8,
    /// Parity shards per stripe (m).
    pub parity: u8,
    /// Bytes per shard block; a multiple of 4 KiB.
    pub block_size: u32,
    /// Offset of shard 0 among the set's disks; spreads parity across disks.
    pub rotation: u8,
}

impl ErasureLayout {
    /// k + m.
    pub fn width(&self) -> usize {
        self.data as usize + self.parity as usize
    }

    /// Object bytes in one full stripe.
    pub fn stripe_size(&self) -> u64 {
        self.data as u64 * self.block_size as u64
    }

    /// Disk slot holding shard `shard`.
    pub fn disk_of_shard(&self, shard: usize) -> usize {
        (shard + self.rotation as usize) % self.width()
    }

    /// Shard held by disk slot `disk`.
    pub fn shard_of_disk(&self, disk: usize) -> usize {
        (disk + self.width() - self.rotation as usize % self.width()) % self.width()
    }
}

/// Stripe geometry of one part of `size` bytes under a layout.
#[derive(Clone, Copy, Debug)]
pub struct PartGeometry {
    /// Bytes of object data in the part.
    pub size: u64,
    /// The layout the part was written with.
    pub layout: ErasureLayout,
    /// Whether the part is a packed small object (one stripe whose shards
    /// are pieces in the disks' pack store instead of shard files).
    pub packed: bool,
}

impl PartGeometry {
    /// Number of stripes.
    pub fn stripes(&self) -> u64 {
        self.size.div_ceil(self.layout.stripe_size())
    }

    /// Object bytes in stripe `j`.
    pub fn stripe_len(&self, j: u64) -> u64 {
        let s = self.layout.stripe_size();
        (self.size - j * s).min(s)
    }

    /// Bytes each shard holds for stripe `j`.
    pub fn block_len(&self, j: u64) -> u64 {
        self.stripe_len(j).div_ceil(self.layout.data as u64)
    }

    /// Offset of stripe `j`'s block inside every shard file.
    pub fn shard_offset(&self, j: u64) -> u64 {
        j * self.layout.block_size as u64
    }

    /// Stripes `stripes` cut into runs of at most `per_run` stripes, each
    /// with the offset and length of its bytes in every shard file.
    pub fn runs(&self, stripes: std::ops::Range<u64>, per_run: u64) -> Vec<StripeRun> {
        let mut out = Vec::new();
        let mut j = stripes.start;
        while j < stripes.end {
            let e = (j + per_run.max(1)).min(stripes.end);
            out.push(StripeRun {
                stripes: j..e,
                offset: self.shard_offset(j),
                len: (j..e).map(|s| self.block_len(s)).sum(),
            });
            j = e;
        }
        out
    }

    /// (offset, length) of each stripe's block in a shard read that starts
    /// at stripe `stripes.start`.
    pub fn block_spans(&self, stripes: std::ops::Range<u64>) -> Vec<(u64, u64)> {
        let mut at = 0;
        stripes
            .map(|j| {
                let span = (at, self.block_len(j));
                at += span.1;
                span
            })
            .collect()
    }

    /// The data segments of stripes `stripes`, stripe by stripe, shard by
    /// shard; empty segments (padding) are left out.
    pub fn data_segments(&self, stripes: std::ops::Range<u64>) -> Vec<Segment> {
        let stripe = self.layout.stripe_size();
        let mut out = Vec::new();
        let mut run_offset = 0;
        for j in stripes {
            let base = j * stripe;
            let bl = self.block_len(j);
            let sl = self.stripe_len(j);
            for shard in 0..self.layout.data as usize {
                let start = base + (shard as u64 * bl).min(sl);
                let end = base + ((shard as u64 + 1) * bl).min(sl);
                if start < end {
                    out.push(Segment {
                        shard,
                        start,
                        end,
                        run_offset,
                    });
                }
            }
            run_offset += bl;
        }
        out
    }

    /// Total bytes in each shard file.
    pub fn shard_len(&self) -> u64 {
        match self.stripes() {
            0 => 0,
            n => self.shard_offset(n - 1) + self.block_len(n - 1),
        }
    }
}

/// A run of consecutive stripes and where its bytes sit in each shard file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripeRun {
    /// The stripes.
    pub stripes: std::ops::Range<u64>,
    /// Offset of the run in every shard file.
    pub offset: u64,
    /// Bytes of the run in every shard file.
    pub len: u64,
}

/// Part bytes `[start, end)` held by data shard `shard` in one stripe; its
/// block begins `run_offset` bytes into a shard read of the stripe run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Data shard index.
    pub shard: usize,
    /// First part byte held (part-relative).
    pub start: u64,
    /// One past the last part byte held.
    pub end: u64,
    /// Offset of this stripe's block within the shard run.
    pub run_offset: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn geometry_covers_every_byte(size in 0u64..5_000_000, k in 1u8..6, m in 0u8..4, rot in 0u8..10) {
            let layout = ErasureLayout { data: k, parity: m, block_size: 65536, rotation: rot };
            let g = PartGeometry { size, layout, packed: false };
            let total: u64 = (0..g.stripes()).map(|j| g.stripe_len(j)).sum();
            prop_assert_eq!(total, size);
            for j in 0..g.stripes() {
                prop_assert!(g.block_len(j) * k as u64 >= g.stripe_len(j));
                prop_assert!(g.block_len(j) <= layout.block_size as u64);
            }
            for d in 0..layout.width() {
                prop_assert_eq!(layout.disk_of_shard(layout.shard_of_disk(d)), d);
            }
            // Segments tile the part in order.
            let segs = g.data_segments(0..g.stripes());
            let mut at = 0;
            for seg in &segs {
                prop_assert_eq!(seg.start, at);
                at = seg.end;
            }
            prop_assert_eq!(at, size);
        }
    }
}
