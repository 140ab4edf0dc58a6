//! `granary-load`: a load generator for a running S3 server. Many
//! concurrent clients PUT or GET objects of one size for a while, then it
//! prints operations per second, throughput and latency percentiles.
//!
//! ```text
//! granary-load --endpoint http://127.0.0.1:9000 --op get --size 4096 --concurrency 32 --seconds 10
//! ```
//! Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_s3::config::{BehaviorVersion, Region};
use aws_sdk_s3::Client;
use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Op {
    Put,
    Get,
}

/// Load generator for an S3 endpoint.
#[derive(Parser, Debug)]
struct Args {
    /// Server URL.
    #[arg(long, default_value = "http://127.0.0.1:9000")]
    endpoint: String,
    /// Bucket (created if missing).
    #[arg(long, default_value = "load")]
    bucket: String,
    /// Operation.
    #[arg(long, value_enum, default_value = "get")]
    op: Op,
    /// Object size in bytes.
    #[arg(long, default_value_t = 4096)]
    size: usize,
    /// Distinct keys (GET reads them round-robin; PUT overwrites them).
    #[arg(long, default_value_t = 256)]
    objects: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// PEM certificate to trust (HTTPS with a self-signed certificate).
    #[arg(long)]
    ca_bundle: Option<std::path::PathBuf>,
}

fn client(args: &Args) -> Client {
    let key = std::env::var("AWS_ACCESS_KEY_ID").expect("AWS_ACCESS_KEY_ID");
    let secret = std::env::var("AWS_SECRET_ACCESS_KEY").expect("AWS_SECRET_ACCESS_KEY");
    let mut conf = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(&args.endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(aws_credential_types::Credentials::new(
            key, secret, None, None, "load",
        ))
        .force_path_style(true);
    if let Some(ca) = &args.ca_bundle {
        use aws_smithy_http_client::tls;
        let pem = std::fs::read(ca).expect("read the CA bundle");
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(
                tls::rustls_provider::CryptoMode::AwsLc,
            ))
            .tls_context(
                tls::TlsContext::builder()
                    .with_trust_store(tls::TrustStore::empty().with_pem_certificate(pem))
                    .build()
                    .expect("TLS context"),
            )
            .build_https();
        conf = conf.http_client(http);
    }
    Client::from_conf(conf.build())
}

fn key(i: usize) -> String {
    format!("obj-{i:08}")
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let c = client(&args);
    let _ = c.create_bucket().bucket(&args.bucket).send().await;
    let body = bytes::Bytes::from(vec![0x5au8; args.size]);
    if args.op == Op::Get {
        for i in 0..args.objects {
            c.put_object()
                .bucket(&args.bucket)
                .key(key(i))
                .body(body.clone().into())
                .send()
                .await
                .expect("prepare objects");
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..args.concurrency)
        .map(|w| {
            let (c, stop, body) = (c.clone(), stop.clone(), body.clone());
            let (bucket, op, objects) = (args.bucket.clone(), args.op, args.objects);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = 0u64;
                let mut i = w;
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let ok = match op {
                        Op::Put => c
                            .put_object()
                            .bucket(&bucket)
                            .key(key(i % objects))
                            .body(body.clone().into())
                            .send()
                            .await
                            .is_ok(),
                        Op::Get => match c
                            .get_object()
                            .bucket(&bucket)
                            .key(key(i % objects))
                            .send()
                            .await
                        {
                            Ok(r) => r.body.collect().await.is_ok(),
                            Err(_) => false,
                        },
                    };
                    if ok {
                        latencies.push(t.elapsed());
                    } else {
                        errors += 1;
                    }
                    i += 1;
                }
                (latencies, errors)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    let mut errors = 0;
    for w in workers {
        let (l, e) = w.await.expect("worker");
        all.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let ops = all.len() as f64 / elapsed;
    println!(
        "{:?} {} B x{}: {:.0} ops/s, {:.1} MB/s, p50 {:.2} ms, p99 {:.2} ms, {} errors",
        args.op,
        args.size,
        args.concurrency,
        ops,
        ops * args.size as f64 / 1e6,
        pct(0.50),
        pct(0.99),
        errors
    );
}
