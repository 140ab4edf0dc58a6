//! The cluster file of `granary gateway --cluster cluster.toml`, parsed
//! and checked: the deployment, its pools and the nodes' disks that form
//! them (placement's `cluster.rs` opens them).
//!
//! ```toml
//! deployment = "0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e"
//!
//! [[pool]]
//! tier = "hot"
//! parity = 2
//! disks = ["node{1...4}:9100:/disks/d{1...2}"]
//! ```
//!
//! A disk is `HOST[:PORT]:/PATH` (port 9100 by default); `{a...b}` expands
//! to every number from a to b (keeping leading zeros), and several ranges
//! in one pattern expand as nested loops, the leftmost outermost. A pool's
//! disks are ordered so consecutive slots alternate between nodes, and
//! divided into erasure sets (`set_widths.rs`, the node being the failure
//! domain): every pool into sets of its `set_width` disks, by default the
//! widest of 4–16 that divides its disk count and leaves no node more
//! disks of a set than its parity. A layout in which a node would hold
//! more than the parity of a set (its loss would lose data) is refused.
//! Pools are listed hot first (the first holds the cluster-wide documents
//! and every key's lock; hot pools added later take new keys by free
//! space, see `pools.rs`), then at most one cold pool.

use std::collections::{BTreeMap, HashMap, HashSet};

use disk_format::format::Tier;
use serde::Deserialize;
use uuid::Uuid;

use crate::parity::default_parity_in;
use crate::set_widths::choose_layout;

/// Port of a node when a disk does not name one.
pub const DEFAULT_NODE_PORT: u16 = 9100;

/// A parsed and checked cluster file.
#[derive(Clone, Debug)]
pub struct ClusterMap {
    /// The deployment every disk must belong to.
    pub deployment: Uuid,
    /// Pools in order: hot pools first, then at most one cold pool.
    pub pools: Vec<PoolMap>,
}

/// One pool: its tier, parity and disks in slot order.
#[derive(Clone, Debug)]
pub struct PoolMap {
    /// Tier of the pool.
    pub tier: Tier,
    /// Parity shards (m) of each of its sets.
    pub parity: usize,
    /// Disks per set: set `s` is disks `s * set_width ..`.
    pub set_width: usize,
    /// Disks in slot order (alternating between nodes).
    pub disks: Vec<NodeDisk>,
}

/// One disk of a node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeDisk {
    /// `host:port` of the node.
    pub node: String,
    /// The disk's directory on the node.
    pub path: String,
}

impl std::fmt::Display for NodeDisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.node, self.path)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    deployment: Uuid,
    #[serde(rename = "pool")]
    pools: Vec<PoolShape>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolShape {
    tier: Tier,
    parity: Option<usize>,
    set_width: Option<usize>,
    disks: Vec<String>,
}

/// Why a cluster file was refused (the message says what to change).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClusterFileError(pub String);

fn bad(msg: impl Into<String>) -> ClusterFileError {
    ClusterFileError(msg.into())
}

/// Most disks one pool may list (1,024 nodes of 16 disks): bounds what a
/// mistyped range costs to expand and check.
pub const MAX_POOL_DISKS: usize = 16_384;

/// Longest bound of a `{a...b}` range, padding included.
const MAX_RANGE_DIGITS: usize = 8;

fn too_many(what: &str) -> ClusterFileError {
    bad(format!(
        "{what}: a pool lists more than {MAX_POOL_DISKS} disks"
    ))
}

/// Expands every `{a...b}` range of `pattern` (at most [`MAX_POOL_DISKS`]
/// names).
pub fn expand(pattern: &str) -> Result<Vec<String>, ClusterFileError> {
    let Some(open) = pattern.find('{') else {
        return Ok(vec![pattern.to_string()]);
    };
    let close = pattern[open..]
        .find('}')
        .map(|c| open + c)
        .ok_or_else(|| bad(format!("{pattern}: unclosed '{{'")))?;
    let inner = &pattern[open + 1..close];
    let (a, b) = inner
        .split_once("...")
        .ok_or_else(|| bad(format!("{pattern}: a range is written {{1...4}}")))?;
    let (lo, hi): (u64, u64) = match (a.parse(), b.parse()) {
        (Ok(lo), Ok(hi)) if lo <= hi => (lo, hi),
        _ => {
            return Err(bad(format!(
                "{pattern}: {{{inner}}} is not an ascending number range"
            )))
        }
    };
    if hi - lo >= 4096 || a.len().max(b.len()) > MAX_RANGE_DIGITS {
        return Err(bad(format!("{pattern}: {{{inner}}} is too large a range")));
    }
    let width = if a.starts_with('0') && a.len() > 1 {
        a.len()
    } else {
        0
    };
    let rest = expand(&pattern[close + 1..])?;
    if (hi - lo + 1) as usize * rest.len() > MAX_POOL_DISKS {
        return Err(too_many(pattern));
    }
    let mut out = Vec::new();
    for n in lo..=hi {
        let head = format!("{}{:0width$}", &pattern[..open], n);
        out.extend(rest.iter().map(|r| format!("{head}{r}")));
    }
    Ok(out)
}

fn parse_disk(spec: &str) -> Result<NodeDisk, ClusterFileError> {
    let (node, path) = spec
        .split_once(":/")
        .ok_or_else(|| bad(format!("{spec}: a disk is HOST[:PORT]:/PATH")))?;
    if node.is_empty() {
        return Err(bad(format!("{spec}: the node is missing")));
    }
    let node = match node.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => node.to_string(),
        Some(_) => return Err(bad(format!("{spec}: bad port"))),
        None => format!("{node}:{DEFAULT_NODE_PORT}"),
    };
    Ok(NodeDisk {
        node,
        path: format!("/{path}"),
    })
}

/// Orders a pool's disks so consecutive slots are on different nodes:
/// each node's first disk, then each node's second, and so on.
fn interleave(disks: Vec<NodeDisk>) -> Vec<NodeDisk> {
    let mut order: Vec<String> = Vec::new();
    let mut by_node: BTreeMap<String, std::collections::VecDeque<NodeDisk>> = BTreeMap::new();
    for d in disks {
        if !by_node.contains_key(&d.node) {
            order.push(d.node.clone());
        }
        by_node.entry(d.node.clone()).or_default().push_back(d);
    }
    let mut out = Vec::new();
    loop {
        let before = out.len();
        for n in &order {
            if let Some(d) = by_node.get_mut(n).and_then(|q| q.pop_front()) {
                out.push(d);
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

impl ClusterMap {
    /// Parses and checks a cluster file's text.
    pub fn parse(text: &str) -> Result<ClusterMap, ClusterFileError> {
        let shape: FileShape =
            toml::from_str(text).map_err(|e| bad(format!("cluster file: {e}")))?;
        let mut pools = Vec::new();
        let count = shape.pools.len();
        for (i, p) in shape.pools.into_iter().enumerate() {
            // Hot pools first (the first holds every version record), then
            // at most one cold pool.
            if (i == 0 && p.tier != Tier::Hot) || (p.tier == Tier::Cold && i + 1 != count) {
                return Err(bad(
                    "the cluster file lists hot pools (at least one), then at most one cold pool",
                ));
            }
            let mut disks = Vec::new();
            let mut listed = HashSet::new();
            for pattern in &p.disks {
                for spec in expand(pattern)? {
                    let d = parse_disk(&spec)?;
                    if !listed.insert(d.clone()) {
                        return Err(bad(format!("{d} is listed twice")));
                    }
                    if listed.len() > MAX_POOL_DISKS {
                        return Err(too_many(&format!("pool {i}")));
                    }
                    disks.push(d);
                }
            }
            let disks = interleave(disks);
            // Each node's failure domain: its place among the nodes.
            let mut nodes: HashMap<&str, usize> = HashMap::new();
            let domains: Vec<usize> = disks
                .iter()
                .map(|d| {
                    let next = nodes.len();
                    *nodes.entry(&d.node).or_insert(next)
                })
                .collect();
            let tier = p.tier;
            let layout = choose_layout(&domains, p.set_width, p.parity, |w| {
                default_parity_in(tier, w)
            })
            .map_err(|e| bad(format!("pool {i}: {e}")))?;
            let (parity, set_width) = (layout.parity, layout.width);
            pools.push(PoolMap {
                tier: p.tier,
                parity,
                set_width,
                disks,
            });
        }
        if pools.is_empty() {
            return Err(bad("the cluster file names no pool"));
        }
        Ok(ClusterMap {
            deployment: shape.deployment,
            pools,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_cluster_files_parse() {
        let sample = ClusterMap::parse(include_str!("../../ops/cluster.toml")).unwrap();
        assert_eq!(sample.pools[0].disks.len(), 8);
        // The ConfigMap's embedded file, indentation removed.
        let manifest = include_str!("../../ops/kubernetes/cluster-config.yaml");
        let embedded: String = manifest
            .split_once("cluster.toml: |\n")
            .unwrap()
            .1
            .lines()
            .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
            .collect();
        let k8s = ClusterMap::parse(&embedded).unwrap();
        assert_eq!(k8s.pools[0].disks.len(), 8);
        assert_eq!(
            k8s.pools[0].disks[1].node,
            "granary-node-1.granary-node.granary.svc.cluster.local:9100"
        );
    }

    /// Each range was capped but not their product: ten `{0...3}` made a
    /// million disks, and the duplicate check was quadratic — a mistyped
    /// file could exhaust a gateway's memory at start (found by the
    /// cluster_file fuzz target).
    #[test]
    fn a_pool_lists_at_most_its_cap_of_disks() {
        let many = format!("n{}:/d", "{0...3}".repeat(10));
        let err = expand(&many).unwrap_err().to_string();
        assert!(err.contains("more than"), "{err}");
        let padded = format!("n{{{}1...2}}:/d", "0".repeat(200));
        assert!(expand(&padded).is_err());
        let file = |patterns: &str| {
            format!("deployment = \"0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e\"\n[[pool]]\ntier = \"hot\"\ndisks = [{patterns}]")
        };
        let too_many = file(
            r#""n{1...4096}:/a", "n{1...4096}:/b", "n{1...4096}:/c", "n{1...4096}:/d", "n{1...4096}:/e""#,
        );
        let err = ClusterMap::parse(&too_many).unwrap_err().to_string();
        assert!(err.contains("more than"), "{err}");
        // The cap itself is a pool one may write: 1,024 nodes of 16 disks.
        let at_cap = file(r#""n{1...1024}:/d{1...16}""#);
        let map = ClusterMap::parse(&at_cap).unwrap();
        assert_eq!(map.pools[0].disks.len(), MAX_POOL_DISKS);
    }

    #[test]
    fn ranges_expand_in_order_with_their_padding() {
        assert_eq!(
            expand("n{1...2}:/d{08...10}").unwrap(),
            ["n1:/d08", "n1:/d09", "n1:/d10", "n2:/d08", "n2:/d09", "n2:/d10"]
        );
        assert_eq!(expand("plain:/x").unwrap(), ["plain:/x"]);
        for bad in ["n{1..2}:/d", "n{2...1}:/d", "n{1...2:/d", "n{a...b}:/d"] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_pool_is_divided_into_sets_by_the_same_rule() {
        let map = ClusterMap::parse(
            r#"
deployment = "0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e"
[[pool]]
tier = "hot"
disks = ["a{1...8}:/d{1...2}"]
[[pool]]
tier = "hot"
parity = 2
set_width = 8
disks = ["b{1...8}:/d{1...4}"]
[[pool]]
tier = "cold"
disks = ["c{1...8}:/d{1...3}"]
"#,
        )
        .unwrap();
        let shape = |i: usize| {
            let p = &map.pools[i];
            (p.disks.len() / p.set_width, p.set_width, p.parity)
        };
        assert_eq!(shape(0), (1, 16, 4));
        // A hot pool added later: 4 sets of 8 as pinned.
        assert_eq!(shape(1), (4, 8, 2));
        // The cold pool: the default width, the cold default parity.
        assert_eq!(shape(2), (2, 12, 2));
        // A later pool no width divides is refused as the first would be.
        let err = ClusterMap::parse(
            "deployment = \"0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e\"\n[[pool]]\ntier = \"hot\"\ndisks = [\"a{1...4}:/d1\"]\n[[pool]]\ntier = \"hot\"\ndisks = [\"b{1...17}:/d1\"]",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("pool 1") && err.contains("18"), "{err}");
    }

    #[test]
    fn a_cluster_file_becomes_sets_no_node_can_sink() {
        let map = ClusterMap::parse(
            r#"
deployment = "0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e"
[[pool]]
tier = "hot"
parity = 2
disks = ["127.0.0.{2...5}:9100:/srv/d{1...2}"]
[[pool]]
tier = "cold"
disks = ["cold{1...4}:/q"]
"#,
        )
        .unwrap();
        let hot = &map.pools[0];
        assert_eq!(hot.disks.len(), 8);
        // Slots alternate between the four nodes.
        let nodes: Vec<&str> = hot.disks.iter().map(|d| d.node.as_str()).collect();
        assert_eq!(
            &nodes[..4],
            [
                "127.0.0.2:9100",
                "127.0.0.3:9100",
                "127.0.0.4:9100",
                "127.0.0.5:9100"
            ]
        );
        assert_eq!(nodes[4], "127.0.0.2:9100");
        assert_eq!(hot.disks[4].path, "/srv/d2");
        assert_eq!(map.pools[1].parity, 2);
        assert_eq!(map.pools[1].disks[0].node, "cold1:9100");
        // A node holding more than the parity is refused, as are repeats,
        // unknown fields and a cold pool first.
        for text in [
            "deployment = \"0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e\"\n[[pool]]\ntier = \"hot\"\nparity = 1\ndisks = [\"a:/d{1...2}\", \"b:/d1\"]",
            "deployment = \"0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e\"\n[[pool]]\ntier = \"hot\"\ndisks = [\"a:/d1\", \"a:/d1\"]",
            "deployment = \"0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e\"\n[[pool]]\ntier = \"hot\"\nsize = 3\ndisks = [\"a:/d1\"]",
            "deployment = \"0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e\"\n[[pool]]\ntier = \"cold\"\ndisks = [\"a:/d1\"]",
            "deployment = \"not-a-uuid\"\n[[pool]]\ntier = \"hot\"\ndisks = [\"a:/d1\"]",
        ] {
            assert!(ClusterMap::parse(text).is_err(), "{text}");
        }
        let err = ClusterMap::parse("deployment = \"0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e\"\n[[pool]]\ntier = \"hot\"\nparity = 1\ndisks = [\"a:/d{1...2}\", \"b:/d1\"]").unwrap_err().to_string();
        assert!(err.contains("would hold 2 disks of one node"), "{err}");
    }
}
