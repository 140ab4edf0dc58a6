//! `granary-null`: the ceiling for a client — an HTTP server that answers
//! the S3 calls `granary-load` and the model loaders make without storing
//! anything. PUTs (objects, parts) are read and discarded; GETs and HEADs
//! of any key serve `--size` bytes from memory (with Range support);
//! multipart calls and ListObjectsV2 get minimal valid answers. With
//! `--dir`, every file under the directory is loaded into memory and served
//! as the key of its relative path in any bucket (HEAD, ranged GET, and
//! ListObjectsV2 with a prefix), so a real client can load a real model
//! from it. It checks no signature.
//!
//! ```text
//! granary-null --address 127.0.0.1:9300 --size 67108864
//! granary-null --address 127.0.0.1:9300 --dir /var/tmp/model-dir
//! ```

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use clap::Parser;
use futures::stream;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};

/// A server that discards uploads and serves downloads from memory.
#[derive(Parser, Debug)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9300")]
    address: SocketAddr,
    /// Size of every object it serves.
    #[arg(long, default_value_t = 64 << 20)]
    size: u64,
    /// Serve the files under this directory (loaded into memory at start)
    /// instead of `--size` bytes for any key.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print each request (milliseconds since start, method, path, query,
    /// Range) to stderr: how a client reads.
    #[arg(long)]
    log: bool,
}

/// What GETs serve: one body for every key, or the files of `--dir`.
enum Objects {
    Any(Bytes),
    Files(BTreeMap<String, Bytes>),
}

impl Objects {
    fn get(&self, key: &str) -> Option<Bytes> {
        match self {
            Objects::Any(b) => Some(b.clone()),
            Objects::Files(f) => f.get(key).cloned(),
        }
    }

    /// The ListObjectsV2 answer for `prefix`.
    fn list(&self, prefix: &str) -> String {
        let Objects::Files(files) = self else {
            return "<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>".into();
        };
        let items: Vec<String> = files
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| {
                format!(
                    "<Contents><Key>{k}</Key><LastModified>2026-11-29T00:00:00.000Z</LastModified><ETag>{ETAG}</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
                    v.len()
                )
            })
            .collect();
        format!(
            "<ListBucketResult><Name>b</Name><Prefix>{prefix}</Prefix><KeyCount>{}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>{}</ListBucketResult>",
            items.len(),
            items.concat()
        )
    }
}

/// Every regular file under `dir`, by its path relative to `dir`.
fn load(dir: &Path, base: &Path, out: &mut BTreeMap<String, Bytes>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            load(&path, base, out)?;
        } else {
            let key = path.strip_prefix(base).expect("under base");
            out.insert(
                key.to_string_lossy().into_owned(),
                std::fs::read(&path)?.into(),
            );
        }
    }
    Ok(())
}

/// The value of query parameter `name`, percent-decoded.
fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| {
            percent_encoding::percent_decode_str(&v.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// Bytes per body frame of a GET.
const FRAME: usize = 1 << 20;
const ETAG: &str = "\"d41d8cd98f00b204e9800998ecf8427e\"";

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("etag", ETAG)
        .body(Full::new(body.into()).boxed())
        .expect("valid response")
}

/// `bytes=a-b` / `bytes=a-` / `bytes=-n` within `size`.
fn range(h: Option<&http::HeaderValue>, size: u64) -> Option<(u64, u64)> {
    let spec = h?.to_str().ok()?.strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let (start, end) = match (a, b) {
        ("", n) => (size.saturating_sub(n.parse().ok()?), size - 1),
        (a, "") => (a.parse().ok()?, size - 1),
        (a, b) => (a.parse().ok()?, b.parse::<u64>().ok()?.min(size - 1)),
    };
    (start <= end && end < size).then_some((start, end + 1))
}

async fn handle(
    req: Request<Incoming>,
    objects: Arc<Objects>,
    log: Option<std::time::Instant>,
) -> Result<Response<Body>, Infallible> {
    if let Some(start) = log {
        eprintln!(
            "{} {} {} {} {}",
            start.elapsed().as_millis(),
            req.method(),
            req.uri().path(),
            req.uri().query().unwrap_or(""),
            req.headers()
                .get("range")
                .and_then(|r| r.to_str().ok())
                .unwrap_or("-")
        );
    }
    let query = req.uri().query().unwrap_or("").to_string();
    let path = percent_encoding::percent_decode_str(req.uri().path())
        .decode_utf8_lossy()
        .into_owned();
    let (_bucket, key) = path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or((path.trim_start_matches('/'), ""));
    let is_key = !key.is_empty();
    let method = req.method().clone();
    let head = method == Method::HEAD;
    let data = if is_key { objects.get(key) } else { None };
    let size = data.as_ref().map_or(0, |d| d.len() as u64);
    let range = range(req.headers().get("range"), size);
    // Drain any upload.
    let mut body = req.into_body();
    while let Some(f) = body.frame().await {
        if f.is_err() {
            break;
        }
    }
    let resp = match (method, is_key) {
        (Method::POST, true) if query.contains("uploads") => full(
            StatusCode::OK,
            "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>null-upload</UploadId></InitiateMultipartUploadResult>",
        ),
        (Method::POST, true) => full(
            StatusCode::OK,
            format!("<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>{ETAG}</ETag></CompleteMultipartUploadResult>"),
        ),
        (Method::GET | Method::HEAD, true) if data.is_none() => full(StatusCode::NOT_FOUND, Bytes::new()),
        (Method::GET | Method::HEAD, true) => {
            let data = data.expect("found");
            let (a, z, status) = match range {
                Some((a, z)) => (a, z, StatusCode::PARTIAL_CONTENT),
                None => (0, size, StatusCode::OK),
            };
            let mut b = Response::builder()
                .status(status)
                .header("etag", ETAG)
                .header("content-length", z - a)
                .header("last-modified", "Sun, 29 Nov 2026 00:00:00 GMT");
            if status == StatusCode::PARTIAL_CONTENT {
                b = b.header("content-range", format!("bytes {a}-{}/{size}", z - 1));
            }
            let frames: Vec<Result<Frame<Bytes>, Infallible>> = (a..z)
                .step_by(FRAME)
                .map(|o| Ok(Frame::data(data.slice(o as usize..(o as usize + FRAME).min(z as usize)))))
                .collect();
            let body = if head {
                Full::new(Bytes::new()).boxed()
            } else {
                StreamBody::new(stream::iter(frames)).boxed()
            };
            b.body(body).expect("valid response")
        }
        (Method::GET, false) => full(
            StatusCode::OK,
            objects.list(&query_value(&query, "prefix").unwrap_or_default()),
        ),
        _ => full(StatusCode::OK, Bytes::new()),
    };
    Ok(resp)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let objects = Arc::new(match &args.dir {
        Some(dir) => {
            let mut files = BTreeMap::new();
            load(dir, dir, &mut files)?;
            Objects::Files(files)
        }
        None => Objects::Any(Bytes::from(vec![0x5au8; args.size as usize])),
    });
    let started = std::time::Instant::now();
    let listener = tokio::net::TcpListener::bind(args.address).await?;
    println!(
        "granary-null listening on http://{}",
        listener.local_addr()?
    );
    loop {
        let (sock, _) = listener.accept().await?;
        sock.set_nodelay(true)?;
        let objects = objects.clone();
        let log = args.log.then_some(started);
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |r| handle(r, objects.clone(), log));
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(sock), svc)
                .await;
        });
    }
}
