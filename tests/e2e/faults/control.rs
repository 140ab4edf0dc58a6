//! Driving a server's fault points, clock and counters through its admin
//! API (the calls exist in builds with fault points, which
//! `scripts/test.sh` makes), and starting the servers the fault tests use.

use std::collections::BTreeMap;

use crate::harness::{Raw, Server};

/// Starts a server over `n` directories with the hot-object cache off,
/// so that it cannot hide a loss, and `extra` arguments.
pub fn server(n: usize, extra: &[&str]) -> Server {
    with_fault_points(Server::start_with(n, &cache_off(extra)))
}

/// [`server`] over exactly `n` directories whatever `GRANARY_E2E_POOL`
/// says: for tests whose assertions count them.
pub fn server_exactly(n: usize, extra: &[&str]) -> Server {
    with_fault_points(Server::start_exactly(n, &cache_off(extra)))
}

/// [`server`] with a cold pool: four hot and four cold directories
/// (`harness::start_tiered`); returns the cold ones too.
pub fn server_tiered(extra: &[&str]) -> (Server, Vec<std::path::PathBuf>) {
    let (s, cold) = crate::harness::start_tiered(&cache_off(extra));
    (with_fault_points(s), cold)
}

/// `extra` with the hot-object cache off, so it cannot mask a loss.
fn cache_off<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--read-cache-mib", "0"];
    args.extend_from_slice(extra);
    args
}

fn with_fault_points(s: Server) -> Server {
    assert!(
        enabled(&s),
        "this granary binary has no fault points: build it with `--features granary/failpoints` (scripts/test.sh does)"
    );
    s
}

async fn admin(s: &Server, method: &str, path: &str, body: &str) -> (u16, String) {
    admin_at(&s.endpoint, method, path, body).await
}

async fn admin_at(endpoint: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let r = Raw::new(method, format!("{endpoint}/granary/admin/v1/{path}"))
        .body(body.as_bytes().to_vec())
        .send()
        .await;
    (r.status, r.text())
}

/// Whether the server's build has fault points.
pub fn enabled(s: &Server) -> bool {
    let endpoint = s.endpoint.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let url = format!("{endpoint}/granary/admin/v1/faults");
            let r = Raw::new("GET", url).send().await;
            r.text().contains("\"enabled\":true")
        })
    })
    .join()
    .unwrap()
}

/// Sets fault point `name` to `actions` (the `fail` crate's syntax, e.g.
/// `return(sleep:300@disk2)`; "off" clears it).
pub async fn set(s: &Server, name: &str, actions: &str) {
    let (status, text) = admin(s, "PUT", &format!("faults/{name}"), actions).await;
    assert_eq!(status, 200, "configuring {name}: {text}");
}

/// [`set`], unless the server is gone (a crash point armed earlier was
/// reached by background work meanwhile): then false.
pub async fn try_set(s: &Server, name: &str, actions: &str) -> bool {
    let url = format!("{}/granary/admin/v1/faults/{name}", s.endpoint);
    match Raw::new("PUT", url)
        .body(actions.as_bytes().to_vec())
        .try_send()
        .await
    {
        Ok(r) => {
            assert_eq!(r.status, 200, "configuring {name}: {}", r.text());
            true
        }
        Err(_) => false,
    }
}

/// Steps the clock of the server (or gateway) at `endpoint` to `skew_ms`
/// off the system's.
pub async fn set_clock(endpoint: &str, skew_ms: i64) {
    let (status, text) = admin_at(
        endpoint,
        "PUT",
        "clock",
        &format!("{{\"skewMs\": {skew_ms}}}"),
    )
    .await;
    assert_eq!(status, 200, "stepping the clock: {text}");
}

/// What the server counted: per fault point (arrivals, times it acted),
/// and per (operation, phase) the requests whose client went away.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    /// Fault points.
    pub points: BTreeMap<String, (u64, u64)>,
    /// Disconnects.
    pub disconnects: BTreeMap<(String, String), u64>,
}

impl Counts {
    /// Disconnects of `api` seen in `phase`.
    pub fn disconnects(&self, api: &str, phase: &str) -> u64 {
        self.disconnects
            .get(&(api.to_string(), phase.to_string()))
            .copied()
            .unwrap_or(0)
    }
}

/// The server's counters now.
pub async fn counts(s: &Server) -> Counts {
    let (status, text) = admin(s, "GET", "faults", "").await;
    assert_eq!(status, 200, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut c = Counts::default();
    if let Some(points) = v["points"].as_object() {
        for (name, p) in points {
            c.points.insert(
                name.clone(),
                (
                    p["arrived"].as_u64().unwrap_or(0),
                    p["acted"].as_u64().unwrap_or(0),
                ),
            );
        }
    }
    for d in v["disconnects"].as_array().into_iter().flatten() {
        c.disconnects.insert(
            (
                d["api"].as_str().unwrap_or("").to_string(),
                d["phase"].as_str().unwrap_or("").to_string(),
            ),
            d["count"].as_u64().unwrap_or(0),
        );
    }
    c
}

/// How many times `text` appears in the server's log (a crash point
/// prints `failpoint NAME: crash` before the process dies).
pub fn crashes_logged(s: &Server, point: &str) -> usize {
    s.log()
        .matches(&format!("failpoint {point}: crash"))
        .count()
}
