//! What the fault trials write: a plain and a versioned bucket, fresh
//! values (each write's bytes name it), and object sizes drawn by the
//! run's seed from packed, one-stripe and multi-stripe.

use rand::{Rng, SeedableRng};

use super::history::History;
use super::recorder::Recorder;
use crate::harness::enable_versioning;

/// Object sizes: packed, one stripe of shard files, several stripes.
pub const SIZES: [usize; 3] = [15_000, 300_000, 1_100_000];

/// The buckets and the seeded choices of a run.
pub struct Workload {
    /// The unversioned bucket `plain`.
    pub plain: Recorder,
    /// The versioned bucket `versioned`.
    pub versioned: Recorder,
    /// The run's random choices.
    pub rng: rand::rngs::StdRng,
    next: u64,
}

impl Workload {
    /// Creates both buckets at `endpoint`, recording into `h`.
    pub async fn start(endpoint: &str, h: &History, seed: u64) -> Workload {
        let plain = Recorder::of(endpoint, h, "plain");
        let versioned = Recorder::of(endpoint, h, "versioned");
        for r in [&plain, &versioned] {
            r.c.create_bucket().bucket(&r.bucket).send().await.unwrap();
        }
        enable_versioning(&versioned.c, "versioned").await;
        Workload {
            plain,
            versioned,
            rng: rand::rngs::StdRng::seed_from_u64(seed),
            next: 0,
        }
    }

    /// A value no write has had.
    pub fn value(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// One of the two buckets.
    pub fn recorder(&mut self) -> Recorder {
        match self.rng.gen_bool(0.5) {
            true => self.plain.clone(),
            false => self.versioned.clone(),
        }
    }

    /// An object size.
    pub fn size(&mut self) -> usize {
        SIZES[self.rng.gen_range(0..SIZES.len())]
    }

    /// The same buckets at another endpoint (a restarted server).
    pub fn moved_to(&mut self, endpoint: &str) {
        self.plain = self.plain.at(endpoint);
        self.versioned = self.versioned.at(endpoint);
    }
}
