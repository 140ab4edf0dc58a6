//! The order in which a set's disks read units: at most
//! [`UNIT_READS_IN_FLIGHT`] unit reads at once, and the next slot goes to
//! the read of the request that arrived first.
//!
//! A model loader opens dozens of ranged GETs at once. Were every unit
//! read started as its request asked, the disks would share their
//! bandwidth between all the requests, and each would finish only when
//! nearly all of them do (the loader's first tensor arrives late, and its
//! pipeline stalls waiting for the whole wave). Reading for the oldest
//! request first finishes requests in the order they came, at the same
//! total rate: the first ones are answered at once and the client asks for
//! more while the rest are read. Reads ahead of a stream take their turn
//! as requests made when the read-ahead starts.
//!
//! Cancel-safe: a waiter that goes away leaves its turn to the next one,
//! and a slot handed to a waiter that went away is given on.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// Unit reads a set runs at once: enough to keep its disks' queues full
/// (at 2+2, 16 reads of 2 MiB), few enough that the oldest request's next
/// unit does not wait long behind reads for later ones.
pub const UNIT_READS_IN_FLIGHT: usize = 8;

/// Waiting unit reads and free slots.
pub(crate) struct ReadQueue {
    state: Mutex<State>,
}

struct State {
    free: usize,
    waiting: BinaryHeap<Waiter>,
    /// Ties between requests that arrived at the same instant go first
    /// come, first served.
    next_seq: u64,
}

struct Waiter {
    since: Reverse<(Instant, u64)>,
    give: oneshot::Sender<Slot>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        self.since == other.since
    }
}

impl Eq for Waiter {}

impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.since.cmp(&other.since)
    }
}

/// The right to run one unit read; the next waiter gets it when dropped.
pub(crate) struct Slot {
    queue: Arc<ReadQueue>,
    /// False once handed on (a waiter that went away gave it back).
    held: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.held {
            self.queue.release();
        }
    }
}

impl ReadQueue {
    /// A queue of `slots` reads at once.
    pub fn new(slots: usize) -> Arc<ReadQueue> {
        Arc::new(ReadQueue {
            state: Mutex::new(State {
                free: slots.max(1),
                waiting: BinaryHeap::new(),
                next_seq: 0,
            }),
        })
    }

    /// Waits for a slot for a read of a request that arrived at `since`:
    /// free slots go to the earliest such request waiting.
    pub async fn slot(self: &Arc<Self>, since: Instant) -> Slot {
        let rx = {
            let mut st = self.state.lock();
            if st.free > 0 && st.waiting.is_empty() {
                st.free -= 1;
                return Slot {
                    queue: self.clone(),
                    held: true,
                };
            }
            let (give, rx) = oneshot::channel();
            let seq = st.next_seq;
            st.next_seq += 1;
            st.waiting.push(Waiter {
                since: Reverse((since, seq)),
                give,
            });
            // A free slot (no one waited before) goes to the earliest.
            if st.free > 0 {
                st.free -= 1;
                drop(st);
                self.release();
            }
            rx
        };
        // The sender is dropped only after handing on a slot, never while
        // this waits (the queue lives as long as its set).
        rx.await.expect("a waiter is given a slot")
    }

    /// Hands a freed slot to the earliest waiter still waiting, or frees it.
    fn release(self: &Arc<Self>) {
        let mut st = self.state.lock();
        while let Some(w) = st.waiting.pop() {
            let slot = Slot {
                queue: self.clone(),
                held: true,
            };
            match w.give.send(slot) {
                Ok(()) => return,
                // That waiter went away: the next one gets it.
                Err(mut slot) => slot.held = false,
            }
        }
        st.free += 1;
    }

    /// Slots free now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.state.lock().free
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_earliest_request_gets_the_next_slot() {
        let q = ReadQueue::new(1);
        let t0 = Instant::now();
        let held = q.slot(t0).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        // Waiters arrive in the order 3, 1, 2 but asked for requests made at
        // t0+1, t0+2, t0+3 in the order 1, 2, 3.
        let tasks: Vec<_> = [3u64, 1, 2]
            .into_iter()
            .map(|n| {
                let (q, order) = (q.clone(), order.clone());
                let at = t0 + Duration::from_millis(n);
                tokio::spawn(async move {
                    let s = q.slot(at).await;
                    order.lock().push(n);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    drop(s);
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock(), vec![1, 2, 3]);
        assert_eq!(q.free(), 1);
    }

    #[tokio::test]
    async fn a_waiter_that_goes_away_leaves_no_slot_behind() {
        let q = ReadQueue::new(2);
        let t0 = Instant::now();
        let a = q.slot(t0).await;
        let b = q.slot(t0).await;
        // Two waiters give up while waiting; a third still waits.
        for _ in 0..2 {
            let q2 = q.clone();
            let w = tokio::spawn(async move { q2.slot(t0).await });
            tokio::time::sleep(Duration::from_millis(5)).await;
            w.abort();
            let _ = w.await;
        }
        let q3 = q.clone();
        let third = tokio::spawn(async move { q3.slot(Instant::now()).await });
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(a);
        let c = third.await.unwrap();
        drop((b, c));
        assert_eq!(q.free(), 2);
    }
}
