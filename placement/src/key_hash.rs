//! Which erasure set of a pool a key belongs to: SipHash-2-4 of the bucket
//! and key, keyed by the deployment id, modulo the pool's number of sets
//! (as MinIO places object names on the sets of a pool, keyed by its
//! deployment id). The key is the bucket's name, a zero byte (which no
//! bucket name contains) and the object key, so no two (bucket, key)
//! pairs hash the same input. The mapping must never change for a
//! deployment: `key_hash_golden.txt` pins it for a fixed deployment id and
//! 1,000 keys, and the tests fail if any of them moves.

use std::hash::Hasher as _;

use siphasher::sip::SipHasher24;
use uuid::Uuid;

/// The 64-bit hash a key's set is chosen by.
pub fn key_hash(deployment: Uuid, bucket: &str, key: &str) -> u64 {
    let id = deployment.as_bytes();
    let k0 = u64::from_le_bytes(id[..8].try_into().expect("16 bytes"));
    let k1 = u64::from_le_bytes(id[8..].try_into().expect("16 bytes"));
    let mut h = SipHasher24::new_with_keys(k0, k1);
    h.write(bucket.as_bytes());
    h.write(&[0]);
    h.write(key.as_bytes());
    h.finish()
}

/// The set (`0..sets`) of a pool of `sets` sets that holds `bucket/key`.
pub fn set_index(deployment: Uuid, bucket: &str, key: &str, sets: usize) -> usize {
    assert!(sets > 0, "a pool has at least one set");
    (key_hash(deployment, bucket, key) % sets as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deployment id the golden vector was made with.
    const GOLDEN_DEPLOYMENT: &str = "6b1f3c2e-8d4a-4f7b-9e21-0c5d7a9b3e10";
    const GOLDEN: &str = include_str!("key_hash_golden.txt");

    /// The 1,000 (bucket, key) pairs of the golden vector: dataset shards,
    /// checkpoints, and keys with separators, spaces and non-ASCII.
    fn golden_keys() -> Vec<(String, String)> {
        (0..1000)
            .map(|i| {
                let bucket = format!("bucket-{}", i % 7);
                let key = match i % 5 {
                    0 => format!("datasets/shard-{i:05}.tar"),
                    1 => format!(
                        "checkpoints/step-{}/model-{:02}.safetensors",
                        i * 100,
                        i % 8
                    ),
                    2 => format!("a/b//c/{i}"),
                    3 => format!("données é {i} ✓"),
                    _ => format!("{i}"),
                };
                (bucket, key)
            })
            .collect()
    }

    fn golden_lines() -> Vec<String> {
        let id: Uuid = GOLDEN_DEPLOYMENT.parse().unwrap();
        golden_keys()
            .into_iter()
            .map(|(b, k)| format!("{b}\t{k}\t{:016x}", key_hash(id, &b, &k)))
            .collect()
    }

    /// `GRANARY_WRITE_KEY_HASH_GOLDEN=1` writes the file (only ever done
    /// once, when the mapping was chosen).
    #[test]
    fn the_key_to_set_mapping_matches_the_golden_vector() {
        let lines = golden_lines();
        if std::env::var_os("GRANARY_WRITE_KEY_HASH_GOLDEN").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/key_hash_golden.txt");
            std::fs::write(path, lines.join("\n") + "\n").unwrap();
            return;
        }
        let golden: Vec<&str> = GOLDEN.lines().collect();
        assert_eq!(golden.len(), 1000, "the golden vector has 1,000 keys");
        for (got, want) in lines.iter().zip(&golden) {
            assert_eq!(got, want, "a key moved to another set");
        }
    }

    #[test]
    fn set_indexes_follow_the_hash_and_spread_evenly() {
        let id: Uuid = GOLDEN_DEPLOYMENT.parse().unwrap();
        let sets = 4;
        let mut counts = [0usize; 4];
        for i in 0..100_000 {
            let key = format!("k/{i}");
            let s = set_index(id, "b", &key, sets);
            assert_eq!(s as u64, key_hash(id, "b", &key) % sets as u64);
            counts[s] += 1;
        }
        for c in counts {
            // Within 5% of even (25,000 each).
            assert!((23_750..=26_250).contains(&c), "{counts:?}");
        }
        // Another deployment places the same keys differently.
        let other = Uuid::from_u128(1);
        let moved = (0..1000)
            .filter(|i| {
                let key = format!("k/{i}");
                set_index(id, "b", &key, sets) != set_index(other, "b", &key, sets)
            })
            .count();
        assert!(moved > 600, "{moved} of 1000 moved");
        // The bucket is part of the key: the same key in two buckets is
        // hashed apart, and "ab" + "c" is not "a" + "bc".
        assert_ne!(key_hash(id, "ab", "c"), key_hash(id, "a", "bc"));
    }
}
