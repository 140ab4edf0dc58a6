//! The node side of internal RPC: `granary node` serves its local disks to
//! gateways over HTTP/2 (plain, or TLS with client certificates). Every
//! call is authenticated (see [`super::auth`]); a disk is addressed by the
//! directory the node was given and, once formatted, by its id; it opens
//! once it is formatted (by a gateway's `format` call or at start if it
//! already was).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::RwLock;
use uuid::Uuid;

use super::auth::{self, Call, CallGuard, ClusterSecret, Refusal};
use super::wire::{self, Frame, FrameReader, WireError};
use crate::disk::{Disk, Inventory};
use crate::error::DiskError;
use crate::format::{probe_dir, DirState, FormatRecord};
use crate::local::{LocalDisk, LocalDiskOptions};
use crate::messages::{RecordListOptions, RecordPut, ShardOptions, UploadListStart};
use crate::types::{PartEntry, ShardId, Stamp, UploadEntry, VersionId};

/// Path of the unauthenticated liveness answer (it says nothing but "ok").
pub const HEALTH_PATH: &str = "/healthz";

/// A node's disks and the secret its callers must know.
pub struct NodeService {
    secret: ClusterSecret,
    guard: CallGuard,
    disks: HashMap<String, Slot>,
    opts: LocalDiskOptions,
}

struct Slot {
    dir: PathBuf,
    disk: RwLock<Option<Arc<LocalDisk>>>,
}

/// What a `format` call asks for.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct FormatCall {
    /// The record to write.
    pub record: FormatRecord,
    /// The disk id the slot must hold now for the write to go ahead (`None`:
    /// the directory must be empty or missing), so two gateways formatting
    /// at once cannot both win.
    pub expect: Option<crate::types::DiskId>,
}

type Answer = Result<Bytes, DiskError>;

impl NodeService {
    /// Serves `dirs`; each opens now if formatted. Blocking.
    pub fn open(
        dirs: &[PathBuf],
        secret: ClusterSecret,
        opts: LocalDiskOptions,
    ) -> Result<NodeService, DiskError> {
        let mut disks = HashMap::new();
        for dir in dirs {
            let key = dir.display().to_string();
            let disk = match probe_dir(dir) {
                DirState::Formatted(_) => Some(Arc::new(LocalDisk::open(dir, opts.clone())?)),
                DirState::Foreign(why) => {
                    tracing::error!(dir = %key, %why, "not a Granary disk; it stays offline");
                    None
                }
                _ => None,
            };
            if disks
                .insert(
                    key.clone(),
                    Slot {
                        dir: dir.clone(),
                        disk: RwLock::new(disk),
                    },
                )
                .is_some()
            {
                return Err(DiskError::InvalidArgument(format!("{key} is given twice")));
            }
        }
        Ok(NodeService {
            secret,
            guard: CallGuard::new(),
            disks,
            opts,
        })
    }

    /// The disks that are open, for flushing at shutdown.
    pub async fn open_disks(&self) -> Vec<Arc<LocalDisk>> {
        let mut out = Vec::new();
        for s in self.disks.values() {
            if let Some(d) = s.disk.read().await.clone() {
                out.push(d);
            }
        }
        out
    }

    /// This run's session id (what `hello` answers).
    pub fn session(&self) -> &str {
        self.guard.session()
    }

    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<Full<Bytes>> {
        if req.uri().path() == HEALTH_PATH {
            return Response::new(Full::new(Bytes::from_static(b"ok\n")));
        }
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        let (session, disk, disk_id, date, nonce, digest, signature) = (
            header(auth::SESSION),
            header(wire::DISK),
            header(auth::DISK_ID),
            header(auth::DATE),
            header(auth::NONCE),
            header(auth::BODY),
            header(auth::SIGNATURE),
        );
        let path = req.uri().path().to_string();
        let op = path
            .strip_prefix(wire::PATH_PREFIX)
            .unwrap_or("")
            .to_string();
        let call = Call {
            method: req.method().as_str(),
            path: &path,
            session: &session,
            disk: &disk,
            disk_id: &disk_id,
            date: &date,
            nonce: &nonce,
            body: &digest,
        };
        let checked = self
            .guard
            .check(&self.secret, &call, &signature, op == "hello");
        let checked = match checked {
            Ok(()) => self.checked_disk(&op, &disk, &disk_id).await,
            Err(why) => Err(why),
        };
        let opened = match checked {
            Ok(opened) => opened,
            Err(why) => {
                tracing::warn!(?why, %path, %disk, "internal RPC refused");
                let mut r = Response::new(Full::new(Bytes::from(format!("refused: {why:?}\n"))));
                *r.status_mut() = StatusCode::UNAUTHORIZED;
                r.headers_mut()
                    .insert(auth::REFUSAL, http::HeaderValue::from_static(why.code()));
                return r;
            }
        };
        let answer = if op == "create_shard" {
            self.create_shard(&disk, opened, &nonce, &digest, req).await
        } else {
            match read_unary(req.into_body(), &digest).await {
                Ok(body) => self.dispatch(&op, &disk, opened, body).await,
                Err(e) => Err(e),
            }
        };
        self.answer(&nonce, answer)
    }

    /// The open disk a call is for, if any: a call on a formatted disk
    /// must name the disk its directory holds, and then works on the disk
    /// checked here; only `hello`, `probe` and `format` address a
    /// directory as such (they get `None`).
    async fn checked_disk(
        &self,
        op: &str,
        disk: &str,
        disk_id: &str,
    ) -> Result<Option<Arc<LocalDisk>>, Refusal> {
        if matches!(op, "hello" | "probe" | "format") {
            return Ok(None);
        }
        let Some(slot) = self.disks.get(disk) else {
            return Ok(None);
        };
        match slot.disk.read().await.clone() {
            Some(d) if d.format().disk_id.to_string() != disk_id => Err(Refusal::OtherDisk),
            opened => Ok(opened),
        }
    }

    fn answer(&self, nonce: &str, answer: Answer) -> Response<Full<Bytes>> {
        let (result, body) = match answer {
            Ok(b) => ("ok", b),
            Err(e) => ("err", wire::encode(&WireError::from(&e))),
        };
        let sig = self.secret.sign_answer(&auth::Answer {
            nonce,
            status: 200,
            result,
            body: &auth::body_digest(&body),
        });
        Response::builder()
            .header(wire::RESULT, result)
            .header(auth::SIGNATURE, sig)
            .body(Full::new(body))
            .expect("valid answer")
    }

    fn slot(&self, disk: &str) -> Result<&Slot, DiskError> {
        self.disks
            .get(disk)
            .ok_or_else(|| DiskError::Offline(format!("this node does not serve {disk}")))
    }

    /// The disk [`Self::checked_disk`] found, or why there is none.
    fn need(
        &self,
        disk: &str,
        opened: Option<Arc<LocalDisk>>,
    ) -> Result<Arc<LocalDisk>, DiskError> {
        self.slot(disk)?;
        opened.ok_or_else(|| DiskError::Offline(format!("{disk} is not formatted")))
    }

    async fn format(&self, disk: &str, call: FormatCall) -> Answer {
        let slot = self.slot(disk)?;
        let mut open = slot.disk.write().await;
        let dir = slot.dir.clone();
        let opts = self.opts.clone();
        let reopen = open.is_none();
        let opened = tokio::task::spawn_blocking(move || {
            let current = match probe_dir(&dir) {
                DirState::Formatted(f) => Some(f.disk_id),
                DirState::Empty | DirState::Missing => None,
                DirState::Foreign(why) => return Err(DiskError::Format(why)),
            };
            if current != call.expect {
                return Err(DiskError::Format(format!(
                    "{} changed under the formatting gateway (holds {:?}, expected {:?})",
                    dir.display(),
                    current,
                    call.expect
                )));
            }
            call.record.write_to(&dir)?;
            Ok(if reopen {
                Some(Arc::new(LocalDisk::open(&dir, opts)?))
            } else {
                None
            })
        })
        .await
        .map_err(|e| DiskError::Io(std::io::Error::other(e)))??;
        if let Some(d) = opened {
            *open = Some(d);
        }
        Ok(Bytes::new())
    }

    async fn create_shard(
        &self,
        disk: &str,
        opened: Option<Arc<LocalDisk>>,
        nonce: &str,
        digest: &str,
        req: Request<Incoming>,
    ) -> Answer {
        let args = req
            .headers()
            .get(ARGS)
            .and_then(|v| hex::decode(v.as_bytes()).ok())
            .ok_or_else(|| DiskError::InvalidArgument("stream arguments missing".into()))?;
        if digest != stream_digest(&args) {
            return Err(DiskError::InvalidArgument(
                "stream arguments do not match".into(),
            ));
        }
        let (id, opts): (ShardId, ShardOptions) = wire::decode(&args)?;
        let d = self.need(disk, opened)?;
        let mut writer = d.create_shard(id, opts).await?;
        let mut frames = FrameReader::new(self.secret.frame_key(nonce));
        let mut body = req.into_body();
        loop {
            let chunk = match body.frame().await {
                Some(Ok(f)) => match f.into_data() {
                    Ok(c) => c,
                    Err(_) => continue,
                },
                Some(Err(e)) => return Err(DiskError::Offline(format!("stream broke: {e}"))),
                None => {
                    return Err(DiskError::Offline(
                        "stream ended before the shard was finished".into(),
                    ))
                }
            };
            frames.push(&chunk);
            while let Some(frame) = frames.next_frame()? {
                match frame {
                    Frame::Data(block) => writer.append(block).await?,
                    Frame::Finish => {
                        let summary = writer.finish().await?;
                        return Ok(wire::encode(&summary));
                    }
                }
            }
        }
    }

    async fn dispatch(
        &self,
        op: &str,
        disk: &str,
        opened: Option<Arc<LocalDisk>>,
        body: Bytes,
    ) -> Answer {
        if op == "hello" {
            return Ok(wire::encode(&self.session()));
        }
        if op == "probe" {
            let dir = self.slot(disk)?.dir.clone();
            let state = tokio::task::spawn_blocking(move || probe_dir(&dir))
                .await
                .map_err(|e| DiskError::Io(std::io::Error::other(e)))?;
            return Ok(wire::encode(&state));
        }
        if op == "format" {
            return self.format(disk, wire::decode(&body)?).await;
        }
        let d = self.need(disk, opened)?;
        let enc = |v| Ok(wire::encode(&v));
        match op {
            "health" => enc(d.health().await),
            "read_shard" => {
                let (id, offset, len): (ShardId, u64, u64) = wire::decode(&body)?;
                d.read_shard(id, offset, len).await
            }
            "shard_len" => {
                let id: ShardId = wire::decode(&body)?;
                Ok(wire::encode(&d.shard_len(id).await?))
            }
            "delete_shard" => {
                d.delete_shard(wire::decode(&body)?).await?;
                Ok(Bytes::new())
            }
            "get_records" => {
                let (ns, key): (Bytes, Bytes) = wire::decode(&body)?;
                Ok(wire::encode(&d.get_records(&ns, &key).await?))
            }
            "put_record" => {
                let (ns, key, put): (Bytes, Bytes, RecordPut) = wire::decode(&body)?;
                Ok(wire::encode(&d.put_record(&ns, &key, put).await?))
            }
            "read_piece" => d.read_piece(wire::decode::<Uuid>(&body)?).await,
            "put_piece" => {
                d.put_piece(wire::decode(&body)?).await?;
                Ok(Bytes::new())
            }
            "delete_piece" => {
                d.delete_piece(wire::decode(&body)?).await?;
                Ok(Bytes::new())
            }
            "collect_pieces" => {
                d.collect_pieces().await?;
                Ok(Bytes::new())
            }
            "delete_record" => {
                let (ns, key, version, stamp): (Bytes, Bytes, VersionId, Option<Stamp>) =
                    wire::decode(&body)?;
                Ok(wire::encode(
                    &d.delete_record(&ns, &key, version, stamp).await?,
                ))
            }
            "delete_records" => {
                let (ns, items): (Bytes, Vec<(Vec<u8>, VersionId)>) = wire::decode(&body)?;
                Ok(wire::encode(&d.delete_records(&ns, items).await?))
            }
            "list_records" => {
                let (ns, opts): (Bytes, RecordListOptions) = wire::decode(&body)?;
                Ok(wire::encode(&d.list_records(&ns, opts).await?))
            }
            "list_heads" => {
                let (ns, opts): (Bytes, RecordListOptions) = wire::decode(&body)?;
                Ok(wire::encode(&d.list_heads(&ns, opts).await?))
            }
            "put_upload" => {
                let (ns, entry): (Bytes, UploadEntry) = wire::decode(&body)?;
                d.put_upload(&ns, entry).await?;
                Ok(Bytes::new())
            }
            "get_upload" => {
                let (ns, key, id): (Bytes, Bytes, Uuid) = wire::decode(&body)?;
                d.get_upload(&ns, &key, id).await
            }
            "delete_upload" => {
                let (ns, key, id): (Bytes, Bytes, Uuid) = wire::decode(&body)?;
                Ok(wire::encode(&d.delete_upload(&ns, &key, id).await?))
            }
            "list_uploads" => {
                let (ns, prefix, start, max): (Bytes, Bytes, UploadListStart, usize) =
                    wire::decode(&body)?;
                Ok(wire::encode(
                    &d.list_uploads(&ns, &prefix, start, max).await?,
                ))
            }
            "put_part" => {
                let (ns, key, id, part, unstage): (Bytes, Bytes, Uuid, PartEntry, Vec<Uuid>) =
                    wire::decode(&body)?;
                Ok(wire::encode(
                    &d.put_part(&ns, &key, id, part, unstage).await?,
                ))
            }
            "stage" => {
                let (ids, owner): (Vec<Uuid>, Uuid) = wire::decode(&body)?;
                d.stage(ids, owner).await?;
                Ok(Bytes::new())
            }
            "unstage" => {
                d.unstage(wire::decode(&body)?).await?;
                Ok(Bytes::new())
            }
            "list_staged" => Ok(wire::encode(&d.list_staged().await?)),
            "list_shards" => {
                let (after, max): (Option<ShardId>, usize) = wire::decode(&body)?;
                Ok(wire::encode(&d.list_shards(after, max).await?))
            }
            "list_pieces" => {
                let (after, max): (Option<Uuid>, usize) = wire::decode(&body)?;
                Ok(wire::encode(&d.list_pieces(after, max).await?))
            }
            "scan_records" => {
                let (after, max): (Option<Vec<u8>>, usize) = wire::decode(&body)?;
                Ok(wire::encode(&d.scan_records(after, max).await?))
            }
            "scan_uploads" => {
                let (after, max): (Option<Vec<u8>>, usize) = wire::decode(&body)?;
                Ok(wire::encode(&d.scan_uploads(after, max).await?))
            }
            "list_parts" => {
                let (id, after, max): (Uuid, u32, usize) = wire::decode(&body)?;
                Ok(wire::encode(&d.list_parts(id, after, max).await?))
            }
            "acquire_leases" => {
                let (names, owner, ttl): (Vec<Vec<u8>>, Uuid, u64) = wire::decode(&body)?;
                Ok(wire::encode(&d.acquire_leases(names, owner, ttl).await?))
            }
            "release_leases" => {
                let (names, owner): (Vec<Vec<u8>>, Uuid) = wire::decode(&body)?;
                d.release_leases(names, owner).await?;
                Ok(Bytes::new())
            }
            other => Err(DiskError::InvalidArgument(format!(
                "unknown call {other:?}"
            ))),
        }
    }
}

/// Header carrying a streamed call's arguments (hex of MessagePack).
pub const ARGS: &str = "x-granary-args";

/// The body digest a streamed call signs: its arguments' digest.
pub fn stream_digest(args: &[u8]) -> String {
    format!("{}:{}", auth::STREAMED, auth::body_digest(args))
}

async fn read_unary(body: Incoming, digest: &str) -> Result<Bytes, DiskError> {
    let bytes = Limited::new(body, wire::MAX_UNARY_BODY)
        .collect()
        .await
        .map_err(|e| DiskError::InvalidArgument(format!("call body: {e}")))?
        .to_bytes();
    if auth::body_digest(&bytes) != digest {
        return Err(DiskError::InvalidArgument(
            "call body does not match its digest".into(),
        ));
    }
    Ok(bytes)
}

/// Waits for the next connection, riding out failed accepts (such as
/// running out of file descriptors) with a short pause instead of a busy
/// loop.
pub async fn accept(listener: &TcpListener) -> (tokio::net::TcpStream, std::net::SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(c) => return c,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Serves `service` on `listener` (HTTP/2: over TLS with client
/// certificates when `tls` is given, else plain with prior knowledge) until
/// `shutdown` resolves; calls in flight then get a few seconds.
pub async fn serve_node(
    listener: TcpListener,
    service: Arc<NodeService>,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .initial_stream_window_size(super::STREAM_WINDOW)
        .initial_connection_window_size(super::CONNECTION_WINDOW)
        .max_frame_size(1 << 20)
        .max_send_buf_size(4 << 20)
        .max_concurrent_streams(4096)
        .keep_alive_interval(Some(Duration::from_secs(10)))
        .keep_alive_timeout(Duration::from_secs(20));
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            c = accept(&listener) => c,
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let (svc, builder, watcher) = (service.clone(), builder.clone(), graceful.watcher());
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                None => serve_connection(&builder, watcher, stream, svc).await,
                Some(acceptor) => {
                    match tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => serve_connection(&builder, watcher, tls, svc).await,
                        Ok(Err(e)) => {
                            tracing::warn!(%peer, error = %e, "internal RPC TLS handshake refused")
                        }
                        Err(_) => tracing::warn!(%peer, "internal RPC TLS handshake timed out"),
                    }
                }
            }
        });
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
}

/// Longest a TLS handshake may take.
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);

async fn serve_connection<I>(
    builder: &hyper::server::conn::http2::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
    io: I,
    service: Arc<NodeService>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let conn = builder.serve_connection(
        TokioIo::new(io),
        hyper::service::service_fn(move |req| {
            let svc = service.clone();
            async move { Ok::<_, std::convert::Infallible>(svc.handle(req).await) }
        }),
    );
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(error = %e, "node connection ended");
    }
}
