//! `granary-placement-sim`: how a pool of many disks divides into erasure
//! sets and how keys spread over them, without any disks: the same layout
//! rule (`placement::choose_layout`) and key hash (`placement::set_index`)
//! the server uses. It reports the sets' balance over many keys and what
//! losing one node or one rack costs, for disks ordered node by node
//! (each set spread over as many nodes as it has disks) and rack by rack
//! (each set spread over racks first).
//!
//! `granary-placement-sim --disks 10000 --disks-per-node 16 --nodes-per-rack 16 --keys 100000000`

use std::time::Instant;

use clap::Parser;
use erasure_set::default_parity;
use placement::{choose_layout, set_index, PoolLayout};
use uuid::Uuid;

#[derive(Parser, Debug)]
struct Args {
    /// Disks in the pool.
    #[arg(long, default_value_t = 10_000)]
    disks: usize,
    /// Disks per node.
    #[arg(long, default_value_t = 16)]
    disks_per_node: usize,
    /// Nodes per rack.
    #[arg(long, default_value_t = 16)]
    nodes_per_rack: usize,
    /// Keys hashed onto the sets.
    #[arg(long, default_value_t = 100_000_000)]
    keys: u64,
    /// Disks per set (default: the server's rule).
    #[arg(long)]
    set_width: Option<usize>,
    /// Parity per set (default: by width).
    #[arg(long)]
    parity: Option<usize>,
}

/// Where pool position `j` is, for an ordering.
#[derive(Clone, Copy)]
struct Place {
    node: usize,
    rack: usize,
}

fn main() {
    let a = Args::parse();
    let nodes = a.disks.div_ceil(a.disks_per_node);
    let racks = nodes.div_ceil(a.nodes_per_rack);
    println!(
        "{} disks on {nodes} nodes of {} in {racks} racks of {} nodes",
        a.disks, a.disks_per_node, a.nodes_per_rack
    );
    // Node by node: position j on node j % nodes.
    let by_node: Vec<Place> = (0..a.disks)
        .map(|j| {
            let node = j % nodes;
            Place {
                node,
                rack: node / a.nodes_per_rack,
            }
        })
        .collect();
    // Rack by rack: consecutive positions on consecutive racks, then on
    // the racks' next nodes.
    let by_rack: Vec<Place> = (0..a.disks)
        .map(|j| {
            let rack = j % racks;
            let node = rack * a.nodes_per_rack + (j / racks) % a.nodes_per_rack;
            Place {
                node: node.min(nodes - 1),
                rack,
            }
        })
        .collect();
    let domains: Vec<usize> = by_node.iter().map(|p| p.node).collect();
    let layout = match choose_layout(&domains, a.set_width, a.parity, default_parity) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("no layout: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "layout: {} sets of {} ({}+{})",
        layout.sets,
        layout.width,
        layout.width - layout.parity,
        layout.parity
    );
    balance(&layout, a.keys);
    for (name, order) in [("node by node", &by_node), ("rack by rack", &by_rack)] {
        losses(name, &layout, order);
    }
}

/// Hashes `keys` keys onto the sets and prints how even they are.
fn balance(layout: &PoolLayout, keys: u64) {
    let deployment = Uuid::from_u128(0x6b1f3c2e_8d4a_4f7b_9e21_0c5d7a9b3e10);
    let started = Instant::now();
    let mut counts = vec![0u64; layout.sets];
    let mut name = String::with_capacity(64);
    for i in 0..keys {
        name.clear();
        use std::fmt::Write as _;
        let _ = write!(name, "datasets/shard-{i:012}.tar");
        counts[set_index(deployment, "bucket", &name, layout.sets)] += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    let mean = keys as f64 / layout.sets as f64;
    let (min, max) = (
        *counts.iter().min().unwrap() as f64,
        *counts.iter().max().unwrap() as f64,
    );
    let var = counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2))
        .sum::<f64>()
        / layout.sets as f64;
    println!(
        "balance: {keys} keys, {:.0} per set on average; min {:+.2}%, max {:+.2}%, std dev {:.2}% \
         (a uniform hash expects {:.2}%); {:.0} ns per key hashed",
        mean,
        (min / mean - 1.0) * 100.0,
        (max / mean - 1.0) * 100.0,
        var.sqrt() / mean * 100.0,
        (1.0 / mean).sqrt() * 100.0,
        secs * 1e9 / keys as f64
    );
}

/// What losing the first node, and the first rack, costs with disks in
/// `order`: sets touched, sets left with no redundancy, sets offline.
fn losses(name: &str, layout: &PoolLayout, order: &[Place]) {
    for (what, lost) in [
        (
            "node",
            Box::new(|p: &Place| p.node == 0) as Box<dyn Fn(&Place) -> bool>,
        ),
        ("rack", Box::new(|p: &Place| p.rack == 0)),
    ] {
        let (mut touched, mut bare, mut offline, mut worst) = (0, 0, 0, 0);
        for set in order.chunks(layout.width) {
            let gone = set.iter().filter(|p| lost(p)).count();
            worst = worst.max(gone);
            if gone > 0 {
                touched += 1;
            }
            if gone == layout.parity {
                bare += 1;
            }
            if gone > layout.parity {
                offline += 1;
            }
        }
        println!(
            "{name}: losing a {what}: {touched} of {} sets lose disks (at most {worst} each), \
             {bare} keep no redundancy, {offline} go offline ({:.2}% of keys unavailable)",
            layout.sets,
            offline as f64 / layout.sets as f64 * 100.0
        );
    }
}
