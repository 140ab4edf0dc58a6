//! lifecycle-rules: the rule model of the lifecycle room — an S3
//! `LifecycleConfiguration` document parsed and validated as S3 validates
//! it, and rendered back ([`config`]).
//!
//! It owns the typed rules and their XML form only. It must not evaluate
//! rules against objects, scan, move or expire anything (lifecycle does),
//! nor know HTTP, S3 error codes or storage: the gateway maps its
//! [`ConfigError`] to S3's, and the fuzz targets exercise the parser
//! without building RocksDB.

pub mod config;

pub use config::{parse, Classes, ConfigError, LifecycleConfig};
