//! The gateway side of internal RPC: [`RemoteDisk`] is a [`Disk`] on a
//! node, reached over one pooled HTTP/2 connection per node. A node that
//! fails to answer is skipped for a short while (every call fails
//! `Offline` at once) so that quorum operations do not wait on it; after
//! that one call probes it again. The client learns the node's session
//! with a signed `hello` and learns it again when the node says the
//! session changed (it restarted); a call refused for that reason was not
//! carried out, so it is sent once more.

use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::Request;
use http_body_util::BodyExt;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::auth::{self, ClusterSecret, Refusal};
use super::server::{stream_digest, FormatCall, ARGS};
use super::wire::{self, Frame, WireError};
use crate::disk::{Disk, Inventory, ShardWriter};
use crate::error::DiskError;
use crate::format::{DirState, FormatRecord};
use crate::messages::{
    DiskHealth, HeadPage, PutRecordOutcome, RecordListOptions, RecordPage, RecordPut, ShardOptions,
    ShardSummary, UploadListStart,
};
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

/// What a gateway needs to call its nodes: the cluster secret and, with
/// mutual TLS, its TLS configuration.
#[derive(Clone, Debug)]
pub struct NodeAccess {
    /// The cluster secret.
    pub secret: ClusterSecret,
    /// TLS towards the nodes (`None`: plain HTTP/2).
    pub tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
}

/// One node: its address, the connection pool and whether it is skipped.
pub struct NodeClient {
    base: String,
    secret: ClusterSecret,
    client: Client<HttpsConnector<HttpConnector>, RpcBody>,
    /// Set while the node is skipped (a probe clears it).
    skipped: std::sync::atomic::AtomicBool,
    /// The node's session, once learned.
    session: parking_lot::Mutex<Option<String>>,
    me: std::sync::Weak<NodeClient>,
}

impl NodeClient {
    /// A client of the node at `addr` (`host:port`), without TLS.
    pub fn new(addr: &str, secret: ClusterSecret) -> Arc<NodeClient> {
        NodeClient::with_access(addr, &NodeAccess { secret, tls: None })
    }

    /// A client of the node at `addr` (`host:port`), over TLS when
    /// `access` says so.
    pub fn with_access(addr: &str, access: &NodeAccess) -> Arc<NodeClient> {
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_nodelay(true);
        http.enforce_http(false);
        let tls = match &access.tls {
            Some(cfg) => (**cfg).clone(),
            None => super::tls::plain_config(),
        };
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http2()
            .wrap_connector(http);
        let scheme = if access.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .http2_only(true)
            .http2_initial_stream_window_size(super::STREAM_WINDOW)
            .http2_initial_connection_window_size(super::CONNECTION_WINDOW)
            .http2_max_frame_size(1 << 20)
            .http2_keep_alive_interval(PING_EVERY)
            .http2_keep_alive_timeout(PING_TIMEOUT)
            .http2_keep_alive_while_idle(true)
            .build(connector);
        Arc::new_cyclic(|me| NodeClient {
            base: format!("{scheme}://{addr}"),
            secret: access.secret.clone(),
            client,
            skipped: Default::default(),
            session: Default::default(),
            me: me.clone(),
        })
    }

    /// The node's address as given.
    pub fn address(&self) -> &str {
        self.base
            .trim_start_matches("https://")
            .trim_start_matches("http://")
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
                    // It may have restarted: learn its session again.
                    *me.session.lock() = None;
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
        to: &Target<'_>,
        digest: String,
        body: RpcBody,
    ) -> (String, Request<RpcBody>) {
        let path = format!("{}{op}", wire::PATH_PREFIX);
        let date = auth::now_millis().to_string();
        let nonce = auth::new_nonce();
        let sig = self.secret.sign_request(&auth::Call {
            method: "POST",
            path: &path,
            session: to.session,
            disk: to.disk,
            disk_id: to.disk_id,
            date: &date,
            nonce: &nonce,
            body: &digest,
        });
        let req = Request::post(format!("{}{path}", self.base))
            .header(wire::DISK, to.disk)
            .header(auth::SESSION, to.session)
            .header(auth::DISK_ID, to.disk_id)
            .header(auth::DATE, date)
            .header(auth::NONCE, &nonce)
            .header(auth::BODY, digest)
            .header(auth::SIGNATURE, sig)
            .body(body)
            .expect("valid request");
        (nonce, req)
    }

    /// The node's session, asked with `hello` when not known.
    async fn session(&self) -> Result<String, DiskError> {
        if let Some(s) = self.session.lock().clone() {
            return Ok(s);
        }
        let body = wire::encode(&());
        let to = Target {
            session: "",
            disk: "",
            disk_id: "",
        };
        // Like a read, tried once more on a fresh connection when it fails
        // fast (the pooled one may be to the node's previous run).
        let started = std::time::Instant::now();
        for last in [false, true] {
            let (nonce, req) = self.request(
                "hello",
                &to,
                auth::body_digest(&body),
                RpcBody::Full(Some(body.clone())),
            );
            match self.send_once(nonce, req, Some(CALL_TIMEOUT), last).await {
                Sent::Done(Ok(answer)) => {
                    let session: String = wire::decode(&answer)?;
                    *self.session.lock() = Some(session.clone());
                    return Ok(session);
                }
                Sent::Done(Err(e))
                    if !last && e.is_disk_failure() && started.elapsed() < RETRY_WITHIN =>
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Sent::Done(Err(e)) => {
                    if e.is_disk_failure() {
                        self.skip();
                    }
                    return Err(e);
                }
                Sent::OtherSession | Sent::OtherDisk => break,
            }
        }
        Err(DiskError::Offline(format!(
            "node {} refused hello",
            self.address()
        )))
    }

    /// Sends one request and checks its answer; a refusal for the session
    /// is an `Offline` error (the node restarted), and the session is
    /// learned again by the next call.
    async fn send(
        &self,
        nonce: String,
        req: Request<RpcBody>,
        timeout: Option<Duration>,
    ) -> Result<Bytes, DiskError> {
        match self.send_once(nonce, req, timeout, true).await {
            Sent::Done(answer) => answer,
            Sent::OtherSession => Err(self.restarted()),
            Sent::OtherDisk => Err(DiskError::Offline(format!(
                "node {}: the directory holds another disk now",
                self.address()
            ))),
        }
    }

    fn restarted(&self) -> DiskError {
        DiskError::Offline(format!(
            "node {} restarted during the call; it was not carried out",
            self.address()
        ))
    }

    /// [`Self::send`]; a failure to reach the node marks it skipped only
    /// with `final_try`.
    async fn send_once(
        &self,
        nonce: String,
        req: Request<RpcBody>,
        timeout: Option<Duration>,
        final_try: bool,
    ) -> Sent {
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
            let (result, refusal, sig) = (
                header(wire::RESULT),
                header(auth::REFUSAL),
                header(auth::SIGNATURE),
            );
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| DiskError::Offline(format!("node {}: {e}", self.address())))?
                .to_bytes();
            Ok::<_, DiskError>((status, result, refusal, sig, body))
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
        let (status, result, refusal, sig, body) = match answered {
            Ok(a) => a,
            Err(e) => {
                if final_try && e.is_disk_failure() {
                    self.skip()
                }
                return Sent::Done(Err(e));
            }
        };
        if status == 401 {
            // A refusal is unsigned: believing a forged one costs at most
            // a repeated call, which the node checks again.
            if refusal.as_deref() == Some(Refusal::OtherSession.code()) {
                *self.session.lock() = None;
                return Sent::OtherSession;
            }
            if refusal.as_deref() == Some(Refusal::OtherDisk.code()) {
                return Sent::OtherDisk;
            }
            return Sent::Done(Err(DiskError::Offline(format!(
                "node {} refused the call: {} (is the cluster secret the same?)",
                self.address(),
                String::from_utf8_lossy(&body).trim()
            ))));
        }
        let result = result.unwrap_or_default();
        let genuine = auth::answer_is_genuine(
            &self.secret,
            &auth::Answer {
                nonce: &nonce,
                status,
                result: &result,
                body: &auth::body_digest(&body),
            },
            sig.as_deref(),
        );
        if !genuine {
            return Sent::Done(Err(DiskError::Offline(format!(
                "node {} answered without a valid signature (or the answer was altered)",
                self.address()
            ))));
        }
        Sent::Done(match result.as_str() {
            "ok" => Ok(body),
            "err" => wire::decode::<WireError>(&body).and_then(|e| Err(e.into())),
            other => Err(DiskError::corrupt(
                "rpc answer",
                format!("result {other:?}"),
            )),
        })
    }

    /// One unary call on directory `disk` holding `disk_id` (`None` for a
    /// call on the directory as such): `args` encoded, the raw answer body
    /// returned.
    pub async fn call<A: Serialize>(
        &self,
        op: &str,
        disk: &str,
        disk_id: Option<DiskId>,
        args: &A,
    ) -> Result<Bytes, DiskError> {
        self.call_on(op, disk, disk_id, args)
            .await
            .map_err(|f| match f {
                Failed::Disk(e) => e,
                Failed::OtherDisk => DiskError::Offline(format!(
                    "node {}: {disk} holds another disk than {}",
                    self.address(),
                    disk_id.map(|d| d.to_string()).unwrap_or_default()
                )),
            })
    }

    async fn call_on<A: Serialize>(
        &self,
        op: &str,
        disk: &str,
        disk_id: Option<DiskId>,
        args: &A,
    ) -> Result<Bytes, Failed> {
        self.check_skipped()?;
        let body = wire::encode(args);
        let digest = auth::body_digest(&body);
        let disk_id = disk_id.map(|d| d.to_string()).unwrap_or_default();
        // A read that failed fast (a pooled connection the node had
        // closed, a reset) is tried once more on a fresh connection before
        // the node counts as gone; writes are not repeated. A call refused
        // for the node's session was not carried out, and is sent once
        // more under the new one.
        let retry = READ_ONLY.contains(&op);
        let started = std::time::Instant::now();
        let mut renewed = false;
        let mut retried = false;
        loop {
            let session = self.session().await?;
            let to = Target {
                session: &session,
                disk,
                disk_id: &disk_id,
            };
            let (nonce, req) =
                self.request(op, &to, digest.clone(), RpcBody::Full(Some(body.clone())));
            let last = !retry || retried;
            match self.send_once(nonce, req, Some(CALL_TIMEOUT), last).await {
                Sent::OtherSession if !renewed => renewed = true,
                Sent::OtherSession => return Err(self.restarted().into()),
                Sent::OtherDisk => return Err(Failed::OtherDisk),
                Sent::Done(Err(e))
                    if !last && e.is_disk_failure() && started.elapsed() < RETRY_WITHIN =>
                {
                    tracing::debug!(node = self.address(), op, error = %e, "retrying a read");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    retried = true;
                }
                Sent::Done(Err(e)) if !last && e.is_disk_failure() => {
                    self.skip();
                    return Err(e.into());
                }
                Sent::Done(answer) => return Ok(answer?),
            }
        }
    }

    /// What the node's directory `disk` holds.
    pub async fn probe(&self, disk: &str) -> Result<DirState, DiskError> {
        wire::decode(&self.call("probe", disk, None, &()).await?)
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
        self.call("format", disk, None, &call).await.map(drop)
    }
}

/// Who a call is for: the node's session and the disk.
struct Target<'a> {
    session: &'a str,
    disk: &'a str,
    disk_id: &'a str,
}

/// How one exchange ended.
enum Sent {
    /// The node answered (or could not be reached).
    Done(Result<Bytes, DiskError>),
    /// The node refused the call as signed for another session.
    OtherSession,
    /// The node refused the call: the directory holds another disk.
    OtherDisk,
}

/// Why a call on a disk failed.
enum Failed {
    /// As the disk or the node said.
    Disk(DiskError),
    /// The directory holds another disk than the call was signed for.
    OtherDisk,
}

impl From<DiskError> for Failed {
    fn from(e: DiskError) -> Self {
        Failed::Disk(e)
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
    /// The disk calls are signed for; the node refuses them if the
    /// directory holds another.
    id: parking_lot::Mutex<DiskId>,
    /// The slot of its set the disk must fill: deployment, pool, set and
    /// position. A disk formatted into the slot as a replacement (by this
    /// gateway or another) is taken on; any other is refused.
    slot: (Uuid, u32, u32, u32),
    label: String,
}

impl RemoteDisk {
    /// The disk in directory `dir` of `node` whose format should be
    /// `record`.
    pub fn new(node: Arc<NodeClient>, dir: &str, record: &FormatRecord) -> RemoteDisk {
        RemoteDisk {
            label: format!("{}:{dir}", node.address()),
            node,
            dir: dir.to_string(),
            id: parking_lot::Mutex::new(record.disk_id),
            slot: (
                record.deployment_id,
                record.pool,
                record.set,
                record.position,
            ),
        }
    }

    fn id(&self) -> DiskId {
        *self.id.lock()
    }

    /// After the node said the directory holds another disk: takes it on
    /// if it was formatted into this disk's slot.
    async fn follow_replacement(&self) -> Result<(), DiskError> {
        let state = self.node.probe(&self.dir).await?;
        match state {
            DirState::Formatted(f) if (f.deployment_id, f.pool, f.set, f.position) == self.slot => {
                let old = std::mem::replace(&mut *self.id.lock(), f.disk_id);
                if old != f.disk_id {
                    tracing::warn!(disk = %self.label, old = %old, new = %f.disk_id, "the slot holds a replacement disk now");
                }
                Ok(())
            }
            other => Err(DiskError::Offline(format!(
                "{} holds another set's disk or none ({other:?})",
                self.label
            ))),
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
        for _ in 0..2 {
            match self
                .node
                .call_on(op, &self.dir, Some(self.id()), args)
                .await
            {
                Ok(b) => return Ok(b),
                Err(Failed::Disk(e)) => return Err(e),
                Err(Failed::OtherDisk) => self.follow_replacement().await?,
            }
        }
        Err(DiskError::Offline(format!(
            "{} keeps holding another disk",
            self.label
        )))
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
    key: auth::FrameKey,
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
        let frame = wire::encode_frame(&mut self.key, &Frame::Data(block));
        match self.tx.send(frame).await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.refused().await),
        }
    }

    async fn finish(mut self: Box<Self>) -> Result<ShardSummary, DiskError> {
        let frame = wire::encode_frame(&mut self.key, &Frame::Finish);
        if self.tx.send(frame).await.is_err() {
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
        let session = self.node.session().await?;
        let to = Target {
            session: &session,
            disk: &self.dir,
            disk_id: &self.id().to_string(),
        };
        let (nonce, mut req) = self.node.request(
            "create_shard",
            &to,
            stream_digest(&args),
            RpcBody::Stream(rx),
        );
        let key = self.node.secret.frame_key(&nonce);
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
            key,
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
