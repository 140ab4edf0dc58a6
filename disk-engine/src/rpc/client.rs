//! The gateway side of internal RPC: [`RemoteDisk`] is a [`Disk`] on a
//! node, reached over one pooled HTTP/2 connection per node. A node that
//! fails to answer is skipped for a short while (every call fails
//! `Offline` at once) so that quorum operations do not wait on it; after
//! that one call probes it again.

use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::Request;
use http_body_util::BodyExt;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::auth::{self, ClusterSecret};
use super::server::{stream_digest, FormatCall, ARGS};
use super::wire::{self, Frame, WireError};
use crate::disk::{
    Disk, DiskHealth, HeadPage, Inventory, PutRecordOutcome, RecordListOptions, RecordPage,
    RecordPut, ShardOptions, ShardSummary, ShardWriter, UploadListStart,
};
use crate::error::DiskError;
use crate::format::DirState;
use crate::types::{
    DiskId, PartEntry, Piece, Record, ScannedRecord, ScannedUpload, ShardFile, ShardId, StagedId,
    Stamp, UploadEntry, VersionId,
};

/// How often a skipped node's liveness is probed; it is used again as soon
/// as a probe succeeds.
const PROBE_EVERY: Duration = Duration::from_secs(1);
/// HTTP/2 pings on every connection to a node, and how long an answer may
/// take before the connection (and every call on it) is given up: a node
/// that stops answering is noticed within a few seconds.
const PING_EVERY: Duration = Duration::from_secs(2);
const PING_TIMEOUT: Duration = Duration::from_secs(4);
/// Longest wait for a TCP connection to a node.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest wait for one call's answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Calls that only read, and so may be repeated once when they fail fast.
const READ_ONLY: &[&str] = &[
    "probe",
    "health",
    "read_shard",
    "shard_len",
    "get_records",
    "read_piece",
    "list_records",
    "list_heads",
    "get_upload",
    "list_uploads",
    "list_parts",
];
/// A read that failed within this long is tried once more.
const RETRY_WITHIN: Duration = Duration::from_secs(1);
/// Blocks of a shard stream queued ahead of the connection.
const STREAM_QUEUE: usize = 4;

/// One node: its address, the connection pool and whether it is skipped.
pub struct NodeClient {
    base: String,
    secret: ClusterSecret,
    client: Client<HttpConnector, RpcBody>,
    /// Set while the node is skipped (a probe clears it).
    skipped: std::sync::atomic::AtomicBool,
    me: std::sync::Weak<NodeClient>,
}

impl NodeClient {
    /// A client of the node at `addr` (`host:port`).
    pub fn new(addr: &str, secret: ClusterSecret) -> Arc<NodeClient> {
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .http2_only(true)
            .http2_initial_stream_window_size(super::STREAM_WINDOW)
            .http2_initial_connection_window_size(super::CONNECTION_WINDOW)
            .http2_max_frame_size(1 << 20)
            .http2_keep_alive_interval(PING_EVERY)
            .http2_keep_alive_timeout(PING_TIMEOUT)
            .http2_keep_alive_while_idle(true)
            .build(http);
        Arc::new_cyclic(|me| NodeClient {
            base: format!("http://{addr}"),
            secret,
            client,
            skipped: Default::default(),
            me: me.clone(),
        })
    }

    /// The node's address as given.
    pub fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    fn check_skipped(&self) -> Result<(), DiskError> {
        if self.skipped.load(Relaxed) {
            return Err(DiskError::Offline(format!(
                "node {} is not answering",
                self.address()
            )));
        }
        Ok(())
    }

    /// Skips the node until a liveness probe succeeds again.
    fn skip(&self) {
        if self.skipped.swap(true, Relaxed) {
            return;
        }
        tracing::warn!(
            node = self.address(),
            "node not answering; skipped until it does"
        );
        let Some(me) = self.me.upgrade() else { return };
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(PROBE_EVERY).await;
                if me.alive().await {
                    tracing::info!(node = me.address(), "node answers again");
                    me.skipped.store(false, Relaxed);
                    return;
                }
            }
        });
    }

    /// Whether the node answers its liveness path in time.
    async fn alive(&self) -> bool {
        let req = Request::get(format!("{}{}", self.base, super::HEALTH_PATH))
            .body(RpcBody::Full(None))
            .expect("valid request");
        matches!(
            tokio::time::timeout(PING_TIMEOUT, self.client.request(req)).await,
            Ok(Ok(r)) if r.status().is_success()
        )
    }

    fn request(
        &self,
        op: &str,
        disk: &str,
        digest: String,
        body: RpcBody,
    ) -> (String, Request<RpcBody>) {
        let path = format!("{}{op}", wire::PATH_PREFIX);
        let date = auth::now_millis().to_string();
        let nonce = auth::new_nonce();
        let sig = self
            .secret
            .sign_request("POST", &path, disk, &date, &nonce, &digest);
        let req = Request::post(format!("{}{path}", self.base))
            .header(wire::DISK, disk)
            .header(auth::DATE, date)
            .header(auth::NONCE, &nonce)
            .header(auth::BODY, digest)
            .header(auth::SIGNATURE, sig)
            .body(body)
            .expect("valid request");
        (nonce, req)
    }

    /// Sends one request and checks its answer.
    async fn send(
        &self,
        nonce: String,
        req: Request<RpcBody>,
        timeout: Option<Duration>,
    ) -> Result<Bytes, DiskError> {
        self.send_once(nonce, req, timeout, true).await
    }

    /// [`Self::send`]; a failure to reach the node marks it skipped only
    /// with `final_try`.
    async fn send_once(
        &self,
        nonce: String,
        req: Request<RpcBody>,
        timeout: Option<Duration>,
        final_try: bool,
    ) -> Result<Bytes, DiskError> {
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| DiskError::Offline(format!("node {}: {e}", self.address())))?;
            let status = resp.status().as_u16();
            let header = |n: &str| {
                resp.headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let (result, crc, sig) = (
                header(wire::RESULT),
                header(wire::ANSWER_CRC),
                header(auth::SIGNATURE),
            );
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| DiskError::Offline(format!("node {}: {e}", self.address())))?
                .to_bytes();
            Ok::<_, DiskError>((status, result, crc, sig, body))
        };
        let answered = match timeout {
            Some(t) => tokio::time::timeout(t, exchange).await.unwrap_or_else(|_| {
                Err(DiskError::Offline(format!(
                    "node {} timed out",
                    self.address()
                )))
            }),
            None => exchange.await,
        };
        let (status, result, crc, sig, body) = answered.inspect_err(|e| {
            if final_try && e.is_disk_failure() {
                self.skip()
            }
        })?;
        if status == 401 {
            return Err(DiskError::Offline(format!(
                "node {} refused the call: {} (is the cluster secret the same?)",
                self.address(),
                String::from_utf8_lossy(&body).trim()
            )));
        }
        let (result, crc) = (result.unwrap_or_default(), crc.unwrap_or_default());
        if !auth::answer_is_genuine(
            &self.secret,
            &nonce,
            status,
            &format!("{result}:{crc}"),
            sig.as_deref(),
        ) {
            return Err(DiskError::Offline(format!(
                "node {} answered without a valid signature",
                self.address()
            )));
        }
        if format!("{:08x}", crc_fast::crc32_iscsi(&body)) != crc {
            return Err(DiskError::corrupt("rpc answer", "checksum mismatch"));
        }
        match result.as_str() {
            "ok" => Ok(body),
            "err" => Err(wire::decode::<WireError>(&body)?.into()),
            other => Err(DiskError::corrupt(
                "rpc answer",
                format!("result {other:?}"),
            )),
        }
    }

    /// One unary call: `args` encoded, the raw answer body returned.
    pub async fn call<A: Serialize>(
        &self,
        op: &str,
        disk: &str,
        args: &A,
    ) -> Result<Bytes, DiskError> {
        self.check_skipped()?;
        let body = wire::encode(args);
        let digest = auth::body_digest(&body);
        // A read that failed fast (a pooled connection the node had
        // closed, a reset) is tried once more on a fresh connection before
        // the node counts as gone; writes are not repeated.
        let retry = READ_ONLY.contains(&op);
        let started = std::time::Instant::now();
        let (nonce, req) =
            self.request(op, disk, digest.clone(), RpcBody::Full(Some(body.clone())));
        match self.send_once(nonce, req, Some(CALL_TIMEOUT), !retry).await {
            Err(e) if retry && e.is_disk_failure() && started.elapsed() < RETRY_WITHIN => {
                tracing::debug!(node = self.address(), op, error = %e, "retrying a read");
                tokio::time::sleep(Duration::from_millis(20)).await;
                let (nonce, req) = self.request(op, disk, digest, RpcBody::Full(Some(body)));
                self.send_once(nonce, req, Some(CALL_TIMEOUT), true).await
            }
            Err(e) if retry && e.is_disk_failure() => {
                self.skip();
                Err(e)
            }
            other => other,
        }
    }

    /// What the node's directory `disk` holds.
    pub async fn probe(&self, disk: &str) -> Result<DirState, DiskError> {
        wire::decode(&self.call("probe", disk, &()).await?)
    }

    /// Writes a format record onto the node's directory `disk` if it still
    /// holds the disk `expect` (`None`: nothing), and opens it there.
    pub async fn format(
        &self,
        disk: &str,
        record: &crate::format::FormatRecord,
        expect: Option<DiskId>,
    ) -> Result<(), DiskError> {
        let call = FormatCall {
            record: record.clone(),
            expect,
        };
        self.call("format", disk, &call).await.map(drop)
    }
}

/// A request body: a whole call, or the frames of a shard stream.
pub enum RpcBody {
    /// A unary call's body.
    Full(Option<Bytes>),
    /// Encoded frames, as the writer produces them.
    Stream(mpsc::Receiver<Bytes>),
}

impl http_body::Body for RpcBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            RpcBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(http_body::Frame::data(b)))),
            RpcBody::Stream(rx) => rx
                .poll_recv(cx)
                .map(|b| b.map(|b| Ok(http_body::Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, RpcBody::Full(None))
    }
}

/// A disk served by a node.
pub struct RemoteDisk {
    node: Arc<NodeClient>,
    dir: String,
    label: String,
}

impl RemoteDisk {
    /// The disk in directory `dir` of `node`.
    pub fn new(node: Arc<NodeClient>, dir: &str) -> RemoteDisk {
        RemoteDisk {
            label: format!("{}:{dir}", node.address()),
            node,
            dir: dir.to_string(),
        }
    }

    /// The node serving this disk.
    pub fn node(&self) -> &Arc<NodeClient> {
        &self.node
    }

    /// The disk's directory on its node.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    async fn call<A: Serialize>(&self, op: &str, args: &A) -> Result<Bytes, DiskError> {
        self.node.call(op, &self.dir, args).await
    }

    async fn typed<A: Serialize, T: for<'de> serde::Deserialize<'de>>(
        &self,
        op: &str,
        args: &A,
    ) -> Result<T, DiskError> {
        wire::decode(&self.call(op, args).await?)
    }
}

fn b(s: &[u8]) -> Bytes {
    Bytes::copy_from_slice(s)
}

/// Streams a shard's blocks to its node; the node's answer arrives when
/// the stream ends.
struct RemoteShardWriter {
    tx: mpsc::Sender<Bytes>,
    answer: Option<oneshot::Receiver<Result<Bytes, DiskError>>>,
}

impl RemoteShardWriter {
    /// The node's answer once the stream is over.
    async fn answer(&mut self) -> Result<Bytes, DiskError> {
        match self.answer.take() {
            Some(rx) => rx
                .await
                .unwrap_or_else(|_| Err(DiskError::Offline("shard stream was dropped".into()))),
            None => Err(DiskError::Offline("shard stream already failed".into())),
        }
    }

    /// Why the node stopped taking the stream: its answer came early.
    async fn refused(&mut self) -> DiskError {
        match self.answer().await {
            Err(e) => e,
            Ok(_) => DiskError::Offline("shard stream answered before it was finished".into()),
        }
    }
}

#[async_trait]
impl ShardWriter for RemoteShardWriter {
    async fn append(&mut self, block: Bytes) -> Result<(), DiskError> {
        match self.tx.send(wire::encode_frame(&Frame::Data(block))).await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.refused().await),
        }
    }

    async fn finish(mut self: Box<Self>) -> Result<ShardSummary, DiskError> {
        if self
            .tx
            .send(wire::encode_frame(&Frame::Finish))
            .await
            .is_err()
        {
            return Err(self.refused().await);
        }
        wire::decode(&self.answer().await?)
    }
}

#[async_trait]
impl Inventory for RemoteDisk {
    async fn stage(&self, ids: Vec<Uuid>, owner: Uuid) -> Result<(), DiskError> {
        self.call("stage", &(ids, owner)).await.map(drop)
    }

    async fn unstage(&self, ids: Vec<Uuid>) -> Result<(), DiskError> {
        self.call("unstage", &ids).await.map(drop)
    }

    async fn list_staged(&self) -> Result<Vec<StagedId>, DiskError> {
        self.typed("list_staged", &()).await
    }

    async fn list_shards(
        &self,
        after: Option<ShardId>,
        max: usize,
    ) -> Result<Vec<ShardFile>, DiskError> {
        self.typed("list_shards", &(after, max)).await
    }

    async fn list_pieces(
        &self,
        after: Option<Uuid>,
        max: usize,
    ) -> Result<Vec<(Uuid, u64)>, DiskError> {
        self.typed("list_pieces", &(after, max)).await
    }

    async fn scan_records(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedRecord>, Option<Vec<u8>>), DiskError> {
        self.typed("scan_records", &(after, max)).await
    }

    async fn scan_uploads(
        &self,
        after: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<ScannedUpload>, Option<Vec<u8>>), DiskError> {
        self.typed("scan_uploads", &(after, max)).await
    }
}

#[async_trait]
impl Disk for RemoteDisk {
    fn label(&self) -> &str {
        &self.label
    }

    async fn health(&self) -> DiskHealth {
        match self.typed("health", &()).await {
            Ok(h) => h,
            Err(e) => DiskHealth::Offline {
                reason: e.to_string(),
            },
        }
    }

    async fn create_shard(
        &self,
        id: ShardId,
        opts: ShardOptions,
    ) -> Result<Box<dyn ShardWriter>, DiskError> {
        self.node.check_skipped()?;
        let args = wire::encode(&(id, opts));
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let (nonce, mut req) = self.node.request(
            "create_shard",
            &self.dir,
            stream_digest(&args),
            RpcBody::Stream(rx),
        );
        req.headers_mut().insert(
            ARGS,
            http::HeaderValue::from_str(&hex::encode(&args)).expect("hex is a valid header"),
        );
        let (done, answer) = oneshot::channel();
        let node = self.node.clone();
        tokio::spawn(async move {
            // No overall timeout: a stream lasts as long as its writer; the
            // connection's keep-alive pings notice a dead node.
            let _ = done.send(node.send(nonce, req, None).await);
        });
        Ok(Box::new(RemoteShardWriter {
            tx,
            answer: Some(answer),
        }))
    }

    async fn read_shard(&self, id: ShardId, offset: u64, len: u64) -> Result<Bytes, DiskError> {
        self.call("read_shard", &(id, offset, len)).await
    }

    async fn shard_len(&self, id: ShardId) -> Result<u64, DiskError> {
        self.typed("shard_len", &id).await
    }

    async fn delete_shard(&self, id: ShardId) -> Result<(), DiskError> {
        self.call("delete_shard", &id).await.map(drop)
    }

    async fn get_records(&self, ns: &[u8], key: &[u8]) -> Result<Vec<Record>, DiskError> {
        self.typed("get_records", &(b(ns), b(key))).await
    }

    async fn put_record(
        &self,
        ns: &[u8],
        key: &[u8],
        put: RecordPut,
    ) -> Result<PutRecordOutcome, DiskError> {
        self.typed("put_record", &(b(ns), b(key), put)).await
    }

    async fn read_piece(&self, id: Uuid) -> Result<Bytes, DiskError> {
        self.call("read_piece", &id).await
    }

    async fn put_piece(&self, piece: Piece) -> Result<(), DiskError> {
        self.call("put_piece", &piece).await.map(drop)
    }

    async fn delete_piece(&self, id: Uuid) -> Result<(), DiskError> {
        self.call("delete_piece", &id).await.map(drop)
    }

    async fn collect_pieces(&self) -> Result<(), DiskError> {
        self.call("collect_pieces", &()).await.map(drop)
    }

    async fn delete_record(
        &self,
        ns: &[u8],
        key: &[u8],
        version: VersionId,
        if_stamp: Option<Stamp>,
    ) -> Result<Option<Record>, DiskError> {
        self.typed("delete_record", &(b(ns), b(key), version, if_stamp))
            .await
    }

    async fn delete_records(
        &self,
        ns: &[u8],
        items: Vec<(Vec<u8>, VersionId)>,
    ) -> Result<Vec<Option<Record>>, DiskError> {
        self.typed("delete_records", &(b(ns), items)).await
    }

    async fn list_records(
        &self,
        ns: &[u8],
        opts: RecordListOptions,
    ) -> Result<RecordPage, DiskError> {
        self.typed("list_records", &(b(ns), opts)).await
    }

    async fn list_heads(&self, ns: &[u8], opts: RecordListOptions) -> Result<HeadPage, DiskError> {
        self.typed("list_heads", &(b(ns), opts)).await
    }

    async fn put_upload(&self, ns: &[u8], entry: UploadEntry) -> Result<(), DiskError> {
        self.call("put_upload", &(b(ns), entry)).await.map(drop)
    }

    async fn get_upload(&self, ns: &[u8], key: &[u8], upload_id: Uuid) -> Result<Bytes, DiskError> {
        self.call("get_upload", &(b(ns), b(key), upload_id)).await
    }

    async fn delete_upload(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
    ) -> Result<Vec<PartEntry>, DiskError> {
        self.typed("delete_upload", &(b(ns), b(key), upload_id))
            .await
    }

    async fn list_uploads(
        &self,
        ns: &[u8],
        prefix: &[u8],
        start: UploadListStart,
        max: usize,
    ) -> Result<(Vec<UploadEntry>, bool), DiskError> {
        self.typed("list_uploads", &(b(ns), b(prefix), start, max))
            .await
    }

    async fn put_part(
        &self,
        ns: &[u8],
        key: &[u8],
        upload_id: Uuid,
        part: PartEntry,
        unstage: Vec<Uuid>,
    ) -> Result<Option<PartEntry>, DiskError> {
        self.typed("put_part", &(b(ns), b(key), upload_id, part, unstage))
            .await
    }

    async fn list_parts(
        &self,
        upload_id: Uuid,
        after: u32,
        max: usize,
    ) -> Result<(Vec<PartEntry>, bool), DiskError> {
        self.typed("list_parts", &(upload_id, after, max)).await
    }

    async fn acquire_leases(
        &self,
        names: Vec<Vec<u8>>,
        owner: Uuid,
        ttl_ms: u64,
    ) -> Result<bool, DiskError> {
        self.typed("acquire_leases", &(names, owner, ttl_ms)).await
    }

    async fn release_leases(&self, names: Vec<Vec<u8>>, owner: Uuid) -> Result<(), DiskError> {
        self.call("release_leases", &(names, owner)).await.map(drop)
    }
}
