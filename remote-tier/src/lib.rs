//! remote-tier: a tier backend outside the deployment, a leaf room of
//! Granary's architecture — another S3-compatible endpoint (another
//! Granary, AWS S3, …) that lifecycle transitions move data to. It is
//! placement's [`placement::TierBackend`] over S3 requests: objects are
//! stored whole or in parts, read back by range, listed for the ones no
//! version refers to any more, and deleted; every request is signed by
//! `request-signer`.
//!
//! It must not know buckets, versions or lifecycle rules of this
//! deployment: a tier object is an id, with its owner's bucket and key
//! carried as opaque user metadata. The gateway builds one from an
//! admin's configuration and registers it with the store.

mod config;
mod tier;

pub use config::RemoteTierConfig;
pub use tier::RemoteTier;
