//! Internal RPC between gateways and nodes: the [`crate::Disk`] trait
//! carried over HTTP/2, so that placement reaches a node's disk exactly as
//! it reaches a local one.
//!
//! - [`auth`]: the cluster secret, request and answer signatures, replay
//!   protection, and [`wire`]: call and answer encoding, errors, framing
//!   of shard streams (both in disk-format);
//! - [`server`]: `granary node`'s side;
//! - [`client`]: [`RemoteDisk`], the gateway's side;
//! - [`tls`]: optional mutual TLS between them.

pub mod client;
pub mod server;
pub mod tls;

pub use disk_format::rpc::{auth, wire};

pub use auth::ClusterSecret;
pub use client::{NodeAccess, NodeClient, RemoteDisk};
pub use server::{accept, serve_node, NodeService, HEALTH_PATH};

/// HTTP/2 flow-control window of one call: a shard stream keeps several
/// blocks in flight.
pub(crate) const STREAM_WINDOW: u32 = 8 << 20;
/// HTTP/2 flow-control window of one connection (all calls to a node).
pub(crate) const CONNECTION_WINDOW: u32 = 64 << 20;

#[cfg(test)]
pub(crate) mod tests;
