//! pool-layout: how a deployment's disks are laid out into pools and
//! erasure sets — the rules, not the disks. It owns the set width and
//! parity rules (`granary server`'s directories and a cluster's nodes, the
//! node being the failure domain), the parity defaults, and the cluster
//! file's parser and checks.
//!
//! It must not open, probe or format a disk, nor know erasure coding, keys
//! or S3: placement opens the pools it describes (`local_pool.rs`,
//! `cluster.rs`), erasure-set formats each set, and the fuzz targets
//! exercise the cluster file without building RocksDB.

pub mod cluster_file;
pub mod parity;
pub mod set_widths;

pub use cluster_file::{
    expand, ClusterFileError, ClusterMap, NodeDisk, PoolMap, DEFAULT_NODE_PORT,
};
pub use parity::{default_parity, default_parity_in, DEFAULT_COLD_PARITY, MAX_SET_DISKS};
pub use set_widths::{choose_layout, local_layout, PoolLayout, MIN_DEFAULT_SET_WIDTH};
