//! Reads during change: a GET streams a version slowly while the version
//! is overwritten or deleted and garbage collection runs. The GET ends
//! with exactly the bytes of a write it may have seen, or with an error —
//! never with wrong bytes.

use std::time::Duration;

use rand::Rng;

use super::control;
use super::history::{value_of, History, Kind, Outcome, Seen};
use super::recorder::{outcome_of, Recorder};
use super::workload::Workload;
use super::{assert_linearizable, seed, trials};
use crate::harness::admin;

/// Size of the objects read while they change: several read units, so
/// the stream is still going when the change lands.
const LEN: usize = 24 << 20;

/// Reads `key` slowly (a pause every chunk), recording the read.
async fn slow_get(r: Recorder, key: String) -> Option<Seen> {
    let op = r.h.invoke(&r.name(&key), Kind::Get, "slow");
    let out = match r.c.get_object().bucket(&r.bucket).key(&key).send().await {
        Ok(o) => o,
        Err(e) => {
            let (outcome, _) = outcome_of(&e);
            let seen = match &outcome {
                Outcome::Refused(c) if c == "NoSuchKey" => Some(Seen::Absent),
                _ => None,
            };
            let outcome = if seen.is_some() {
                Outcome::Done
            } else {
                outcome
            };
            r.h.complete(op, outcome, seen.clone(), None);
            return seen;
        }
    };
    let mut body = out.body;
    let mut data = Vec::with_capacity(LEN + 64);
    loop {
        match body.next().await {
            Some(Ok(chunk)) => {
                data.extend_from_slice(&chunk);
                tokio::time::sleep(Duration::from_millis(4)).await;
            }
            Some(Err(e)) => {
                r.h.complete(op, Outcome::Unknown(format!("body: {e}")), None, None);
                return None;
            }
            None => break,
        }
    }
    let seen = value_of(&data);
    r.h.complete(op, Outcome::Done, Some(seen.clone()), None);
    Some(seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_during_overwrites_and_deletes_end_whole_or_fail() {
    let seed = seed("reads during change");
    let s = control::server(4, &["--gc-hours", "0"]);
    let h = History::default();
    let mut w = Workload::start(&s.endpoint, &h, seed).await;
    let (mut whole, mut cut) = (0, 0);
    let mut keys = Vec::new();
    for trial in 0..trials() {
        let r = w.recorder();
        let key = format!("k{trial}");
        let v = w.value();
        assert_eq!(
            r.put(&key, v, LEN, "read while it changes").await.outcome,
            Outcome::Done
        );
        let reading = tokio::spawn(slow_get(r.clone(), key.clone()));
        tokio::time::sleep(Duration::from_millis(w.rng.gen_range(10..40))).await;
        if w.rng.gen_bool(0.5) {
            let v = w.value();
            r.put(&key, v, 10_000, "overwrite during a read").await;
        } else {
            r.delete(&key, "delete during a read").await;
        }
        admin(&s, &["gc"]).unwrap();
        match reading.await.unwrap() {
            Some(Seen::Garbage(what)) => panic!("{key}: a read ended with wrong bytes: {what}"),
            Some(_) => whole += 1,
            None => cut += 1,
        }
        keys.push((r, key));
    }
    h.quiesce();
    for (r, key) in &keys {
        let _ = r.must_read(key, "after the changes").await;
    }
    let checked = assert_linearizable(&h, "reads during change");
    eprintln!(
        "reads during change: {} trials, {whole} reads ended whole, {cut} with an error, {} operations, 0 violations",
        trials(),
        checked.ops
    );
}
