//! `granary-null`: the ceiling for the load generator — an HTTP server that
//! answers the S3 calls `granary-load` makes without storing anything.
//! PUTs (objects, parts) are read and discarded; GETs and HEADs of any key
//! serve `--size` bytes from memory (with Range support); multipart calls
//! and ListObjectsV2 get minimal valid answers. It checks no signature.
//!
//! ```text
//! granary-null --address 127.0.0.1:9300 --size 67108864
//! ```

use std::convert::Infallible;
use std::net::SocketAddr;

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

async fn handle(req: Request<Incoming>, data: Bytes) -> Result<Response<Body>, Infallible> {
    let size = data.len() as u64;
    let query = req.uri().query().unwrap_or("").to_string();
    let is_key = req.uri().path().trim_start_matches('/').contains('/');
    let method = req.method().clone();
    let head = method == Method::HEAD;
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
        (Method::GET | Method::HEAD, true) => {
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
            "<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>",
        ),
        _ => full(StatusCode::OK, Bytes::new()),
    };
    Ok(resp)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let data = Bytes::from(vec![0x5au8; args.size as usize]);
    let listener = tokio::net::TcpListener::bind(args.address).await?;
    println!(
        "granary-null listening on http://{}",
        listener.local_addr()?
    );
    loop {
        let (sock, _) = listener.accept().await?;
        sock.set_nodelay(true)?;
        let data = data.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |r| handle(r, data.clone()));
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(sock), svc)
                .await;
        });
    }
}
