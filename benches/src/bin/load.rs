//! `granary-load`: a load generator for any S3 endpoint.
//!
//! ```text
//! granary-load --endpoint http://127.0.0.1:9000 --op get --size 4096 --concurrency 32 --seconds 10
//! granary-load --op pull --size 1073741824 --objects 4 --range-size 16777216 --concurrency 16
//! ```
//! Operations: `put`, `put-raw` (PUTs signed here, no SDK), `get`, `mixed` (GETs and PUTs, `--read-percent`),
//! `list` (ListObjectsV2 pages through the SDK), `list-raw` (the same pages
//! signed here and only scanned for the key count and continuation token,
//! so the client's own XML decoding does not bound the rate measured),
//! `get-raw` (GETs signed here, body drained, no SDK: the server's rate
//! when the client costs little), `delete` (DeleteObjects requests of 1,000 keys, every `--delete-every`-th
//! object; `--count` requests), `multipart` (uploads in `--part-size`
//! parts), and `pull` (every object downloaded with parallel ranged GETs,
//! the way model loaders fetch weights; `--pullers` independent clients do
//! it at once), and `storm` (`--count` ranged GETs, `--concurrency` in
//! flight, of lengths from `--range-min` to `--range-size` at random
//! offsets of one object, aligned with nothing: many readers of one shard
//! at once). `--key` names an existing object to read instead of the
//! generated ones. Objects the run reads are uploaded first unless already
//! there. Prints ops/s, MB/s, latency percentiles (and time to first byte
//! for reads) and errors; the last line is the same as one JSON object.
//! Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_s3::config::{BehaviorVersion, Region};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use bytes::Bytes;
use clap::{Parser, ValueEnum};
use futures::{stream, StreamExt};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Op {
    Put,
    PutRaw,
    Get,
    GetRaw,
    Mixed,
    List,
    ListRaw,
    Delete,
    Multipart,
    Pull,
    Storm,
}

/// Load generator for an S3 endpoint.
#[derive(Parser, Debug, Clone)]
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
    /// Distinct keys (reads go round-robin over them; PUTs overwrite them).
    #[arg(long, default_value_t = 256)]
    objects: usize,
    /// Requests in flight (per puller for `pull`).
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Seconds to run (not for `pull`, which downloads everything once per round).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Stop after this many operations instead of after `--seconds`.
    #[arg(long)]
    count: Option<usize>,
    /// Share of GETs in `mixed`, in percent.
    #[arg(long, default_value_t = 80)]
    read_percent: usize,
    /// Part size of `multipart` uploads.
    #[arg(long, default_value_t = 8 << 20)]
    part_size: usize,
    /// Bytes per ranged GET of `pull`.
    #[arg(long, default_value_t = 16 << 20)]
    range_size: usize,
    /// Shortest ranged GET of `storm`.
    #[arg(long, default_value_t = 1 << 20)]
    range_min: usize,
    /// Read this existing object (its size from a HEAD) instead of the
    /// generated keys: `pull` and `storm`.
    #[arg(long)]
    key: Option<String>,
    /// Independent clients pulling the same objects at once (`pull`).
    #[arg(long, default_value_t = 1)]
    pullers: usize,
    /// Rounds of `pull`.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Key prefix, so runs with different sizes do not share objects.
    #[arg(long, default_value = "obj")]
    prefix: String,
    /// Send PUT and part bodies unsigned (UNSIGNED-PAYLOAD with a checksum
    /// trailer), as SDKs do over HTTPS, instead of SigV4-signing every
    /// chunk (what they do over plain HTTP).
    #[arg(long)]
    unsigned_payload: bool,
    /// Do not check (HEAD every key) that the objects a read run needs
    /// exist: for runs over objects an earlier run wrote, such as listing a
    /// million keys.
    #[arg(long)]
    no_prepare: bool,
    /// Keys per "directory": object i is `PREFIX-SIZE-DIR/FILE` with
    /// DIR = i / fanout (0 = flat keys `PREFIX-SIZE-I`).
    #[arg(long, default_value_t = 0)]
    fanout: usize,
    /// `delete` removes objects whose index is a multiple of this.
    #[arg(long, default_value_t = 1)]
    delete_every: usize,
    /// Delimiter for `list` and `list-raw` (e.g. `/` with `--fanout`).
    #[arg(long)]
    delimiter: Option<String>,
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

/// What one request measured.
#[derive(Default)]
struct Sample {
    latency: Duration,
    ttfb: Option<Duration>,
    bytes: u64,
    items: u64,
}

impl Sample {
    /// A full listing started at `t` that returned `keys` entries.
    fn listing(t: Instant, keys: u64) -> Sample {
        Sample {
            latency: t.elapsed(),
            items: keys,
            ..Default::default()
        }
    }
}

/// Everything the workers measured.
#[derive(Default)]
struct Tally {
    samples: Vec<Sample>,
    errors: u64,
}

impl Tally {
    fn add(&mut self, r: Result<Sample, String>) {
        match r {
            Ok(s) => self.samples.push(s),
            Err(e) => {
                if self.errors < 3 {
                    eprintln!("error: {e}");
                }
                self.errors += 1;
            }
        }
    }

    fn merge(&mut self, other: Tally) {
        self.samples.extend(other.samples);
        self.errors += other.errors;
    }
}

struct Ctx {
    c: Client,
    raw: RawClient,
    args: Args,
    body: Bytes,
    /// Hex SHA-256 of `body`, for signed raw PUTs.
    body_sha256: String,
}

/// The text of the first `<name>` element of a document (no entities
/// expected: counts and base64 tokens).
fn element<'a>(doc: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = doc.find(&open)? + open.len();
    let len = doc[start..].find('<')?;
    Some(&doc[start..start + len])
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay).
fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// SigV4-signed GETs without the SDK's response decoding.
struct RawClient {
    http: reqwest::Client,
    signer: request_signer::Signer,
}

impl RawClient {
    fn new() -> RawClient {
        let key = std::env::var("AWS_ACCESS_KEY_ID").expect("AWS_ACCESS_KEY_ID");
        let secret = std::env::var("AWS_SECRET_ACCESS_KEY").expect("AWS_SECRET_ACCESS_KEY");
        RawClient {
            http: reqwest::Client::new(),
            signer: request_signer::Signer::s3(&key, &secret, "us-east-1"),
        }
    }

    /// GETs `url` and returns the body; a non-2xx status is an error.
    async fn get(&self, url: &str) -> Result<Bytes, String> {
        self.send("GET", url, Bytes::new(), None).await
    }

    /// Sends `body` to `url` with `method` and returns the response body; a
    /// non-2xx status is an error. `body_sha256` (hex) signs the payload;
    /// without it the payload is sent unsigned.
    async fn send(
        &self,
        method: &str,
        url: &str,
        body: Bytes,
        body_sha256: Option<&str>,
    ) -> Result<Bytes, String> {
        let mut req = http::Request::builder().method(method).uri(url);
        if method != "GET" {
            req = req.header("content-length", body.len());
        }
        let mut req = req.body(body).map_err(|e| e.to_string())?;
        let payload = match body_sha256 {
            Some(hash) => request_signer::Payload::Sha256(hash),
            None => request_signer::Payload::Unsigned,
        };
        self.signer
            .sign(&mut req, payload)
            .map_err(|e| e.to_string())?;
        let req = reqwest::Request::try_from(req).map_err(|e| e.to_string())?;
        let resp = self.http.execute(req).await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        Ok(body)
    }
}

impl Ctx {
    fn key(&self, i: usize) -> String {
        if let Some(k) = &self.args.key {
            return k.clone();
        }
        match self.args.fanout {
            0 => format!("{}-{}-{i:08}", self.args.prefix, self.args.size),
            f => format!(
                "{}-{}-{:08}/{:08}",
                self.args.prefix,
                self.args.size,
                i / f,
                i % f
            ),
        }
    }

    fn list_prefix(&self) -> String {
        format!("{}-{}-", self.args.prefix, self.args.size)
    }

    async fn put(&self, key: &str) -> Result<Sample, String> {
        let t = Instant::now();
        let req = self
            .c
            .put_object()
            .bucket(&self.args.bucket)
            .key(key)
            .body(ByteStream::from(self.body.clone()));
        if self.args.unsigned_payload {
            req.customize().disable_payload_signing().send().await
        } else {
            req.send().await
        }
        .map_err(|e| format!("{e:?}"))?;
        Ok(Sample {
            latency: t.elapsed(),
            bytes: self.body.len() as u64,
            items: 1,
            ..Default::default()
        })
    }

    /// Size of the object reads go to (`--key`, or the first generated one).
    async fn object_size(&self) -> u64 {
        let h = self
            .c
            .head_object()
            .bucket(&self.args.bucket)
            .key(self.key(0))
            .send()
            .await
            .expect("HEAD of the object to read");
        h.content_length().unwrap_or(0) as u64
    }

    /// GET (of `range` if given), streaming the body to nowhere.
    async fn get(&self, key: &str, range: Option<(u64, u64)>) -> Result<Sample, String> {
        let t = Instant::now();
        let mut req = self.c.get_object().bucket(&self.args.bucket).key(key);
        if let Some((a, z)) = range {
            req = req.range(format!("bytes={a}-{}", z - 1));
        }
        let mut r = req.send().await.map_err(|e| format!("{e:?}"))?;
        let mut ttfb = None;
        let mut bytes = 0u64;
        while let Some(chunk) = r.body.next().await {
            let chunk = chunk.map_err(|e| format!("{e:?}"))?;
            ttfb.get_or_insert_with(|| t.elapsed());
            bytes += chunk.len() as u64;
        }
        Ok(Sample {
            latency: t.elapsed(),
            ttfb,
            bytes,
            items: 1,
        })
    }

    async fn list_pages(&self) -> Result<Sample, String> {
        let t = Instant::now();
        let mut keys = 0u64;
        let mut token = None;
        loop {
            let r = self
                .c
                .list_objects_v2()
                .bucket(&self.args.bucket)
                .prefix(self.list_prefix())
                .set_delimiter(self.args.delimiter.clone())
                .set_continuation_token(token)
                .send()
                .await
                .map_err(|e| format!("{e:?}"))?;
            keys += (r.contents().len() + r.common_prefixes().len()) as u64;
            token = r.next_continuation_token().map(str::to_string);
            if token.is_none() {
                return Ok(Sample::listing(t, keys));
            }
        }
    }

    fn object_url(&self, key: &str) -> String {
        format!(
            "{}/{}/{}",
            self.args.endpoint.trim_end_matches('/'),
            self.args.bucket,
            key
        )
    }

    /// A PUT signed here (the body's SHA-256 computed once per run, or
    /// unsigned with `--unsigned-payload`), without the SDK.
    async fn put_raw(&self, key: &str) -> Result<Sample, String> {
        let t = Instant::now();
        let hash = (!self.args.unsigned_payload).then_some(self.body_sha256.as_str());
        self.raw
            .send("PUT", &self.object_url(key), self.body.clone(), hash)
            .await?;
        Ok(Sample {
            latency: t.elapsed(),
            bytes: self.body.len() as u64,
            items: 1,
            ..Default::default()
        })
    }

    async fn get_raw(&self, key: &str) -> Result<Sample, String> {
        let t = Instant::now();
        let body = self.raw.get(&self.object_url(key)).await?;
        Ok(Sample {
            latency: t.elapsed(),
            ttfb: None,
            bytes: body.len() as u64,
            items: 1,
        })
    }

    /// Request `n` of a `delete` run: the `--delete-every`-th objects among
    /// objects `n * 1000 * every ..` as one DeleteObjects request.
    async fn delete_batch(&self, n: usize) -> Result<Sample, String> {
        use aws_sdk_s3::types::{Delete, ObjectIdentifier};
        let t = Instant::now();
        let every = self.args.delete_every.max(1);
        let ids: Vec<ObjectIdentifier> = (n * 1000..(n + 1) * 1000)
            .map(|j| self.key(j * every))
            .map(|k| ObjectIdentifier::builder().key(k).build().unwrap())
            .collect();
        let out = self
            .c
            .delete_objects()
            .bucket(&self.args.bucket)
            .delete(
                Delete::builder()
                    .set_objects(Some(ids))
                    .quiet(true)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .map_err(|e| format!("{e:?}"))?;
        if !out.errors().is_empty() {
            return Err(format!("{} keys not deleted", out.errors().len()));
        }
        Ok(Sample {
            latency: t.elapsed(),
            items: 1000,
            ..Default::default()
        })
    }

    /// Lists like [`Self::list_pages`] with requests signed here and
    /// responses only scanned for what paging needs.
    async fn list_pages_raw(&self) -> Result<Sample, String> {
        let t = Instant::now();
        let mut keys = 0u64;
        let mut token: Option<String> = None;
        loop {
            let mut url = format!(
                "{}/{}?list-type=2&prefix={}",
                self.args.endpoint.trim_end_matches('/'),
                self.args.bucket,
                query_escape(&self.list_prefix())
            );
            if let Some(d) = &self.args.delimiter {
                url.push_str(&format!("&delimiter={}", query_escape(d)));
            }
            if let Some(t) = &token {
                url.push_str(&format!("&continuation-token={}", query_escape(t)));
            }
            let body = self.raw.get(&url).await?;
            // `from_utf8` checks ASCII a word at a time; the lossy
            // conversion goes a character at a time and took half of this
            // client's CPU on 1,000-key pages.
            let body = std::str::from_utf8(&body).map_err(|e| format!("listing: {e}"))?;
            keys += element(body, "KeyCount")
                .and_then(|n| n.parse::<u64>().ok())
                .ok_or("no KeyCount in the listing")?;
            token = element(body, "NextContinuationToken").map(str::to_string);
            if token.is_none() {
                return Ok(Sample::listing(t, keys));
            }
        }
    }

    async fn multipart(&self, key: &str) -> Result<Sample, String> {
        let t = Instant::now();
        let b = &self.args.bucket;
        let up = self
            .c
            .create_multipart_upload()
            .bucket(b)
            .key(key)
            .send()
            .await
            .map_err(|x| format!("{x:?}"))?;
        let id = up.upload_id().unwrap_or_default().to_string();
        let mut parts = Vec::new();
        for (n, chunk) in self.body.chunks(self.args.part_size.max(1)).enumerate() {
            let n = n as i32 + 1;
            let req = self
                .c
                .upload_part()
                .bucket(b)
                .key(key)
                .upload_id(&id)
                .part_number(n)
                .body(ByteStream::from(self.body.slice_ref(chunk)));
            let r = if self.args.unsigned_payload {
                req.customize().disable_payload_signing().send().await
            } else {
                req.send().await
            }
            .map_err(|x| format!("{x:?}"))?;
            parts.push(
                CompletedPart::builder()
                    .part_number(n)
                    .set_e_tag(r.e_tag().map(str::to_string))
                    .build(),
            );
        }
        self.c
            .complete_multipart_upload()
            .bucket(b)
            .key(key)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map_err(|x| format!("{x:?}"))?;
        Ok(Sample {
            latency: t.elapsed(),
            bytes: self.body.len() as u64,
            items: 1,
            ..Default::default()
        })
    }

    /// Uploads the objects a read run needs, unless they are there already.
    async fn prepare(&self) {
        let missing: Vec<usize> = stream::iter(0..self.args.objects)
            .map(|i| async move {
                let h = self
                    .c
                    .head_object()
                    .bucket(&self.args.bucket)
                    .key(self.key(i))
                    .send()
                    .await;
                match h {
                    Ok(h) if h.content_length() == Some(self.args.size as i64) => None,
                    _ => Some(i),
                }
            })
            .buffer_unordered(self.args.concurrency.max(1))
            .filter_map(|x| async move { x })
            .collect()
            .await;
        if missing.is_empty() {
            return;
        }
        eprintln!(
            "uploading {} objects of {} bytes first",
            missing.len(),
            self.args.size
        );
        let failed = stream::iter(missing)
            .map(|i| async move {
                if self.args.size > self.args.part_size {
                    self.multipart(&self.key(i)).await
                } else {
                    self.put(&self.key(i)).await
                }
            })
            .buffer_unordered(self.args.concurrency.clamp(1, 16))
            .filter(|r| std::future::ready(r.is_err()))
            .count()
            .await;
        assert_eq!(failed, 0, "could not prepare the objects");
    }

    async fn one(&self, i: usize) -> Result<Sample, String> {
        let key = self.key(i % self.args.objects.max(1));
        match self.args.op {
            Op::Put => self.put(&key).await,
            Op::PutRaw => self.put_raw(&key).await,
            Op::Get => self.get(&key, None).await,
            Op::GetRaw => self.get_raw(&key).await,
            Op::Mixed if i * 7919 % 100 < self.args.read_percent => self.get(&key, None).await,
            Op::Mixed => self.put(&key).await,
            Op::List => self.list_pages().await,
            Op::ListRaw => self.list_pages_raw().await,
            Op::Delete => self.delete_batch(i).await,
            Op::Multipart => self.multipart(&key).await,
            Op::Pull | Op::Storm => unreachable!("pull and storm run on their own"),
        }
    }
}

/// `--concurrency` workers repeating the operation for `--seconds` (or
/// until `--count` operations were started).
async fn timed(ctx: Arc<Ctx>) -> (Tally, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let issued = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..ctx.args.concurrency)
        .map(|w| {
            let (ctx, stop, issued) = (ctx.clone(), stop.clone(), issued.clone());
            tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut i = w;
                while !stop.load(Ordering::Relaxed) {
                    if let Some(n) = ctx.args.count {
                        // With a count, operation numbers are handed out
                        // globally, so `--count N --objects N` touches
                        // every key once.
                        i = issued.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                    }
                    tally.add(ctx.one(i).await);
                    i += ctx.args.concurrency;
                }
                tally
            })
        })
        .collect();
    if ctx.args.count.is_none() {
        tokio::time::sleep(Duration::from_secs(ctx.args.seconds)).await;
        stop.store(true, Ordering::Relaxed);
    }
    let mut all = Tally::default();
    for w in workers {
        all.merge(w.await.expect("worker"));
    }
    (all, started.elapsed().as_secs_f64())
}

/// Every puller downloads every object with parallel ranged GETs.
async fn pull(ctx: Arc<Ctx>, size: u64) -> (Tally, f64) {
    let started = Instant::now();
    let pullers: Vec<_> = (0..ctx.args.pullers.max(1))
        .map(|_| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                let step = ctx.args.range_size.max(1) as u64;
                let ranges: Vec<(usize, u64)> = (0..ctx.args.rounds)
                    .flat_map(|_| 0..ctx.args.objects)
                    .flat_map(|o| (0..size.div_ceil(step)).map(move |r| (o, r * step)))
                    .collect();
                let mut tally = Tally::default();
                let results: Vec<_> = stream::iter(ranges)
                    .map(|(o, a)| {
                        let ctx = ctx.clone();
                        async move { ctx.get(&ctx.key(o), Some((a, (a + step).min(size)))).await }
                    })
                    .buffer_unordered(ctx.args.concurrency.max(1))
                    .collect()
                    .await;
                for r in results {
                    tally.add(r);
                }
                (tally, t.elapsed().as_secs_f64())
            })
        })
        .collect();
    let mut all = Tally::default();
    let mut times = Vec::new();
    for p in pullers {
        let (t, secs) = p.await.expect("puller");
        all.merge(t);
        times.push(secs);
    }
    if times.len() > 1 {
        let (lo, hi) = times
            .iter()
            .fold((f64::MAX, 0f64), |(a, b), &t| (a.min(t), b.max(t)));
        eprintln!("pullers finished in {lo:.2}–{hi:.2} s");
    }
    (all, started.elapsed().as_secs_f64())
}

/// `--count` ranged GETs of random lengths at random offsets of one
/// object (`--key`, or the first generated key), `--concurrency` at once.
/// The ranges come from a fixed seed, so runs against two servers read
/// the same ranges.
async fn storm(ctx: Arc<Ctx>, size: u64) -> (Tally, f64) {
    let (lo, hi) = (ctx.args.range_min as u64, ctx.args.range_size as u64);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        // xorshift64*: enough for spreading ranges.
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let ranges: Vec<(u64, u64)> = (0..ctx.args.count.unwrap_or(800))
        .map(|_| {
            let len = (lo + next() % (hi - lo + 1)).min(size);
            let start = next() % (size - len + 1);
            (start, start + len)
        })
        .collect();
    let started = Instant::now();
    let results: Vec<_> = stream::iter(ranges)
        .map(|r| {
            let ctx = ctx.clone();
            async move { ctx.get(&ctx.key(0), Some(r)).await }
        })
        .buffer_unordered(ctx.args.concurrency.max(1))
        .collect()
        .await;
    let mut tally = Tally::default();
    for r in results {
        tally.add(r);
    }
    (tally, started.elapsed().as_secs_f64())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1)))
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let c = client(&args);
    let _ = c.create_bucket().bucket(&args.bucket).send().await;
    let body = Bytes::from(vec![0x5au8; args.size]);
    let body_sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&body));
    let ctx = Arc::new(Ctx {
        c,
        raw: RawClient::new(),
        args,
        body,
        body_sha256,
    });
    if !ctx.args.no_prepare
        && ctx.args.key.is_none()
        && matches!(
            ctx.args.op,
            Op::Get | Op::GetRaw | Op::Mixed | Op::List | Op::ListRaw | Op::Pull | Op::Storm
        )
    {
        ctx.prepare().await;
    }
    let (tally, secs) = match ctx.args.op {
        Op::Pull | Op::Storm => {
            let size = match ctx.args.key {
                Some(_) => ctx.object_size().await,
                None => ctx.args.size as u64,
            };
            if ctx.args.op == Op::Pull {
                pull(ctx.clone(), size).await
            } else {
                storm(ctx.clone(), size).await
            }
        }
        _ => timed(ctx.clone()).await,
    };
    let mut lat: Vec<Duration> = tally.samples.iter().map(|s| s.latency).collect();
    lat.sort();
    let mut ttfb: Vec<Duration> = tally.samples.iter().filter_map(|s| s.ttfb).collect();
    ttfb.sort();
    let bytes: u64 = tally.samples.iter().map(|s| s.bytes).sum();
    let items: u64 = tally.samples.iter().map(|s| s.items).sum();
    let metrics = [
        ("ops/s", tally.samples.len() as f64 / secs),
        ("MB/s", bytes as f64 / secs / 1e6),
        ("items/s", items as f64 / secs),
        ("min_ms", percentile(&lat, 0.0)),
        ("p50_ms", percentile(&lat, 0.50)),
        ("p99_ms", percentile(&lat, 0.99)),
        ("p999_ms", percentile(&lat, 0.999)),
        ("max_ms", percentile(&lat, 1.0)),
        ("ttfb_p50_ms", percentile(&ttfb, 0.50)),
        ("ttfb_p99_ms", percentile(&ttfb, 0.99)),
    ];
    let a = &ctx.args;
    let human: Vec<String> = metrics.iter().map(|(k, v)| format!("{v:.2} {k}")).collect();
    println!(
        "{:?} {} B x{}{}: {}, {} errors, {:.2} s",
        a.op,
        a.size,
        a.concurrency,
        if a.op == Op::Pull {
            format!(" x{} pullers", a.pullers)
        } else {
            String::new()
        },
        human.join(", "),
        tally.errors,
        secs,
    );
    let json: Vec<String> = metrics
        .iter()
        .map(|(k, v)| format!("\"{}\":{v:.3}", k.replace('/', "_per_").to_lowercase()))
        .collect();
    println!(
        "{{\"op\":\"{:?}\",\"size\":{},\"concurrency\":{},\"pullers\":{},\"seconds\":{secs:.3},\"ops\":{},\"errors\":{},{}}}",
        a.op,
        a.size,
        a.concurrency,
        a.pullers,
        tally.samples.len(),
        tally.errors,
        json.join(","),
    );
}
