//! The fault harness: the real binary (built with fault points) is cut
//! off by its clients, killed with SIGKILL at named steps, has its clock
//! stepped, and is read while it changes; every client operation is
//! recorded into a history that a linearizability checker judges, and
//! after recovery every acknowledged object must read back byte-exact.
//!
//! - `findings`: one regression test per defect the harness found;
//! - `disconnects`, `crashes`, `clocks`, `reads`: the harness itself, at
//!   reduced scale in CI and at full scale with
//!   `GRANARY_E2E_FAULT_TRIALS=500` (trials per fault point and per
//!   disconnect window); each run prints the seed that replays it
//!   (`GRANARY_E2E_FAULT_SEED`).

pub mod checker;
pub mod control;
pub mod cut;
pub mod history;
pub mod recorder;
pub mod workload;

mod clocks;
mod crashes;
mod disconnects;
mod findings;
mod reads;

use history::History;
use recorder::Recorder;

use crate::harness::{admin, Server};

/// Recovery after a fault run: heals `s`, restarts it, marks `h`
/// quiesced and reads each (recorder, key) once more at the new address
/// (each read must answer; the checker judges it). Returns the reads that
/// failed.
pub async fn recover_and_read<'a>(
    s: &mut Server,
    h: &History,
    keys: impl IntoIterator<Item = (&'a Recorder, &'a str)>,
) -> Vec<String> {
    admin(s, &["heal"]).unwrap();
    s.restart();
    h.quiesce();
    let mut lost = Vec::new();
    for (r, key) in keys {
        if let Err(e) = r.at(&s.endpoint).must_read(key, "after recovery").await {
            lost.push(e);
        }
    }
    lost
}

/// Trials per fault point and per disconnect window: 20 in CI,
/// `GRANARY_E2E_FAULT_TRIALS` otherwise (500 at full scale).
pub fn trials() -> usize {
    std::env::var("GRANARY_E2E_FAULT_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// The run's seed: `GRANARY_E2E_FAULT_SEED`, or a fresh one; printed so a
/// failing run can be replayed.
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("GRANARY_E2E_FAULT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| uuid::Uuid::new_v4().as_u128() as u64);
    eprintln!("{test}: seed {seed} (replay with GRANARY_E2E_FAULT_SEED={seed})");
    seed
}

/// Runs the checker over `h` and panics with its report on a violation.
pub fn assert_linearizable(h: &History, what: &str) -> checker::Checked {
    match checker::check(h) {
        Ok(c) => {
            eprintln!(
                "{what}: {} keys, {} operations, {} listings: linearizable",
                c.keys, c.ops, c.listings
            );
            c
        }
        Err(v) => panic!("{what}: the checker found a violation:\n{v}"),
    }
}
