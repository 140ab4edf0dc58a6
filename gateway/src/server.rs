//! The listener: TCP_NODELAY on every connection (small responses must not
//! wait for Nagle), optional TLS (rustls), HTTP/1.1 and HTTP/2, a cap on
//! open connections, header and idle deadlines on every connection (see
//! `conn_guard.rs`), and graceful shutdown that lets in-flight requests
//! finish.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::conn_guard::{Activity, Deadlines, Guarded, StopReading};
use crate::service::Connection;

/// Logs connections refused at the cap: the first at once, then a count
/// at most every ten seconds, so a flood cannot flood the log too.
#[derive(Default)]
struct Refusals {
    since_log: u64,
    logged: Option<std::time::Instant>,
}

impl Refusals {
    fn note(&mut self, peer: std::net::SocketAddr, cap: usize) {
        self.since_log += 1;
        if self
            .logged
            .is_some_and(|t| t.elapsed() < Duration::from_secs(10))
        {
            return;
        }
        tracing::warn!(
            %peer,
            refused = self.since_log,
            "connection limit reached ({cap} open, --max-connections): refusing new connections"
        );
        self.since_log = 0;
        self.logged = Some(std::time::Instant::now());
    }
}

/// Longest a TLS handshake may take.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connection handling options.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Longest time a client may take to send a request's headers (the
    /// first from the moment it is accepted).
    pub header_read_timeout: Duration,
    /// Longest a connection may stay without traffic and without a request
    /// in flight once it has served one.
    pub idle_timeout: Duration,
    /// Most connections open at once; past it new ones are closed at once.
    pub max_connections: usize,
    /// Longest wait for in-flight requests at shutdown.
    pub shutdown_grace: Duration,
    /// Serve TLS with this configuration.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4096,
            shutdown_grace: Duration::from_secs(30),
            tls: None,
        }
    }
}

/// Loads a PEM certificate chain and private key into a TLS configuration
/// offering HTTP/2 and HTTP/1.1.
pub fn load_tls(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate found", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    // The provider is named: with both ring and aws-lc in one binary (the
    // admin client brings ring), rustls will not pick one by itself.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("TLS certificate and key do not fit: {e}"))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

fn spawn_connection<I>(
    builder: &Builder<TokioExecutor>,
    watcher: Watcher,
    io: I,
    activity: Arc<Activity>,
    app: Router,
    conn: Connection,
    permit: OwnedSemaphorePermit,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |mut req: http::Request<Incoming>| {
        req.extensions_mut().insert(conn);
        let in_flight = activity.begin();
        let http1 = req.version() < http::Version::HTTP_2;
        let answer = app.clone().oneshot(req);
        let activity = activity.clone();
        async move {
            let r = answer.await;
            if let Ok(resp) = &r {
                if http1 && resp.extensions().get::<StopReading>().is_some() {
                    activity.condemn();
                }
            }
            drop(in_flight);
            r
        }
    });
    let served = builder
        .serve_connection_with_upgrades(TokioIo::new(io), svc)
        .into_owned();
    let served = watcher.watch(served);
    tokio::spawn(async move {
        if let Err(e) = served.await {
            tracing::debug!(peer = %conn.peer, error = %e, "connection ended with an error");
        }
        drop(permit);
    });
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops
/// accepting and waits (up to the grace period) for open requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(opts.header_read_timeout)
        .keep_alive(true);
    // HTTP/2 (over TLS, by ALPN): flow-control windows that follow the
    // connection's bandwidth-delay product instead of the fixed 1 MiB
    // default, larger frames from clients, and room to queue whole read
    // units per stream.
    builder
        .http2()
        .timer(TokioTimer::new())
        .adaptive_window(true)
        .max_frame_size(1 << 20)
        .max_send_buf_size(4 << 20);
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    let tls = opts.tls.clone().map(TlsAcceptor::from);
    tokio::pin!(shutdown);
    let slots = Arc::new(Semaphore::new(opts.max_connections));
    let deadlines = Deadlines {
        header: opts.header_read_timeout,
        idle: opts.idle_timeout,
    };
    let mut refusals = Refusals::default();
    loop {
        let (stream, peer) = tokio::select! {
            c = placement::accept(&listener) => c,
            _ = &mut shutdown => break,
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            refusals.note(peer, opts.max_connections);
            drop(stream);
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let stream = Guarded::new(stream, deadlines);
        let activity = stream.activity();
        match &tls {
            None => spawn_connection(
                &builder,
                graceful.watcher(),
                stream,
                activity,
                app.clone(),
                Connection {
                    peer,
                    secure: false,
                    tls_version: None,
                },
                permit,
            ),
            Some(acceptor) => {
                let (acceptor, builder, watcher, app) = (
                    acceptor.clone(),
                    builder.clone(),
                    graceful.watcher(),
                    app.clone(),
                );
                tokio::spawn(async move {
                    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
                    {
                        Ok(Ok(tls)) => {
                            let tls_version = match tls.get_ref().1.protocol_version() {
                                Some(rustls::ProtocolVersion::TLSv1_3) => Some("1.3"),
                                Some(rustls::ProtocolVersion::TLSv1_2) => Some("1.2"),
                                _ => None,
                            };
                            spawn_connection(
                                &builder,
                                watcher,
                                tls,
                                activity,
                                app,
                                Connection {
                                    peer,
                                    secure: true,
                                    tls_version,
                                },
                                permit,
                            )
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        }
    }
    drop(listener);
    tracing::info!("stopped accepting connections; finishing in-flight requests");
    if tokio::time::timeout(opts.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish within the grace period");
    }
}
