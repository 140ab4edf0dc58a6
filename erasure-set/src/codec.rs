//! The erasure codec: systematic Reed–Solomon (GF(2^8), SIMD-accelerated),
//! plain copies when k = 1 (mirroring), nothing when m = 0.

use bytes::{Bytes, BytesMut};
use reed_solomon_erasure::galois_8::ReedSolomon;

use crate::error::SetError;

/// Encodes stripes into k + m shard blocks and rebuilds missing ones.
pub struct Codec {
    data: usize,
    parity: usize,
    rs: Option<ReedSolomon>,
}

impl Codec {
    /// A codec for k data and m parity shards.
    pub fn new(data: usize, parity: usize) -> Result<Codec, SetError> {
        if data == 0 || data + parity > 256 {
            return Err(SetError::InvalidArgument(format!(
                "unsupported erasure layout {data}+{parity}"
            )));
        }
        let rs = if data > 1 && parity > 0 {
            Some(
                ReedSolomon::new(data, parity)
                    .map_err(|e| SetError::InvalidArgument(format!("codec: {e:?}")))?,
            )
        } else {
            None
        };
        Ok(Codec { data, parity, rs })
    }

    /// Splits one stripe into k data blocks of `block_len` bytes (the last
    /// zero-padded) and computes m parity blocks. Data blocks share the
    /// stripe's memory where no padding is needed. CPU-bound: call it from a
    /// blocking context for large stripes.
    pub fn encode(&self, stripe: &Bytes, block_len: usize) -> Vec<Bytes> {
        let mut shards = Vec::with_capacity(self.data + self.parity);
        for i in 0..self.data {
            let start = (i * block_len).min(stripe.len());
            let end = ((i + 1) * block_len).min(stripe.len());
            if end - start == block_len {
                shards.push(stripe.slice(start..end));
            } else {
                let mut b = BytesMut::zeroed(block_len);
                b[..end - start].copy_from_slice(&stripe[start..end]);
                shards.push(b.freeze());
            }
        }
        match &self.rs {
            Some(rs) => {
                let mut parity: Vec<Vec<u8>> = vec![vec![0u8; block_len]; self.parity];
                rs.encode_sep(&shards, &mut parity)
                    .expect("shard lengths are equal by construction");
                shards.extend(parity.into_iter().map(Bytes::from));
            }
            None => {
                // k = 1: every other shard is a copy (shared memory).
                for _ in 0..self.parity {
                    shards.push(shards[0].clone());
                }
            }
        }
        shards
    }

    /// Fills in missing shards (`None`) from the present ones. With
    /// `data_only`, only data shards are rebuilt. Needs at least k present
    /// shards of equal length.
    pub fn reconstruct(
        &self,
        shards: &mut [Option<Vec<u8>>],
        data_only: bool,
    ) -> Result<(), SetError> {
        let present = shards.iter().filter(|s| s.is_some()).count();
        if present < self.data {
            return Err(SetError::ReadQuorum {
                needed: self.data,
                got: present,
            });
        }
        match &self.rs {
            Some(rs) => {
                let r = if data_only {
                    rs.reconstruct_data(shards)
                } else {
                    rs.reconstruct(shards)
                };
                r.map_err(|e| SetError::Internal(format!("reconstruct: {e:?}")))
            }
            None => {
                let src = shards
                    .iter()
                    .flatten()
                    .next()
                    .cloned()
                    .expect("present >= 1");
                let limit = if data_only { self.data } else { shards.len() };
                for s in shards.iter_mut().take(limit) {
                    if s.is_none() {
                        *s = Some(src.clone());
                    }
                }
                Ok(())
            }
        }
    }
}

impl Codec {
    /// Rebuilds missing shards over a run of stripes. `present[i]` is shard
    /// `i`'s bytes for the whole run (or `None`), `spans` the (offset, length)
    /// of each stripe's block within it. Returns the first `want` shards
    /// (k for data only, k + m for all) complete for the run. CPU-bound.
    pub fn reconstruct_run(
        &self,
        present: &[Option<Bytes>],
        spans: &[(u64, u64)],
        want: usize,
    ) -> Result<Vec<Bytes>, SetError> {
        let total: u64 = spans.iter().map(|s| s.1).sum();
        let mut out: Vec<Vec<u8>> = vec![Vec::with_capacity(total as usize); want];
        for &(at, len) in spans {
            let mut v: Vec<Option<Vec<u8>>> = present
                .iter()
                .map(|s| {
                    s.as_ref()
                        .map(|b| b[at as usize..(at + len) as usize].to_vec())
                })
                .collect();
            self.reconstruct(&mut v, want <= self.data)?;
            for (i, o) in out.iter_mut().enumerate() {
                o.extend_from_slice(v[i].as_ref().expect("reconstructed"));
            }
        }
        Ok(out.into_iter().map(Bytes::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subsets(n: usize, max: usize) -> Vec<Vec<usize>> {
        (0u32..(1 << n))
            .filter(|m| m.count_ones() as usize <= max)
            .map(|m| (0..n).filter(|i| m & (1 << i) != 0).collect())
            .collect()
    }

    fn round_trip(k: usize, m: usize, len: usize) {
        let codec = Codec::new(k, m).unwrap();
        let stripe: Bytes = (0..len)
            .map(|i| (i * 31 % 253) as u8)
            .collect::<Vec<_>>()
            .into();
        let block = len.div_ceil(k);
        let shards = codec.encode(&stripe, block);
        assert_eq!(shards.len(), k + m);
        // Systematic: the data shards are the stripe itself.
        let joined: Vec<u8> = shards[..k].iter().flat_map(|s| s.to_vec()).collect();
        assert_eq!(&joined[..len], &stripe[..]);
        for lost in subsets(k + m, m) {
            let mut v: Vec<Option<Vec<u8>>> = shards.iter().map(|s| Some(s.to_vec())).collect();
            for &i in &lost {
                v[i] = None;
            }
            codec.reconstruct(&mut v, false).unwrap();
            for (i, s) in v.iter().enumerate() {
                assert_eq!(
                    s.as_deref().unwrap(),
                    &shards[i][..],
                    "{k}+{m} lost {lost:?}"
                );
            }
        }
    }

    #[test]
    fn every_combination_of_up_to_m_losses() {
        for (k, m) in [(2, 2), (4, 2), (1, 1), (1, 2), (1, 0), (3, 3)] {
            round_trip(k, m, 10_000);
            round_trip(k, m, 1);
        }
    }

    #[test]
    fn one_loss_too_many_is_an_error_not_wrong_data() {
        let codec = Codec::new(2, 2).unwrap();
        let shards = codec.encode(&Bytes::from(vec![7u8; 100]), 50);
        let mut v: Vec<Option<Vec<u8>>> = shards.iter().map(|s| Some(s.to_vec())).collect();
        v[0] = None;
        v[1] = None;
        v[2] = None;
        assert!(matches!(
            codec.reconstruct(&mut v, true),
            Err(SetError::ReadQuorum { needed: 2, got: 1 })
        ));
    }
}
