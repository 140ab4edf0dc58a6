//! background-work: the shape of Granary's background work, a leaf room of
//! its architecture. Every long-running task a store keeps — on-read
//! repair, the release of tier objects, heal and scrub passes, the at-risk
//! finder, garbage collection, the background and writer leases, the
//! lifecycle scanner — is a [`Worker`]: it waits for work, does a step,
//! says what it is doing. One [`Workers`] runner per store starts them,
//! records each one's state and errors for `granary admin status`, and
//! owns their shutdown in two phases: [`Workers::halt`] lets the steps
//! under way end (within each worker's grace, or dropped at their next
//! `.await`) and starts no more; [`Workers::shutdown`] then lets every
//! worker clean up (release a lease) — after the store's commits, which
//! may still need the leases, are done.
//!
//! It owns only scheduling: it must not know disks, sets, stores, S3 or
//! what any worker does.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
pub use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tokio_util::task::TaskTracker;

/// What a worker's last step says about the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerState {
    /// There is more work now: the runner calls [`Worker::work`] again.
    Busy,
    /// Nothing to do: the runner calls [`Worker::wait_for_work`].
    Idle,
    /// Finished for good: the runner stops the worker.
    Done,
}

/// A step's failure, kept for the status and logged.
pub type WorkError = Box<dyn StdError + Send + Sync>;

/// What a worker reports between steps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStatus {
    /// Items waiting, for a worker fed by a queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<u64>,
    /// Counters or progress, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One piece of background work. The runner alternates
/// [`wait_for_work`](Worker::wait_for_work) and [`work`](Worker::work) as
/// their answers say, starting with a wait. At shutdown a wait is dropped
/// at once and a step under way gets [`shutdown_grace`](Worker::shutdown_grace)
/// to end by itself (it sees `stopping` cancelled) before it is dropped at
/// its next `.await` — so every step must be safe to abandon there, as
/// every request future is; then, once the store's commits are done, the
/// runner calls [`stop`](Worker::stop).
#[async_trait::async_trait]
pub trait Worker: Send + 'static {
    /// A short stable name (`repair`, `gc`…), shown by `granary admin status`.
    fn name(&self) -> String;

    /// What the worker is doing, asked between steps.
    fn status(&self) -> WorkerStatus {
        WorkerStatus::default()
    }

    /// How long a step under way at shutdown may go on to end by itself
    /// (an item finished, a page's actions done) before it is dropped.
    fn shutdown_grace(&self) -> Duration {
        Duration::ZERO
    }

    /// Does one step of work; `stopping` is cancelled when shutdown
    /// begins, for a long step to end early at a point of its choosing.
    /// An error is counted and logged, and the worker then waits again.
    async fn work(&mut self, stopping: &CancellationToken) -> Result<WorkerState, WorkError>;

    /// Waits until there is work (or a schedule falls due), and says so
    /// with [`WorkerState::Busy`]; [`WorkerState::Done`] ends the worker.
    async fn wait_for_work(&mut self) -> WorkerState;

    /// Cleans up after the last step (releases what the worker holds).
    async fn stop(&mut self) {}
}

/// A worker's state as the runner last saw it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerInfo {
    /// The worker's name.
    pub name: String,
    /// `busy`, `idle`, `done` or `stopped` (by shutdown).
    pub state: &'static str,
    /// What it reported after its last step.
    pub status: WorkerStatus,
    /// Steps of work finished.
    pub steps: u64,
    /// Steps that failed.
    pub errors: u64,
    /// The last failure, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The runner of one store's workers.
pub struct Workers {
    /// Cancelled when shutdown begins: no new step starts.
    stopping: CancellationToken,
    /// Cancelled once the store's commits are done: workers clean up.
    release: CancellationToken,
    /// Every worker's loop, until it has left it.
    looping: TaskTracker,
    /// Every worker's task, until it has cleaned up.
    tasks: TaskTracker,
    shown: Mutex<Vec<Arc<Mutex<WorkerInfo>>>>,
}

impl Default for Workers {
    fn default() -> Self {
        Workers::new()
    }
}

impl Workers {
    /// A runner with no workers.
    pub fn new() -> Workers {
        Workers {
            stopping: CancellationToken::new(),
            release: CancellationToken::new(),
            looping: TaskTracker::new(),
            tasks: TaskTracker::new(),
            shown: Mutex::new(Vec::new()),
        }
    }

    /// Starts `worker` on the current Tokio runtime. Once shutdown has
    /// begun a worker is only listed, as stopped, and never runs.
    pub fn spawn<W: Worker>(&self, worker: W) {
        self.spawn_as(worker.name(), worker);
    }

    /// [`Workers::spawn`] under `name` instead of the worker's own (one
    /// of several of a kind, such as each pool's repair).
    pub fn spawn_as<W: Worker>(&self, name: String, worker: W) {
        let info = Arc::new(Mutex::new(WorkerInfo {
            name: name.clone(),
            state: "idle",
            status: worker.status(),
            steps: 0,
            errors: 0,
            last_error: None,
        }));
        self.shown.lock().push(info.clone());
        if self.stopping.is_cancelled() {
            info.lock().state = "stopped";
            return;
        }
        let run = Run {
            name,
            stopping: self.stopping.clone(),
            release: self.release.clone(),
            looping: self.looping.token(),
            info,
        };
        self.tasks.spawn(run.run(worker));
    }

    /// Every worker started, in the order they were, as of its last step.
    pub fn status(&self) -> Vec<WorkerInfo> {
        self.shown.lock().iter().map(|i| i.lock().clone()).collect()
    }

    /// Begins shutdown: no step starts any more; waits until every worker
    /// has left its loop (its step ended within its grace, or dropped).
    /// Nothing is released yet: the store's commits under way may still
    /// need the leases.
    pub async fn halt(&self) {
        self.stopping.cancel();
        self.looping.close();
        self.looping.wait().await;
    }

    /// Halts every worker, lets each clean up, and waits for them all.
    pub async fn shutdown(&self) {
        self.halt().await;
        self.release.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

/// Sleeps `wait`, or forever when there is none (a schedule switched off):
/// the timer a scheduled worker waits on beside its other wake-ups.
pub async fn sleep_or_never(wait: Option<std::time::Duration>) {
    match wait {
        Some(w) => tokio::time::sleep(w).await,
        None => std::future::pending().await,
    }
}

/// What one worker's task holds of the runner.
struct Run {
    name: String,
    stopping: CancellationToken,
    release: CancellationToken,
    looping: TaskTrackerToken,
    info: Arc<Mutex<WorkerInfo>>,
}

impl Run {
    /// The worker's loop, then its clean-up once the runner releases it.
    async fn run<W: Worker>(self, mut worker: W) {
        let mut state = WorkerState::Idle;
        let end = loop {
            let next = match state {
                WorkerState::Busy => {
                    let grace = worker.shutdown_grace();
                    let late = async {
                        self.stopping.cancelled().await;
                        tokio::time::sleep(grace).await;
                    };
                    tokio::select! {
                        biased;
                        _ = late => break "stopped",
                        r = worker.work(&self.stopping) => r,
                    }
                }
                _ => tokio::select! {
                    biased;
                    _ = self.stopping.cancelled() => break "stopped",
                    s = worker.wait_for_work() => Ok(s),
                },
            };
            let status = worker.status();
            if let Err(e) = &next {
                tracing::warn!(worker = %self.name, error = %e, "background work failed");
            }
            let mut shown = self.info.lock();
            match next {
                Ok(s) => {
                    if state == WorkerState::Busy {
                        shown.steps += 1;
                    }
                    state = s;
                }
                Err(e) => {
                    shown.steps += 1;
                    shown.errors += 1;
                    shown.last_error = Some(e.to_string());
                    state = WorkerState::Idle;
                }
            }
            shown.status = status;
            shown.state = match state {
                WorkerState::Busy => "busy",
                WorkerState::Idle => "idle",
                WorkerState::Done => break "done",
            };
            drop(shown);
            if self.stopping.is_cancelled() {
                break "stopped";
            }
        };
        // A worker that finished by itself cleans up at once; one halted by
        // shutdown waits until the runner releases it.
        if end == "stopped" {
            self.info.lock().state = end;
            drop(self.looping);
            self.release.cancelled().await;
            worker.stop().await;
        } else {
            worker.stop().await;
            self.info.lock().state = end;
        }
    }
}

#[cfg(test)]
mod tests;
