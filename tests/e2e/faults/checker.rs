//! A linearizability checker over a recorded [`History`]: per key, is
//! there one order of the operations that respects real time (an
//! operation acknowledged before another began comes before it) in which
//! every read sees the latest write? Writes and deletes whose outcome the
//! client never learned may be placed anywhere after they began, or left
//! out; refused ones never happened. Each key's current version is a
//! register (a value, or absent).
//!
//! The search is Wing & Gong's with Lowe's memoisation: it linearises
//! operations one at a time, only ever choosing one that began before
//! every pending acknowledged operation ended, and remembers the (set of
//! operations done, register value) pairs already explored. Listings are
//! checked against the same history: a key whose write was acknowledged
//! before the listing began is listed unless a delete may have come
//! between, and a key whose delete was acknowledged before it began is
//! not, unless a write may have come between.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use super::history::{History, Kind, Listing, Op, Outcome, Seen};

/// Operations explored per key before the search gives up.
const MAX_STEPS: usize = 2_000_000;

/// What the checker found wrong, with the history that shows it.
#[derive(Debug)]
pub struct Violation {
    /// The key.
    pub key: String,
    /// What is wrong.
    pub what: String,
    /// The operations of the key, in invocation order.
    pub ops: Vec<Op>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "key {:?}: {}", self.key, self.what)?;
        for op in &self.ops {
            writeln!(f, "  {}", describe(op))?;
        }
        Ok(())
    }
}

/// One line about an operation, for reports.
pub fn describe(op: &Op) -> String {
    let mut s = format!(
        "#{} {:?} [{:.3} ms .. {}] {:?}",
        op.id,
        op.kind,
        op.start as f64 / 1e6,
        op.end
            .map_or("?".to_string(), |e| format!("{:.3} ms", e as f64 / 1e6)),
        op.outcome
    );
    if let Some(seen) = &op.seen {
        let _ = write!(s, " saw {seen:?}");
    }
    if let Some(r) = &op.request_id {
        let _ = write!(s, " request {r}");
    }
    if !op.note.is_empty() {
        let _ = write!(s, " ({})", op.note);
    }
    s
}

/// What a clean run checked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Checked {
    /// Keys checked.
    pub keys: usize,
    /// Operations checked.
    pub ops: usize,
    /// Listings checked.
    pub listings: usize,
}

/// Checks every key and every listing of `history`; the first violation
/// found (by key order, then time) is returned.
pub fn check(history: &History) -> Result<Checked, Violation> {
    let ops = history.ops();
    let mut by_key: BTreeMap<String, Vec<Op>> = BTreeMap::new();
    for op in ops {
        by_key.entry(op.key.clone()).or_default().push(op);
    }
    let mut checked = Checked::default();
    for (key, ops) in &by_key {
        checked.keys += 1;
        checked.ops += ops.len();
        check_key(key, ops, history.quiesced())?;
    }
    for listing in history.listings() {
        checked.listings += 1;
        check_listing(&listing, &by_key)?;
    }
    Ok(checked)
}

/// One operation as the search sees it.
#[derive(Clone, Copy)]
struct Event {
    kind: EventKind,
    start: u64,
    /// When it had taken effect at the latest: its answer, or for one
    /// whose outcome is unknown the moment the run quiesced.
    end: u64,
    /// Acknowledged: it must be placed. Unknown ones may be left out.
    required: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EventKind {
    Put(u64),
    Delete,
    Read(Option<u64>),
}

fn events(ops: &[Op], quiesced: Option<u64>) -> Vec<Event> {
    let mut out = Vec::new();
    for op in ops.iter().filter(|o| o.may_have_happened()) {
        let kind = match (&op.kind, &op.seen) {
            (Kind::Put(v), _) => EventKind::Put(*v),
            (Kind::Delete, _) => EventKind::Delete,
            // A read whose answer never came constrains nothing.
            (Kind::Get, _) if !op.acknowledged() => continue,
            (Kind::Get, Some(Seen::Value(v))) => EventKind::Read(Some(*v)),
            (Kind::Get, Some(Seen::Absent)) => EventKind::Read(None),
            (Kind::Get, _) => continue,
        };
        let required = op.acknowledged();
        let end = match (required, op.end) {
            (true, Some(e)) => e,
            // Nothing a client left unanswered takes effect after the run
            // quiesced (every request ended, the server recovered).
            _ => quiesced.filter(|q| *q > op.start).unwrap_or(u64::MAX),
        };
        out.push(Event {
            kind,
            start: op.start,
            end,
            required,
        });
    }
    out.sort_by_key(|e| e.start);
    out
}

/// Whether `events` (sorted by start) linearise from an absent key.
/// `None` when the search ran out of steps.
fn linearizable(events: &[Event]) -> Option<bool> {
    let n = events.len();
    let words = n.div_ceil(64).max(1);
    let required = events.iter().filter(|e| e.required).count();
    let mut seen: HashSet<(Vec<u64>, Option<u64>)> = HashSet::new();
    let mut steps = 0usize;
    // Depth-first, with an explicit stack of (done set, state, required
    // events done, next choice): choice 2i applies event i, 2i + 1 leaves
    // it out (for an event that may be left out).
    let mut stack: Vec<(Vec<u64>, Option<u64>, usize, usize)> =
        vec![(vec![0u64; words], None, 0, 0)];
    while let Some((done, state, req_done, from)) = stack.pop() {
        if req_done == required {
            return Some(true);
        }
        steps += 1;
        if steps > MAX_STEPS {
            return None;
        }
        let is_done = |i: usize| done[i / 64] & (1 << (i % 64)) != 0;
        let horizon = (0..n)
            .filter(|&i| !is_done(i))
            .map(|i| events[i].end)
            .min()
            .unwrap_or(u64::MAX);
        for choice in from..2 * n {
            let (i, leave_out) = (choice / 2, choice % 2 == 1);
            let e = events[i];
            if e.start >= horizon {
                break;
            }
            if is_done(i) || (leave_out && e.required) {
                continue;
            }
            let next = match (leave_out, e.kind) {
                (true, _) => Some(state),
                (false, EventKind::Put(v)) => Some(Some(v)),
                (false, EventKind::Delete) => Some(None),
                (false, EventKind::Read(saw)) => (saw == state).then_some(state),
            };
            let Some(next) = next else { continue };
            let mut after = done.clone();
            after[i / 64] |= 1 << (i % 64);
            if seen.insert((after.clone(), next)) {
                // Come back to this node for the next choice.
                stack.push((done.clone(), state, req_done, choice + 1));
                let req = req_done + usize::from(e.required);
                stack.push((after, next, req, 0));
                break;
            }
        }
    }
    Some(false)
}

fn violation(key: &str, what: impl Into<String>, ops: &[Op]) -> Violation {
    Violation {
        key: key.to_string(),
        what: what.into(),
        ops: ops.to_vec(),
    }
}

/// Checks one key's operations.
fn check_key(key: &str, ops: &[Op], quiesced: Option<u64>) -> Result<(), Violation> {
    if let Some(bad) = ops
        .iter()
        .find(|o| o.acknowledged() && matches!(o.seen, Some(Seen::Garbage(_))))
    {
        return Err(violation(
            key,
            format!("read #{} returned wrong bytes: {:?}", bad.id, bad.seen),
            ops,
        ));
    }
    if let Some(lost) = ops.iter().find(|o| o.must_answer && !o.acknowledged()) {
        return Err(violation(
            key,
            format!(
                "unreadable after recovery: read #{} answered {:?}",
                lost.id, lost.outcome
            ),
            ops,
        ));
    }
    let all = events(ops, quiesced);
    match linearizable(&all) {
        Some(true) => return Ok(()),
        None => {
            return Err(violation(
                key,
                "the search gave up: too many concurrent operations on one key",
                ops,
            ))
        }
        Some(false) => {}
    }
    // Find the first acknowledgement after which the history stops being
    // linearizable: the history as it stood at each answer, in order.
    let mut answers: Vec<&Op> = ops.iter().filter(|o| o.acknowledged()).collect();
    answers.sort_by_key(|o| o.end);
    for op in answers {
        let t = op.end.unwrap_or(u64::MAX);
        let prefix: Vec<Op> = ops
            .iter()
            .filter(|o| o.start <= t)
            .cloned()
            .map(|mut o| {
                if o.end.is_some_and(|e| e > t) {
                    o.outcome = Outcome::Unknown("after the cut".into());
                    o.end = None;
                }
                o
            })
            .collect();
        if linearizable(&events(&prefix, None)) == Some(false) {
            return Err(violation(
                key,
                format!(
                    "not linearizable once #{} ({:?}, request {}) was answered",
                    op.id,
                    op.kind,
                    op.request_id.as_deref().unwrap_or("-")
                ),
                ops,
            ));
        }
    }
    Err(violation(key, "not linearizable", ops))
}

/// Checks one listing against the history of every key under its prefix.
fn check_listing(listing: &Listing, by_key: &BTreeMap<String, Vec<Op>>) -> Result<(), Violation> {
    let listed: HashSet<&str> = listing.keys.iter().map(String::as_str).collect();
    let rid = listing.request_id.as_deref().unwrap_or("-");
    for (key, ops) in by_key.range(listing.prefix.clone()..) {
        if !key.starts_with(&listing.prefix) {
            break;
        }
        let writes = |o: &&Op| matches!(o.kind, Kind::Put(_)) && o.may_have_happened();
        let deletes = |o: &&Op| o.kind == Kind::Delete && o.may_have_happened();
        // Whether `other` may have taken effect after `op` and before the
        // listing's end.
        let may_follow = |other: &Op, op: &Op| {
            other.start < listing.end && other.end.is_none_or(|e| e > op.start)
        };
        let must_appear = ops
            .iter()
            .filter(writes)
            .filter(|p| p.acknowledged() && p.end.is_some_and(|e| e < listing.start))
            .any(|p| !ops.iter().filter(deletes).any(|d| may_follow(d, p)));
        let must_not_appear = ops
            .iter()
            .filter(deletes)
            .filter(|d| d.acknowledged() && d.end.is_some_and(|e| e < listing.start))
            .any(|d| !ops.iter().filter(writes).any(|p| may_follow(p, d)));
        let present = listed.contains(key.as_str());
        if must_appear && !present {
            return Err(violation(
                key,
                format!(
                    "missing from the listing of {:?} (request {rid}) taken at {:.3} ms .. {:.3} ms",
                    listing.prefix,
                    listing.start as f64 / 1e6,
                    listing.end as f64 / 1e6
                ),
                ops,
            ));
        }
        if must_not_appear && present {
            return Err(violation(
                key,
                format!(
                    "listed after its delete was acknowledged (listing of {:?}, request {rid}, at {:.3} ms .. {:.3} ms)",
                    listing.prefix,
                    listing.start as f64 / 1e6,
                    listing.end as f64 / 1e6
                ),
                ops,
            ));
        }
    }
    for key in &listing.keys {
        if !by_key.contains_key(key) {
            return Err(violation(
                key,
                format!("listed (request {rid}) but never written"),
                &[],
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::history::{History, Kind, Listing, Outcome, Seen};
    use super::*;

    /// One operation of a test history: kind, start, end (ms), outcome and
    /// what a read saw.
    type Row = (Kind, u64, Option<u64>, Outcome, Option<Seen>);

    /// Builds a history from rows on one key.
    fn history(rows: &[Row]) -> History {
        let h = History::default();
        for (kind, start, end, outcome, seen) in rows {
            let id = h.invoke("k", kind.clone(), "");
            h.set(
                id,
                start * 1_000_000,
                end.map(|e| e * 1_000_000),
                outcome.clone(),
                seen.clone(),
            );
        }
        h
    }

    use Outcome::{Done, Refused, Unknown};
    fn unknown() -> Outcome {
        Unknown("cut".into())
    }

    #[test]
    fn sequential_reads_see_the_last_write() {
        let h = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (Kind::Get, 2, Some(3), Done, Some(Seen::Value(1))),
            (Kind::Put(2), 4, Some(5), Done, None),
            (Kind::Get, 6, Some(7), Done, Some(Seen::Value(2))),
            (Kind::Delete, 8, Some(9), Done, None),
            (Kind::Get, 10, Some(11), Done, Some(Seen::Absent)),
        ]);
        assert!(check(&h).is_ok());
    }

    #[test]
    fn a_stale_read_after_an_acknowledged_overwrite_is_caught() {
        let h = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (Kind::Put(2), 2, Some(3), Done, None),
            (Kind::Get, 4, Some(5), Done, Some(Seen::Value(1))),
        ]);
        let v = check(&h).unwrap_err();
        assert!(v.what.contains("#2"), "{v}");
    }

    #[test]
    fn a_lost_acknowledged_write_is_caught() {
        let h = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (Kind::Get, 2, Some(3), Done, Some(Seen::Absent)),
        ]);
        assert!(check(&h).is_err());
    }

    #[test]
    fn overlapping_operations_may_go_either_way() {
        let h = history(&[
            (Kind::Put(1), 0, Some(10), Done, None),
            (Kind::Get, 1, Some(2), Done, Some(Seen::Value(1))),
            (Kind::Get, 3, Some(4), Done, Some(Seen::Value(1))),
        ]);
        assert!(check(&h).is_ok());
        // Once a read saw the new value, a later read may not see the old.
        let h = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (Kind::Put(2), 2, Some(20), Done, None),
            (Kind::Get, 3, Some(4), Done, Some(Seen::Value(2))),
            (Kind::Get, 5, Some(6), Done, Some(Seen::Value(1))),
        ]);
        assert!(check(&h).is_err());
    }

    #[test]
    fn unknown_writes_may_be_left_out_or_placed_late_and_refused_ones_never_happen() {
        let h = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (Kind::Put(2), 2, None, unknown(), None),
            (Kind::Get, 5, Some(6), Done, Some(Seen::Value(1))),
            (Kind::Get, 7, Some(8), Done, Some(Seen::Value(2))),
        ]);
        assert!(check(&h).is_ok());
        let h = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (
                Kind::Put(2),
                2,
                Some(3),
                Refused("PreconditionFailed".into()),
                None,
            ),
            (Kind::Get, 5, Some(6), Done, Some(Seen::Value(2))),
        ]);
        assert!(check(&h).is_err());
        // An unknown write is never visible before it began.
        let h = history(&[
            (Kind::Get, 0, Some(1), Done, Some(Seen::Value(7))),
            (Kind::Put(7), 2, None, unknown(), None),
        ]);
        assert!(check(&h).is_err());
    }

    #[test]
    fn nothing_unanswered_takes_effect_after_the_run_quiesced() {
        let rows = [
            (Kind::Put(1), 0, Some(1), Done, None),
            (Kind::Delete, 2, None, unknown(), None),
            (Kind::Get, 10, Some(11), Done, Some(Seen::Value(1))),
            (Kind::Get, 12, Some(13), Done, Some(Seen::Absent)),
        ];
        // Without a quiescent point the delete may land between the reads.
        assert!(check(&history(&rows)).is_ok());
        let h = history(&rows);
        h.set_quiesced(5_000_000);
        assert!(check(&h).is_err());
    }

    #[test]
    fn a_final_read_that_fails_is_a_loss() {
        let h = history(&[(Kind::Put(1), 0, Some(1), Done, None)]);
        let id = h.invoke_final("k", "");
        h.complete(id, unknown(), None, None);
        assert!(check(&h).unwrap_err().what.contains("unreadable"));
    }

    #[test]
    fn wrong_bytes_are_a_violation_whatever_the_order() {
        let h = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (
                Kind::Get,
                2,
                Some(3),
                Done,
                Some(Seen::Garbage("zeros".into())),
            ),
        ]);
        assert!(check(&h).unwrap_err().what.contains("wrong bytes"));
    }

    #[test]
    fn listings_show_acknowledged_keys_and_hide_deleted_ones() {
        let h = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (Kind::Delete, 20, Some(21), Done, None),
        ]);
        let listing = |start: u64, end: u64, keys: &[&str]| Listing {
            prefix: String::new(),
            start: start * 1_000_000,
            end: end * 1_000_000,
            keys: keys.iter().map(|k| k.to_string()).collect(),
            request_id: None,
        };
        h.listed(listing(5, 6, &["k"]));
        h.listed(listing(19, 22, &[]));
        h.listed(listing(30, 31, &[]));
        assert!(check(&h).is_ok());
        h.listed(listing(7, 8, &[]));
        assert!(check(&h).unwrap_err().what.contains("missing"));
        let h2 = history(&[
            (Kind::Put(1), 0, Some(1), Done, None),
            (Kind::Delete, 20, Some(21), Done, None),
        ]);
        h2.listed(listing(30, 31, &["k"]));
        assert!(check(&h2).unwrap_err().what.contains("after its delete"));
    }
}
