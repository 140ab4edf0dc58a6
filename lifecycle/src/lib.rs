//! lifecycle: the room of Granary's architecture that moves and expires
//! data over time — S3 lifecycle configurations (parsed and validated as
//! S3 does), their evaluation (S3's day arithmetic, filters, precedence),
//! and the background scanner that applies them: expirations, noncurrent
//! version clean-up, aborts of stale multipart uploads, and transitions
//! from the hot pool to the cold pool (the data movement itself is the
//! placement layer's `Store::transition_version`). Beyond S3, checkpoint
//! retention rules ([`checkpoints`]) keep the newest complete checkpoint
//! directories under a prefix and move or expire the older ones whole.
//!
//! The gateway uses [`config`] for the bucket API and [`eval`] for the
//! `x-amz-expiration` header; the server runs a [`Scanner`].
//!
//! It must not know S3 over HTTP, the disks or erasure sets, or where a
//! tier keeps its data: it works through placement's `Store` (a
//! transition names a storage class; the store finds the pool or the
//! remote tier behind it), and it reaches no endpoint itself.

mod checkpoint_pass;
pub mod checkpoints;
pub mod eval;

/// The rule model (in lifecycle-rules, so its parser builds alone).
pub use lifecycle_rules::config;
mod scanner;

pub use config::{parse, Classes, ConfigError, LifecycleConfig};
pub use eval::Clock;
pub use scanner::{
    bucket_checkpoints, bucket_config, BucketStatus, ConfigCache, Plan, PlanEntry, RuleStats,
    Scanner, ScannerOptions, ScannerWorker, CONFIG_KEY, MIN_SIZE_KEY,
};
