//! Starts the real `granary` binary on a random loopback port over
//! temporary directories, and builds clients for it: the Rust AWS SDK, and
//! raw HTTP requests signed by AWS's own SigV4 signer for the cases an SDK
//! refuses to send.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sdk_s3::config::{BehaviorVersion, Region};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use aws_sigv4::http_request::{
    sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
};
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::body::SdkBody;
use bytes::Bytes;
use http_body::Frame;

pub const USER: &str = "e2e-root";
pub const SECRET: &str = "e2e-secret-key-123";

/// A running `granary server`.
pub struct Server {
    pub root: tempfile::TempDir,
    pub dirs: Vec<PathBuf>,
    pub endpoint: String,
    pub addr: String,
    extra: Vec<String>,
    /// Environment variables set for the next launches.
    pub env: Vec<(String, String)>,
    /// The rest of the last launch's "listening" line: address and layout.
    pub banner: String,
    child: Option<Child>,
}

impl Server {
    /// Starts a server over `n` fresh directories.
    pub fn start(n: usize) -> Server {
        Server::start_with(n, &[])
    }

    /// Starts a server over `n` fresh directories with extra arguments
    /// (see [`wider_pool`] for what `GRANARY_E2E_POOL` changes).
    pub fn start_with(n: usize, extra: &[&str]) -> Server {
        let (n, extra) = wider_pool(n, extra);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        Server::start_exactly(n, &extra)
    }

    /// [`Server::start_with`] over exactly `n` directories whatever
    /// `GRANARY_E2E_POOL` says: for tests whose assertions count them.
    pub fn start_exactly(n: usize, extra: &[&str]) -> Server {
        let root = tempfile::tempdir().unwrap();
        let dirs = (1..=n)
            .map(|i| root.path().join(format!("disk{i}")))
            .collect();
        Server::start_in(root, dirs, extra)
    }

    /// Starts a server over `n` fresh directories with `env` set (a name
    /// set to "" is unset for the server).
    pub fn start_with_env(n: usize, env: &[(&str, &str)]) -> Server {
        let root = tempfile::tempdir().unwrap();
        let mut s = Server {
            dirs: (1..=n)
                .map(|i| root.path().join(format!("disk{i}")))
                .collect(),
            root,
            endpoint: String::new(),
            addr: String::new(),
            extra: Vec::new(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            banner: String::new(),
            child: None,
        };
        s.launch().expect("server starts");
        s
    }

    /// Starts a server over the given directories inside `root`.
    pub fn start_in(root: tempfile::TempDir, dirs: Vec<PathBuf>, extra: &[&str]) -> Server {
        Server::try_start_in(root, dirs, extra).expect("server starts")
    }

    /// Starts a server, or returns its error output when it will not start.
    pub fn try_start_in(
        root: tempfile::TempDir,
        dirs: Vec<PathBuf>,
        extra: &[&str],
    ) -> Result<Server, String> {
        let mut s = Server {
            root,
            dirs,
            endpoint: String::new(),
            addr: String::new(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            banner: String::new(),
            child: None,
        };
        s.launch()?;
        Ok(s)
    }

    fn command(&self) -> Command {
        let mut c = Command::new(granary_bin());
        c.arg("server");
        c.args(&self.dirs);
        c.args(["--address", "127.0.0.1:0"]);
        c.args(&self.extra);
        c.env("GRANARY_ROOT_USER", USER)
            .env("GRANARY_ROOT_PASSWORD", SECRET)
            .env_remove("GRANARY_MASTER_KEY")
            .env_remove("GRANARY_UNSEAL_KEY")
            .env("RUST_LOG", "info");
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// Starts the process and waits for its "listening" line. Returns the
    /// error output when it exits instead.
    pub fn launch(&mut self) -> Result<(), String> {
        let log = self.root.path().join("server.log");
        let (child, banner) = spawn_until(self.command(), &log, "Granary listening on ")?;
        let url = banner.split_whitespace().next().unwrap();
        let (_, addr) = url.split_once("://").unwrap();
        self.addr = addr.to_string();
        self.endpoint = url.to_string();
        self.banner = banner.clone();
        self.child = Some(child);
        Ok(())
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default()
    }

    /// What the server printed after its "listening" line (its start-up
    /// notes), once it holds `what`.
    pub async fn notes_with(&self, what: &str) -> String {
        let path = self.root.path().join("server.out");
        let mut text = String::new();
        until(10, "start-up notes", async || {
            text = std::fs::read_to_string(&path).unwrap_or_default();
            text.contains(what)
        })
        .await;
        text
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Peak resident set size of the server process, in bytes.
    pub fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            unsafe_kill(c.id(), "TERM");
            let status = c.wait().unwrap();
            assert!(
                status.success(),
                "server exited with {status}; log:\n{}",
                self.log()
            );
        }
    }

    /// Kills the process with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Whether the process is still running (a crash point may have
    /// killed it).
    pub fn running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().ok().flatten().is_none(),
            None => false,
        }
    }

    /// Waits for the process to end (after a crash point killed it) and
    /// forgets it; false if it still runs after `secs`.
    pub fn reap(&mut self, secs: u64) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        while std::time::Instant::now() < deadline {
            if !self.running() {
                self.child = None;
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Stops and starts again over the same directories.
    pub fn restart(&mut self) {
        self.stop();
        self.launch().unwrap();
    }

    /// An SDK client for this server.
    pub fn client(&self) -> Client {
        client_for(&self.endpoint, USER, SECRET, "us-east-1")
    }

    /// Every shard file currently stored, per directory.
    pub fn shard_files(&self) -> Vec<Vec<PathBuf>> {
        self.dirs
            .iter()
            .map(|d| files_under(&d.join("shards")))
            .collect()
    }
}

/// Which shard of its stripe a shard file holds (from its header).
pub fn shard_index(path: &Path) -> u32 {
    let b = std::fs::read(path).unwrap();
    u32::from_le_bytes(b[32..36].try_into().unwrap())
}

/// The `granary` binary the tests run: this build, or the one
/// `GRANARY_E2E_BIN` names (an older one writing a fixture, say).
pub fn granary_bin() -> String {
    std::env::var("GRANARY_E2E_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_granary").to_string())
}

/// Spawns `cmd` with its error output appended to `log` and waits for the
/// stdout line starting with `prefix`; returns the process and the rest of
/// that line, or the log when the process exits first. Stdout keeps being
/// drained so the process never blocks on it.
pub fn spawn_until(mut cmd: Command, log: &Path, prefix: &str) -> Result<(Child, String), String> {
    // The notes of an earlier run are not this one's.
    let _ = std::fs::remove_file(log.with_extension("out"));
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .expect("spawn granary");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(rest) = line.strip_prefix(prefix) {
                    // What follows (the start-up notes) is kept beside the log.
                    let out = log.with_extension("out");
                    std::thread::spawn(move || {
                        use std::io::Write as _;
                        let mut f = std::fs::File::create(out).ok();
                        for line in lines.map_while(Result::ok) {
                            if let Some(f) = f.as_mut() {
                                let _ = writeln!(f, "{line}");
                            }
                        }
                    });
                    return Ok((child, rest.to_string()));
                }
            }
            _ => {
                let _ = child.wait();
                return Err(std::fs::read_to_string(log).unwrap_or_default());
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `GRANARY_E2E_POOL=DIRS:WIDTH:PARITY` (e.g. `32:8:2`) runs the suites
/// on a pool of many erasure sets: a server started over one or four fresh
/// directories (and a tiered server's hot pool) gets DIRS directories in
/// sets of WIDTH with PARITY instead. Other counts, and explicit parities,
/// are left alone (their tests are about those disks).
pub fn wider_pool(n: usize, extra: &[&str]) -> (usize, Vec<String>) {
    let mut out: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let Ok(spec) = std::env::var("GRANARY_E2E_POOL") else {
        return (n, out);
    };
    if !(n == 1 || n == 4) || extra.contains(&"--parity") {
        return (n, out);
    }
    let parts: Vec<&str> = spec.split(':').collect();
    let [dirs, width, parity] = parts[..] else {
        panic!("GRANARY_E2E_POOL is DIRS:WIDTH:PARITY, not {spec}");
    };
    out.extend(["--set-width", width, "--parity", parity].map(String::from));
    (dirs.parse().expect("GRANARY_E2E_POOL's DIRS"), out)
}

/// A server with four hot and four cold directories (more hot ones with
/// `GRANARY_E2E_POOL`).
pub fn start_tiered(extra: &[&str]) -> (Server, Vec<PathBuf>) {
    let (n, extra) = wider_pool(4, extra);
    if n == 4 {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        return start_tiered_in(tempfile::tempdir().unwrap(), &extra);
    }
    let root = tempfile::tempdir().unwrap();
    let hot: Vec<PathBuf> = (1..=n)
        .map(|i| root.path().join(format!("hot{i}")))
        .collect();
    let (_, cold) = tiered_dirs(root.path());
    let mut args: Vec<String> = vec!["--cold".into()];
    args.extend(cold.iter().map(|d| d.display().to_string()));
    args.extend(extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (Server::start_in(root, hot, &args), cold)
}

/// The four hot and four cold directories of a tiered server in `root`.
pub fn tiered_dirs(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let hot = (1..=4).map(|i| root.join(format!("hot{i}"))).collect();
    let cold = (1..=4).map(|i| root.join(format!("cold{i}"))).collect();
    (hot, cold)
}

/// [`start_tiered`] over the directories of `root` (which may hold data).
pub fn start_tiered_in(root: tempfile::TempDir, extra: &[&str]) -> (Server, Vec<PathBuf>) {
    let (hot, cold) = tiered_dirs(root.path());
    let mut args: Vec<String> = vec!["--cold".into()];
    args.extend(cold.iter().map(|d| d.display().to_string()));
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (Server::start_in(root, hot, &args), cold)
}

/// The storage class of `bucket/key` (None if HEAD fails).
pub async fn class_of(c: &Client, bucket: &str, key: &str) -> Option<String> {
    let h = c.head_object().bucket(bucket).key(key).send().await.ok()?;
    Some(
        h.storage_class()
            .map_or("STANDARD".into(), |s| s.as_str().to_string()),
    )
}

/// Whether every key of `keys` in `bucket` has storage class `class`.
pub async fn all_in_class(c: &Client, bucket: &str, keys: &[String], class: &str) -> bool {
    for key in keys {
        if class_of(c, bucket, key).await.as_deref() != Some(class) {
            return false;
        }
    }
    true
}

/// The server's Prometheus metrics, scraped with the bearer `token`.
pub async fn scrape_metrics(s: &Server, token: &str) -> String {
    reqwest::Client::new()
        .get(format!("{}/granary/metrics", s.endpoint))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Polls `f` every 100 ms until it returns true, for at most `secs`.
pub async fn until(secs: u64, what: &str, mut f: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within {secs} s");
}

/// Sends a signal with the `kill` command.
pub fn unsafe_kill(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
}

/// All regular files below `dir`, sorted.
/// How many shard files the data directories `dirs` hold together.
pub fn count_shard_files<'a>(dirs: impl IntoIterator<Item = &'a PathBuf>) -> usize {
    dirs.into_iter()
        .map(|d| files_under(&d.join("shards")).len())
        .sum()
}

pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// An SDK client with explicit credentials and region, path-style.
pub fn client_for(endpoint: &str, key: &str, secret: &str, region: &str) -> Client {
    let creds = Credentials::new(key, secret, None, None, "e2e");
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new(region.to_string()))
        .credentials_provider(creds)
        .force_path_style(true)
        .build();
    Client::from_conf(conf)
}

/// A raw HTTP request signed with AWS's SigV4 signer.
pub struct Raw<'a> {
    pub method: &'a str,
    pub url: String,
    pub headers: Vec<(&'a str, String)>,
    pub body: Vec<u8>,
    /// Sign the payload hash (true) or send UNSIGNED-PAYLOAD.
    pub signed_payload: bool,
    /// Send and sign this x-amz-content-sha256 value instead.
    pub payload_hash: Option<String>,
}

impl<'a> Raw<'a> {
    pub fn new(method: &'a str, url: String) -> Raw<'a> {
        Raw {
            method,
            url,
            headers: Vec::new(),
            body: Vec::new(),
            signed_payload: true,
            payload_hash: None,
        }
    }

    /// Uses `value` as x-amz-content-sha256 (e.g. a STREAMING-* mode).
    pub fn payload_hash(mut self, value: &str) -> Self {
        self.payload_hash = Some(value.to_string());
        self
    }

    pub fn header(mut self, name: &'a str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Signs the request (as `key`/`secret` in `region`) and returns it.
    pub fn signed(
        &self,
        key: &str,
        secret: &str,
        region: &str,
        presign: Option<Duration>,
    ) -> http::Request<Vec<u8>> {
        let identity: Identity = Credentials::new(key, secret, None, None, "raw").into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = aws_sigv4::http_request::PayloadChecksumKind::XAmzSha256;
        settings.percent_encoding_mode = aws_sigv4::http_request::PercentEncodingMode::Single;
        settings.uri_path_normalization_mode =
            aws_sigv4::http_request::UriPathNormalizationMode::Disabled;
        if let Some(expiry) = presign {
            settings.signature_location = SignatureLocation::QueryParams;
            settings.expires_in = Some(expiry);
        }
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .unwrap()
            .into();
        let mut req = http::Request::builder().method(self.method).uri(&self.url);
        let host = self.url.split('/').nth(2).unwrap().to_string();
        let mut headers: Vec<(&str, String)> = vec![("host", host)];
        headers.extend(self.headers.iter().cloned());
        for (k, v) in &headers {
            req = req.header(*k, v);
        }
        let body = match &self.payload_hash {
            Some(h) => SignableBody::Precomputed(h.clone()),
            None if self.signed_payload && presign.is_none() => SignableBody::Bytes(&self.body),
            None => SignableBody::UnsignedPayload,
        };
        let signable = SignableRequest::new(
            self.method,
            self.url.clone(),
            headers.iter().map(|(k, v)| (*k, v.as_str())),
            body,
        )
        .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let mut req = req.body(self.body.clone()).unwrap();
        instructions.apply_to_request_http1x(&mut req);
        req
    }

    /// Signs as the root user and sends it.
    pub async fn send(&self) -> Reply {
        send(self.signed(USER, SECRET, "us-east-1", None)).await
    }

    /// [`Raw::send`], or how the request failed (the server went away).
    pub async fn try_send(&self) -> Result<Reply, reqwest::Error> {
        try_send(self.signed(USER, SECRET, "us-east-1", None)).await
    }
}

/// A raw response.
pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    /// The S3 error code in the body, if any.
    pub fn code(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        text.split("<Code>")
            .nth(1)
            .and_then(|r| r.split("</Code>").next())
            .unwrap_or("")
            .to_string()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends a request with reqwest.
pub async fn send(req: http::Request<Vec<u8>>) -> Reply {
    try_send(req).await.unwrap()
}

/// [`send`], or how the request failed.
pub async fn try_send(req: http::Request<Vec<u8>>) -> Result<Reply, reqwest::Error> {
    let (parts, body) = req.into_parts();
    let client = reqwest::Client::new();
    let mut r = client
        .request(parts.method, parts.uri.to_string())
        .body(body);
    for (k, v) in parts.headers.iter() {
        if k != "host" {
            r = r.header(k, v);
        }
    }
    let resp = r.send().await?;
    Ok(Reply {
        status: resp.status().as_u16(),
        headers: resp.headers().clone(),
        body: resp.bytes().await?.to_vec(),
    })
}

/// Writes a signed request's head (plus `extra` headers) and the first
/// `send` bytes of a `body_len`-byte body straight to a socket, then
/// optionally closes the write side; returns everything the server answered.
pub fn partial_request(
    s: &Server,
    extra: &[(&str, &str)],
    method: &str,
    path: &str,
    body_len: usize,
    send: usize,
    close: bool,
) -> String {
    use std::io::{Read, Write};
    let mut unsigned = extra.to_vec();
    unsigned.push(("connection", "close"));
    let head = signed_head(s, method, path, &[], body_len, &unsigned);
    let mut sock = std::net::TcpStream::connect(&s.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    sock.write_all(head.as_bytes()).unwrap();
    sock.write_all(&vec![b'z'; send]).unwrap();
    if close {
        sock.shutdown(std::net::Shutdown::Write).unwrap();
    }
    let mut out = String::new();
    let _ = sock.read_to_string(&mut out);
    out
}

/// The head of a root-signed HTTP/1.1 request with `signed` headers and an
/// UNSIGNED-PAYLOAD body of `body_len` bytes, then the `unsigned` headers
/// and the blank line.
pub fn signed_head(
    s: &Server,
    method: &str,
    path: &str,
    signed: &[(&'static str, String)],
    body_len: usize,
    unsigned: &[(&str, &str)],
) -> String {
    let mut raw = Raw::new(method, format!("{}{path}", s.endpoint));
    raw.signed_payload = false;
    for (k, v) in signed {
        raw = raw.header(k, v.clone());
    }
    let req = raw.signed(USER, SECRET, "us-east-1", None);
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in req.headers() {
        head.push_str(&format!("{}: {}\r\n", k, v.to_str().unwrap()));
    }
    head.push_str(&format!("content-length: {body_len}\r\n"));
    for (k, v) in unsigned {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// Runs `granary admin ARGS...` against `s` as root; returns stdout.
pub fn admin(s: &Server, args: &[&str]) -> Result<String, String> {
    admin_at(&s.endpoint, args)
}

/// Runs `granary admin` against the server at `endpoint`.
pub fn admin_at(endpoint: &str, args: &[&str]) -> Result<String, String> {
    admin_as(endpoint, (USER, SECRET), args)
}

/// Runs `granary admin` against `endpoint` signed with `root`.
pub fn admin_as(endpoint: &str, root: (&str, &str), args: &[&str]) -> Result<String, String> {
    let out = Command::new(granary_bin())
        .arg("admin")
        .args(["--endpoint", endpoint])
        .args(args)
        .env("GRANARY_ROOT_USER", root.0)
        .env("GRANARY_ROOT_PASSWORD", root.1)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8(out.stderr).unwrap())
    }
}

/// Creates a user with the CLI; returns (access key, secret).
pub fn add_user(s: &Server, name: &str, extra: &[&str]) -> (String, String) {
    user_from(&admin(s, &[&["user", "add", name], extra].concat()).unwrap())
}

/// The access key and secret `granary admin user add` (or a server's
/// first start) printed.
pub fn user_from(out: &str) -> (String, String) {
    let field = |p: &str| {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(p))
            .unwrap_or_else(|| panic!("no {p} in {out}"))
            .to_string()
    };
    (field("AWS_ACCESS_KEY_ID="), field("AWS_SECRET_ACCESS_KEY="))
}

/// Deterministic pseudo-random bytes (xorshift64*), reproducible by seed.
pub struct Pattern {
    state: u64,
}

impl Pattern {
    pub fn new(seed: u64) -> Pattern {
        Pattern {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.state ^= self.state >> 12;
            self.state ^= self.state << 25;
            self.state ^= self.state >> 27;
            let v = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        Pattern::new(seed).fill(&mut v);
        v
    }
}

/// A streaming request body generating `len` pattern bytes on the fly.
pub fn generated_body(len: u64, seed: u64) -> ByteStream {
    const CHUNK: u64 = 1 << 20;
    let stream = futures::stream::unfold(
        (Pattern::new(seed), 0u64),
        move |(mut p, sent)| async move {
            if sent >= len {
                return None;
            }
            let n = CHUNK.min(len - sent) as usize;
            let mut buf = vec![0u8; n];
            p.fill(&mut buf);
            Some((
                Ok::<_, std::io::Error>(Frame::data(Bytes::from(buf))),
                (p, sent + n as u64),
            ))
        },
    );
    let body = http_body_util::StreamBody::new(futures::StreamExt::fuse(stream));
    ByteStream::new(SdkBody::from_body_1_x(body))
}

/// The S3 error code of an SDK error.
pub fn code<E: aws_sdk_s3::error::ProvideErrorMetadata + std::fmt::Debug>(
    e: &aws_sdk_s3::error::SdkError<E>,
) -> String {
    match e {
        aws_sdk_s3::error::SdkError::ServiceError(s) => s.err().code().unwrap_or("").to_string(),
        other => format!("not a service error: {other:?}"),
    }
}

/// The HTTP status of an SDK error.
pub fn status<E>(e: &aws_sdk_s3::error::SdkError<E>) -> u16 {
    match e {
        aws_sdk_s3::error::SdkError::ServiceError(s) => s.raw().status().as_u16(),
        _ => 0,
    }
}

/// Turns versioning on for `bucket`.
pub async fn enable_versioning(c: &Client, bucket: &str) {
    use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
    c.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
}

/// A lifecycle rule moving what is under `prefix` to storage class
/// `class` `days` days after it was written.
pub fn transition_rule(
    id: &str,
    prefix: &str,
    days: i32,
    class: &str,
) -> aws_sdk_s3::types::LifecycleRule {
    use aws_sdk_s3::types::{
        ExpirationStatus, LifecycleRule, LifecycleRuleFilter, Transition, TransitionStorageClass,
    };
    LifecycleRule::builder()
        .id(id)
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix(prefix).build())
        .transitions(
            Transition::builder()
                .days(days)
                .storage_class(TransitionStorageClass::from(class))
                .build(),
        )
        .build()
        .unwrap()
}

/// A lifecycle rule expiring what is under `prefix` `days` days after it
/// was written.
pub fn expiration_rule(id: &str, prefix: &str, days: i32) -> aws_sdk_s3::types::LifecycleRule {
    use aws_sdk_s3::types::{
        ExpirationStatus, LifecycleExpiration, LifecycleRule, LifecycleRuleFilter,
    };
    LifecycleRule::builder()
        .id(id)
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix(prefix).build())
        .expiration(LifecycleExpiration::builder().days(days).build())
        .build()
        .unwrap()
}

/// Sets `bucket`'s lifecycle configuration to `rules`.
pub async fn set_lifecycle(c: &Client, bucket: &str, rules: Vec<aws_sdk_s3::types::LifecycleRule>) {
    use aws_sdk_s3::types::BucketLifecycleConfiguration;
    c.put_bucket_lifecycle_configuration()
        .bucket(bucket)
        .lifecycle_configuration(
            BucketLifecycleConfiguration::builder()
                .set_rules(Some(rules))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
}

/// Reads an object completely.
pub async fn get_bytes(c: &Client, bucket: &str, key: &str) -> Vec<u8> {
    let r = c.get_object().bucket(bucket).key(key).send().await.unwrap();
    r.body.collect().await.unwrap().into_bytes().to_vec()
}

/// Writes an object from memory.
pub async fn put_bytes(
    c: &Client,
    bucket: &str,
    key: &str,
    data: Vec<u8>,
) -> aws_sdk_s3::operation::put_object::PutObjectOutput {
    c.put_object()
        .bucket(bucket)
        .key(key)
        .body(data.into())
        .send()
        .await
        .unwrap()
}

/// The Content-MD5 header value of `body`.
pub fn content_md5(body: &[u8]) -> String {
    use base64::Engine as _;
    use md5::Digest as _;
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}
