//! gateway: the front room of Granary's architecture — S3 over HTTP.
//!
//! It answers S3 (the parsing is s3-wire's): SigV4 (header, presigned, `aws-chunked` with
//! signed chunks and trailers), XML documents, ETags and flexible checksums,
//! S3 error codes (in s3-wire's `error.rs` and nowhere else), and who may do what:
//! users, bucket and user policies (`iam/`), CORS, POST forms, and the admin
//! API. Bodies stream through to the placement layer; nothing buffers a
//! whole object. It holds no state another gateway would need: every
//! object, bucket, upload and user lives in the store behind
//! `placement::Store` (users' secrets sealed with the master key).

mod admin;
mod body;
pub mod checksum;
mod conditions;
mod conn_guard;
mod error_response;
mod hashing;
mod headers;
pub mod iam;
mod metrics;
mod ops;
pub mod progress;
mod request;
pub mod sealed;
mod server;
mod service;
pub mod tiers;
mod versions;

use std::sync::Arc;
use std::time::Duration;

pub use body::BodyPace;
pub use iam::secrets::MasterKey;
pub use s3_wire::auth::credentials::{AccessKey, Credentials};
pub use s3_wire::{S3Error, S3Result};
pub use server::{load_tls, serve, ServeOptions};
pub use service::{router, Connection};

/// Bodies from this size on are received on the bulk runtime.
pub const BULK_BODY_BYTES: u64 = 1 << 20;

/// How the gateway answers.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// Region the gateway signs for and reports (`--region`).
    pub region: String,
    /// Domain for virtual-hosted-style requests (`<bucket>.<domain>`).
    pub domain: Option<String>,
    /// How fast request bodies must arrive.
    pub body_pace: BodyPace,
    /// Accept SigV2 presigned URLs (`--sigv2`).
    pub sigv2: bool,
    /// Runtime that streams upload bodies into storage (decoding, chunk
    /// signatures, stripe assembly, shard writes), so that a burst of large
    /// uploads competes with request handling only for spare CPU. `None`:
    /// the request's own runtime.
    pub bulk: Option<tokio::runtime::Handle>,
    /// Bearer token that `/granary/metrics` requires; `None` turns the
    /// endpoint off (the admin API serves the same metrics to the root key).
    pub metrics_token: Option<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            region: "us-east-1".into(),
            domain: None,
            body_pace: BodyPace {
                window: Duration::from_secs(60),
                min_rate: 1024,
            },
            sigv2: true,
            bulk: None,
            metrics_token: None,
        }
    }
}

/// Everything a request handler needs.
pub struct Gateway {
    /// The object store.
    pub store: Arc<placement::Store>,
    /// The root key and the users.
    pub identities: iam::Identities,
    /// Answering options.
    pub config: GatewayConfig,
    /// The lifecycle scanner, when the server runs one (admin status and
    /// runs, and the length of a lifecycle day for `x-amz-expiration`).
    pub lifecycle: Option<Arc<lifecycle::Scanner>>,
    /// Parsed lifecycle configurations, for `x-amz-expiration`.
    pub(crate) lifecycle_configs: lifecycle::ConfigCache,
    /// Owner shown in listings.
    pub owner: s3_wire::xml::Owner,
    /// Requests whose client went away, by operation and phase.
    pub disconnects: Arc<progress::Disconnects>,
}

impl Gateway {
    /// A gateway over `store` with `root` as its root key; user secrets are
    /// sealed with `master`. The owner shown in listings is derived from the
    /// root access key.
    pub fn new(
        store: Arc<placement::Store>,
        root: AccessKey,
        master: MasterKey,
        config: GatewayConfig,
    ) -> Gateway {
        use sha2::Digest as _;
        let owner = s3_wire::xml::Owner {
            id: hex::encode(sha2::Sha256::digest(root.access_key_id.as_bytes())),
            display_name: "granary".into(),
        };
        Gateway {
            identities: iam::Identities::new(root, store.clone(), master),
            store,
            config,
            lifecycle: None,
            lifecycle_configs: Default::default(),
            owner,
            disconnects: Default::default(),
        }
    }

    /// Runs `work` over a body of `bytes` on the bulk runtime and waits for
    /// it; small bodies (below [`BULK_BODY_BYTES`]) and gateways without a
    /// bulk runtime run it here, where the hop would cost more than it
    /// saves. The work carries on if the waiting request is dropped; it
    /// ends by itself once its input (a body) fails.
    pub async fn in_bulk<T: Send + 'static>(
        &self,
        bytes: u64,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) -> S3Result<T> {
        match &self.config.bulk {
            Some(rt) if bytes >= BULK_BODY_BYTES => rt
                .spawn(work)
                .await
                .map_err(|e| S3Error::Internal(format!("upload task: {e}"))),
            _ => Ok(work.await),
        }
    }
}
