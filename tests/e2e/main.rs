//! End-to-end tests: the real `granary` binary on a random loopback port,
//! driven by the Rust AWS SDK (and by raw requests signed with AWS's SigV4
//! signer where an SDK would refuse to send something malformed).

mod cluster_harness;
mod cluster_sets;
mod harness;

mod access;
mod auth;
mod bad_input;
mod buckets;
mod checksums;
mod cluster;
mod cold_sets;
mod conditional_deletes;
mod conditional_writes;
mod copy;
mod cors;
mod data_path;
mod disks;
mod durability;
mod edge;
mod faults;
mod fixture;
mod fixture_one_pool;
mod full_disk;
mod large;
mod lifecycle;
mod listing;
mod multipart;
mod objects;
mod post_object;
mod remote_tier;
mod request_headers;
mod server;
mod sets;
mod small_objects;
mod tagging;
mod tiers;
mod tls;
mod unsupported;
mod versioning;
mod workers;
