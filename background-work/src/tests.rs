use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use super::*;

/// Adds what it receives; fails on 0; finishes on u32::MAX; hangs on 7;
/// takes 200 ms over 3.
struct Adder {
    rx: mpsc::UnboundedReceiver<u32>,
    grace: Duration,
    next: Option<u32>,
    sum: Arc<Mutex<u64>>,
    stopped: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl Worker for Adder {
    fn name(&self) -> String {
        "adder".into()
    }

    fn shutdown_grace(&self) -> Duration {
        self.grace
    }

    fn status(&self) -> WorkerStatus {
        WorkerStatus {
            queue: Some(self.rx.len() as u64),
            detail: Some(format!("sum {}", self.sum.lock())),
        }
    }

    async fn work(&mut self, _: &CancellationToken) -> Result<WorkerState, WorkError> {
        match self.next.take() {
            Some(0) => return Err("zero".into()),
            Some(7) => std::future::pending::<()>().await,
            Some(3) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                *self.sum.lock() += 3;
            }
            Some(u32::MAX) => return Ok(WorkerState::Done),
            Some(n) => *self.sum.lock() += n as u64,
            None => {}
        }
        self.next = self.rx.try_recv().ok();
        Ok(if self.next.is_some() {
            WorkerState::Busy
        } else {
            WorkerState::Idle
        })
    }

    async fn wait_for_work(&mut self) -> WorkerState {
        match self.rx.recv().await {
            Some(n) => {
                self.next = Some(n);
                WorkerState::Busy
            }
            None => WorkerState::Done,
        }
    }

    async fn stop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}

struct Rig {
    workers: Workers,
    tx: mpsc::UnboundedSender<u32>,
    sum: Arc<Mutex<u64>>,
    stopped: Arc<AtomicBool>,
}

fn rig() -> Rig {
    rig_with_grace(Duration::ZERO)
}

fn rig_with_grace(grace: Duration) -> Rig {
    let (tx, rx) = mpsc::unbounded_channel();
    let sum = Arc::new(Mutex::new(0));
    let stopped = Arc::new(AtomicBool::new(false));
    let workers = Workers::new();
    workers.spawn(Adder {
        rx,
        grace,
        next: None,
        sum: sum.clone(),
        stopped: stopped.clone(),
    });
    Rig {
        workers,
        tx,
        sum,
        stopped,
    }
}

/// Waits until the only worker's info satisfies `done`.
async fn until(workers: &Workers, done: impl Fn(&WorkerInfo) -> bool) -> WorkerInfo {
    for _ in 0..500 {
        let info = workers.status().remove(0);
        if done(&info) {
            return info;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("worker never got there: {:?}", workers.status());
}

#[tokio::test]
async fn a_worker_does_its_steps_and_reports_between_them() {
    let r = rig();
    for n in [1, 2, 3] {
        r.tx.send(n).unwrap();
    }
    let info = until(&r.workers, |i| i.steps == 3 && i.state == "idle").await;
    assert_eq!(*r.sum.lock(), 6);
    assert_eq!(info.name, "adder");
    assert_eq!(info.status.detail.as_deref(), Some("sum 6"));
    assert_eq!(info.status.queue, Some(0));
    assert_eq!(info.errors, 0);
    r.workers.shutdown().await;
    assert!(r.stopped.load(Ordering::SeqCst), "stop() runs at shutdown");
    assert_eq!(r.workers.status()[0].state, "stopped");
}

#[tokio::test]
async fn a_failed_step_is_counted_and_the_worker_goes_on() {
    let r = rig();
    r.tx.send(0).unwrap();
    until(&r.workers, |i| i.errors == 1).await;
    r.tx.send(5).unwrap();
    let info = until(&r.workers, |i| i.steps == 2 && i.state == "idle").await;
    assert_eq!(*r.sum.lock(), 5);
    assert_eq!(info.last_error.as_deref(), Some("zero"));
    r.workers.shutdown().await;
}

#[tokio::test]
async fn a_finished_worker_is_stopped_and_shown_done() {
    let r = rig();
    r.tx.send(u32::MAX).unwrap();
    until(&r.workers, |i| i.state == "done").await;
    assert!(r.stopped.load(Ordering::SeqCst));
    // Shutdown with nothing left running returns at once.
    r.workers.shutdown().await;
    assert_eq!(r.workers.status()[0].state, "done");
}

#[tokio::test]
async fn shutdown_abandons_a_step_at_its_await() {
    let r = rig();
    r.tx.send(7).unwrap();
    until(&r.workers, |i| i.state == "busy").await;
    tokio::time::timeout(Duration::from_secs(5), r.workers.shutdown())
        .await
        .expect("shutdown waits for no hanging step");
    assert!(r.stopped.load(Ordering::SeqCst));
    assert_eq!(r.workers.status()[0].state, "stopped");
}

#[tokio::test]
async fn a_step_under_way_ends_within_its_grace_at_shutdown() {
    let r = rig_with_grace(Duration::from_secs(5));
    r.tx.send(3).unwrap();
    until(&r.workers, |i| i.state == "busy").await;
    r.workers.shutdown().await;
    assert_eq!(*r.sum.lock(), 3, "the step finished");
    let info = r.workers.status().remove(0);
    assert_eq!((info.steps, info.state), (1, "stopped"));
}

#[tokio::test]
async fn a_halted_worker_cleans_up_only_when_shut_down() {
    let r = rig();
    r.tx.send(1).unwrap();
    until(&r.workers, |i| i.steps == 1).await;
    r.workers.halt().await;
    assert_eq!(r.workers.status()[0].state, "stopped");
    // Halted: no step starts, and nothing is released yet.
    r.tx.send(2).unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(*r.sum.lock(), 1);
    assert!(!r.stopped.load(Ordering::SeqCst));
    r.workers.shutdown().await;
    assert!(r.stopped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_worker_started_after_shutdown_never_runs() {
    let r = rig();
    r.workers.shutdown().await;
    let (tx, rx) = mpsc::unbounded_channel();
    tx.send(1).unwrap();
    let sum = Arc::new(Mutex::new(0));
    let stopped = Arc::new(AtomicBool::new(false));
    r.workers.spawn(Adder {
        rx,
        grace: Duration::ZERO,
        next: None,
        sum: sum.clone(),
        stopped: stopped.clone(),
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(*sum.lock(), 0);
    assert!(
        !stopped.load(Ordering::SeqCst),
        "it holds nothing to release"
    );
    assert_eq!(r.workers.status()[1].state, "stopped");
}

#[tokio::test]
async fn a_worker_spawned_under_a_name_is_shown_and_run_under_it() {
    let (tx, rx) = mpsc::unbounded_channel();
    let sum = Arc::new(Mutex::new(0));
    let workers = Workers::new();
    workers.spawn_as(
        "adder (second)".into(),
        Adder {
            rx,
            grace: Duration::ZERO,
            next: None,
            sum: sum.clone(),
            stopped: Arc::default(),
        },
    );
    tx.send(4).unwrap();
    let info = until(&workers, |i| i.steps == 1).await;
    assert_eq!(info.name, "adder (second)");
    assert_eq!(*sum.lock(), 4);
    workers.shutdown().await;
}
