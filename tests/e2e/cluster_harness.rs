//! A cluster of real processes on loopback: `granary node`s on
//! 127.0.0.2, 127.0.0.3, … (one port shared by all, so the cluster file is
//! written before any starts) and `granary gateway`s over them.

use std::path::PathBuf;
use std::process::{Child, Command};

use aws_sdk_s3::Client;

use crate::harness::{client_for, spawn_until, unsafe_kill, SECRET, USER};

/// The cluster secret of test clusters.
pub const CLUSTER_SECRET: &str = "e2e-cluster-secret-0123456789";
/// The master key of test clusters (base64 of 32 bytes).
pub const MASTER_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// A cluster of nodes and gateways.
pub struct Cluster {
    pub root: tempfile::TempDir,
    pub cluster_file: PathBuf,
    pub nodes: Vec<Node>,
    pub gateways: Vec<Gateway>,
    /// Extra options of every gateway (mutual TLS).
    gateway_args: Vec<String>,
}

/// One `granary node`.
pub struct Node {
    pub address: String,
    pub disks: Vec<PathBuf>,
    log: PathBuf,
    child: Option<Child>,
    /// The network namespace the node runs in, if any.
    pub netns: Option<NetNs>,
    /// Extra options (mutual TLS).
    args: Vec<String>,
}

/// A network namespace joined to the host by a veth pair: a node inside it
/// can be cut off by a real partition (the host end's link goes down; the
/// node keeps running and nothing answers its peers).
pub struct NetNs {
    name: String,
    host_link: String,
    /// The namespace side's address.
    pub addr: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl NetNs {
    /// Whether this process may create namespaces (root with `ip`).
    pub fn available() -> bool {
        let probe = format!("grprobe{}", std::process::id());
        Command::new("ip")
            .args(["netns", "add", &probe])
            .output()
            .is_ok_and(|o| o.status.success())
            && Command::new("ip")
                .args(["netns", "del", &probe])
                .output()
                .is_ok_and(|o| o.status.success())
    }

    /// A new namespace with a veth pair on its own /30.
    pub fn new() -> NetNs {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("{}{n}", std::process::id() % 100_000);
        let (name, host_link, ns_link) =
            (format!("gr{tag}"), format!("grh{tag}"), format!("grn{tag}"));
        let net = 4 * (n % 60);
        let (a, b) = (160 + std::process::id() % 60, net);
        let (host_addr, addr) = (
            format!("10.{a}.{}.{}", 0, b + 1),
            format!("10.{a}.{}.{}", 0, b + 2),
        );
        ip(&["netns", "add", &name]);
        ip(&[
            "link", "add", &host_link, "type", "veth", "peer", "name", &ns_link,
        ]);
        ip(&["link", "set", &ns_link, "netns", &name]);
        ip(&["addr", "add", &format!("{host_addr}/30"), "dev", &host_link]);
        ip(&["link", "set", &host_link, "up"]);
        ip(&[
            "netns",
            "exec",
            &name,
            "ip",
            "addr",
            "add",
            &format!("{addr}/30"),
            "dev",
            &ns_link,
        ]);
        ip(&["netns", "exec", &name, "ip", "link", "set", &ns_link, "up"]);
        ip(&["netns", "exec", &name, "ip", "link", "set", "lo", "up"]);
        NetNs {
            name,
            host_link,
            addr,
        }
    }

    /// Cuts the namespace off (or joins it again).
    pub fn set_connected(&self, up: bool) {
        ip(&[
            "link",
            "set",
            &self.host_link,
            if up { "up" } else { "down" },
        ]);
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_link])
            .output();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// One `granary gateway`.
pub struct Gateway {
    pub endpoint: String,
    log: PathBuf,
    child: Option<Child>,
}

/// A free TCP port on 127.0.0.2 (the nodes all use it, each on its own
/// address).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Node {
    fn command(&self) -> Command {
        let mut c = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns.name, env!("CARGO_BIN_EXE_granary")]);
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_granary")),
        };
        c.arg("node").arg("--disks").args(&self.disks);
        c.args(["--address", &self.address]);
        c.args(&self.args);
        c.env("GRANARY_CLUSTER_SECRET", CLUSTER_SECRET)
            .env("RUST_LOG", "info");
        c
    }

    /// Starts the node and waits until it listens.
    pub fn start(&mut self) {
        let (child, _) = spawn_until(self.command(), &self.log, "Granary node listening on ")
            .unwrap_or_else(|log| panic!("node {} did not start:\n{log}", self.address));
        self.child = Some(child);
    }

    /// Kills the node with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the node (SIGSTOP): it keeps its connections but answers
    /// nothing, as a partitioned node would.
    pub fn freeze(&self) {
        unsafe_kill(self.child.as_ref().unwrap().id(), "STOP");
    }

    /// Resumes a frozen node.
    pub fn thaw(&self) {
        unsafe_kill(self.child.as_ref().unwrap().id(), "CONT");
    }

    /// The node's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Gateway {
    /// An SDK client of this gateway.
    pub fn client(&self) -> Client {
        client_for(&self.endpoint, USER, SECRET, "us-east-1")
    }

    /// An SDK client of this gateway that never retries: every failure
    /// the gateway answers reaches the test.
    pub fn client_without_retries(&self) -> Client {
        let conf = self
            .client()
            .config()
            .to_builder()
            .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
            .build();
        Client::from_conf(conf)
    }

    /// The gateway's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// The command of a gateway over `cluster_file`.
pub fn gateway_command(cluster_file: &std::path::Path, secret: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_granary"));
    c.arg("gateway").arg("--cluster").arg(cluster_file);
    c.args(["--address", "127.0.0.1:0"]);
    c.args(extra);
    c.env("GRANARY_CLUSTER_SECRET", secret)
        .env("GRANARY_ROOT_USER", USER)
        .env("GRANARY_ROOT_PASSWORD", SECRET)
        .env("GRANARY_MASTER_KEY", MASTER_KEY)
        .env("RUST_LOG", "info");
    c
}

impl Cluster {
    /// Starts `nodes` nodes of `disks` disks each, a hot pool of all of
    /// them with `parity`, and `gateways` gateways.
    pub fn start(nodes: usize, disks: usize, parity: usize, gateways: usize) -> Cluster {
        Cluster::start_isolated(nodes, disks, parity, gateways, 0)
    }

    /// [`Cluster::start`] with the hot pool divided into erasure sets of
    /// `set_width` disks (`None`: the default width for its disk count).
    pub fn start_in_sets(
        nodes: usize,
        disks: usize,
        parity: usize,
        set_width: Option<usize>,
        gateways: usize,
    ) -> Cluster {
        let mut c = Cluster::laid_out(nodes, disks, parity, 0);
        if let Some(w) = set_width {
            let text = std::fs::read_to_string(&c.cluster_file).unwrap();
            let text = text.replacen(
                &format!("parity = {parity}\n"),
                &format!("parity = {parity}\nset_width = {w}\n"),
                1,
            );
            std::fs::write(&c.cluster_file, text).unwrap();
        }
        c.launch(gateways);
        c
    }

    /// [`Cluster::start`] with the last `isolated` nodes each in a network
    /// namespace of its own (see [`NetNs`]).
    pub fn start_isolated(
        nodes: usize,
        disks: usize,
        parity: usize,
        gateways: usize,
        isolated: usize,
    ) -> Cluster {
        let mut c = Cluster::laid_out(nodes, disks, parity, isolated);
        c.launch(gateways);
        c
    }

    /// [`Cluster::start`] with mutual TLS between the gateways and the
    /// nodes: a CA in the cluster's directory signs a certificate for each
    /// node's address and one for the gateways.
    pub fn start_with_tls(nodes: usize, disks: usize, parity: usize, gateways: usize) -> Cluster {
        use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
        let mut c = Cluster::laid_out(nodes, disks, parity, 0);
        let dir = c.root.path().join("tls");
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        let issue = |name: &str, san: &str, usage| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(vec![san.to_string()]).unwrap();
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
            let (pem, key_pem) = (
                dir.join(format!("{name}.pem")),
                dir.join(format!("{name}.key")),
            );
            std::fs::write(&pem, cert.pem()).unwrap();
            std::fs::write(&key_pem, key.serialize_pem()).unwrap();
            (pem.display().to_string(), key_pem.display().to_string())
        };
        let ca_file = dir.join("ca.pem").display().to_string();
        for (i, n) in c.nodes.iter_mut().enumerate() {
            let host = n.address.rsplit_once(':').unwrap().0.to_string();
            let (pem, key) = issue(
                &format!("node{i}"),
                &host,
                ExtendedKeyUsagePurpose::ServerAuth,
            );
            n.args = vec![
                "--tls-cert".into(),
                pem,
                "--tls-key".into(),
                key,
                "--tls-client-ca".into(),
                ca_file.clone(),
            ];
        }
        let (pem, key) = issue("gateway", "gateway", ExtendedKeyUsagePurpose::ClientAuth);
        c.gateway_args = vec![
            "--node-tls-cert".into(),
            pem,
            "--node-tls-key".into(),
            key,
            "--node-tls-ca".into(),
            ca_file,
        ];
        c.launch(gateways);
        c
    }

    /// The cluster's nodes, directories and cluster file; nothing started.
    fn laid_out(nodes: usize, disks: usize, parity: usize, isolated: usize) -> Cluster {
        let root = tempfile::tempdir().unwrap();
        let port = free_port();
        let nodes: Vec<Node> = (0..nodes)
            .map(|i| {
                let netns = (i + isolated >= nodes).then(NetNs::new);
                let host = match &netns {
                    Some(ns) => ns.addr.clone(),
                    None => format!("127.0.0.{}", i + 2),
                };
                (host, netns)
            })
            .enumerate()
            .map(|(i, (host, netns))| Node {
                address: format!("{host}:{port}"),
                netns,
                disks: (1..=disks)
                    .map(|d| {
                        root.path()
                            .join(format!("node{}", i + 1))
                            .join(format!("d{d}"))
                    })
                    .collect(),
                log: root.path().join(format!("node{}.log", i + 1)),
                child: None,
                args: Vec::new(),
            })
            .collect();
        let specs: Vec<String> = nodes
            .iter()
            .map(|n| {
                let dir = n.disks[0].parent().unwrap().display().to_string();
                format!("\"{}:{dir}/d{{1...{disks}}}\"", n.address)
            })
            .collect();
        let cluster_file = root.path().join("cluster.toml");
        std::fs::write(
            &cluster_file,
            format!(
                "deployment = \"{}\"\n\n[[pool]]\ntier = \"hot\"\nparity = {parity}\ndisks = [{}]\n",
                uuid::Uuid::new_v4(),
                specs.join(", ")
            ),
        )
        .unwrap();
        Cluster {
            root,
            cluster_file,
            nodes,
            gateways: Vec::new(),
            gateway_args: Vec::new(),
        }
    }

    /// Starts the nodes, then `gateways` gateways.
    fn launch(&mut self, gateways: usize) {
        for n in &mut self.nodes {
            n.start();
        }
        for _ in 0..gateways {
            self.add_gateway();
        }
    }

    /// The options every gateway of this cluster starts with.
    pub fn gateway_args(&self) -> Vec<&str> {
        let mut args = vec!["--wait", "20"];
        args.extend(self.gateway_args.iter().map(String::as_str));
        args
    }

    /// Starts `nodes` more nodes of `disks` disks each (on 127.0.0.20 and
    /// up) and adds them to the cluster file as a cold pool with `parity`.
    /// Running gateways see it once restarted.
    pub fn add_cold_pool(&mut self, nodes: usize, disks: usize, parity: usize) {
        self.add_pool("cold", 20, nodes, disks, parity);
    }

    /// [`Cluster::add_cold_pool`] for a further hot pool (on 127.0.0.30
    /// and up).
    pub fn add_hot_pool(&mut self, nodes: usize, disks: usize, parity: usize) {
        self.add_pool("hot", 30, nodes, disks, parity);
    }

    fn add_pool(&mut self, tier: &str, first: usize, nodes: usize, disks: usize, parity: usize) {
        let port = self.nodes[0]
            .address
            .rsplit_once(':')
            .unwrap()
            .1
            .to_string();
        let mut specs = Vec::new();
        for i in 0..nodes {
            let dir = self.root.path().join(format!("{tier}{}", first + i));
            let mut n = Node {
                address: format!("127.0.0.{}:{port}", first + i),
                disks: (1..=disks).map(|d| dir.join(format!("d{d}"))).collect(),
                log: self.root.path().join(format!("{tier}{}.log", first + i)),
                child: None,
                netns: None,
                args: self.nodes[0].args.clone(),
            };
            specs.push(format!(
                "\"{}:{}/d{{1...{disks}}}\"",
                n.address,
                dir.display()
            ));
            n.start();
            self.nodes.push(n);
        }
        let mut text = std::fs::read_to_string(&self.cluster_file).unwrap();
        text.push_str(&format!(
            "\n[[pool]]\ntier = \"{tier}\"\nparity = {parity}\ndisks = [{}]\n",
            specs.join(", ")
        ));
        std::fs::write(&self.cluster_file, text).unwrap();
    }

    /// Stops every gateway and starts as many again (they read the cluster
    /// file anew).
    pub fn restart_gateways(&mut self) {
        let n = self.gateways.len();
        for g in &mut self.gateways {
            if let Some(mut c) = g.child.take() {
                unsafe_kill(c.id(), "TERM");
                let _ = c.wait();
            }
        }
        self.gateways.clear();
        for _ in 0..n {
            self.add_gateway();
        }
    }

    /// Starts one more gateway.
    pub fn add_gateway(&mut self) {
        self.add_gateway_with(&[]);
    }

    /// Starts one more gateway with extra environment variables.
    pub fn add_gateway_with(&mut self, env: &[(&str, &str)]) {
        let log = self
            .root
            .path()
            .join(format!("gateway{}.log", self.gateways.len() + 1));
        let mut cmd = gateway_command(&self.cluster_file, CLUSTER_SECRET, &self.gateway_args());
        cmd.envs(env.iter().copied());
        let (child, url) = spawn_until(cmd, &log, "Granary listening on ")
            .unwrap_or_else(|log| panic!("gateway did not start:\n{log}"));
        self.gateways.push(Gateway {
            endpoint: url.split_whitespace().next().unwrap().to_string(),
            log,
            child: Some(child),
        });
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for g in &mut self.gateways {
            if let Some(mut c) = g.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        for n in &mut self.nodes {
            n.thaw_if_running();
            n.kill();
        }
    }
}

impl Node {
    fn thaw_if_running(&self) {
        if self.child.is_some() {
            self.thaw();
        }
    }
}
