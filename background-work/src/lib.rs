//! background-work: the shape of Granary's background work, a leaf room of
//! its architecture. Every long-running task a store keeps — on-read
//! repair, the release of tier objects, heal and scrub passes, the at-risk
//! finder, garbage collection, the background and writer leases, the
//! lifecycle scanner — is a [`Worker`]: it waits for work, does a step,
//! says what it is doing. One [`Workers`] runner per store starts them,
//! records each one's state and errors for `granary admin status`, and
//! owns their shutdown: it stops every worker at its next `.await` and
//! then lets it clean up (release a lease) before returning.
//!
//! It owns only scheduling: it must not know disks, sets, stores, S3 or
//! what any worker does.

use std::error::Error as StdError;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;
use tokio_util::sync::CancellationToken;
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
/// their answers say, starting with a wait; at shutdown it drops whichever
/// is running at its next `.await` (so each must be safe to abandon
/// there, as every request future is) and then calls
/// [`stop`](Worker::stop).
#[async_trait::async_trait]
pub trait Worker: Send + 'static {
    /// A short stable name (`repair`, `gc`…), shown by `granary admin status`.
    fn name(&self) -> String;

    /// What the worker is doing, asked between steps.
    fn status(&self) -> WorkerStatus {
        WorkerStatus::default()
    }

    /// Does one step of work. An error is counted and logged, and the
    /// worker then waits for work again.
    async fn work(&mut self) -> Result<WorkerState, WorkError>;

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
    shutdown: CancellationToken,
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
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
            shown: Mutex::new(Vec::new()),
        }
    }

    /// Starts `worker` on the current Tokio runtime. After
    /// [`Workers::shutdown`] a worker is stopped before its first step.
    pub fn spawn<W: Worker>(&self, worker: W) {
        let info = Arc::new(Mutex::new(WorkerInfo {
            name: worker.name(),
            state: "idle",
            status: worker.status(),
            steps: 0,
            errors: 0,
            last_error: None,
        }));
        self.shown.lock().push(info.clone());
        self.tasks.spawn(run(worker, self.shutdown.clone(), info));
    }

    /// Every worker started, in the order they were.
    pub fn status(&self) -> Vec<WorkerInfo> {
        self.shown.lock().iter().map(|i| i.lock().clone()).collect()
    }

    /// Stops every worker (at its next `.await`), lets each clean up, and
    /// waits for them all.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
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

/// One worker's loop.
async fn run<W: Worker>(mut worker: W, shutdown: CancellationToken, info: Arc<Mutex<WorkerInfo>>) {
    let mut state = WorkerState::Idle;
    let end = loop {
        let step = step(&mut worker, state);
        let next = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break "stopped",
            r = step => r,
        };
        let mut shown = info.lock();
        match next {
            Ok(s) => {
                if state == WorkerState::Busy {
                    shown.steps += 1;
                }
                state = s;
            }
            Err(e) => {
                tracing::warn!(worker = %shown.name, error = %e, "background work failed");
                shown.steps += 1;
                shown.errors += 1;
                shown.last_error = Some(e.to_string());
                state = WorkerState::Idle;
            }
        }
        shown.status = worker.status();
        shown.state = match state {
            WorkerState::Busy => "busy",
            WorkerState::Idle => "idle",
            WorkerState::Done => break "done",
        };
    };
    worker.stop().await;
    info.lock().state = end;
}

/// Runs the call `state` asks for.
async fn step<W: Worker>(worker: &mut W, state: WorkerState) -> Result<WorkerState, WorkError> {
    match state {
        WorkerState::Busy => worker.work().await,
        _ => Ok(worker.wait_for_work().await),
    }
}

#[cfg(test)]
mod tests;
