//! The store's wall clock: nanoseconds since the Unix epoch, as every
//! modification time, lifecycle age and upload time is read.
//!
//! For tests of clock skew and clock steps it can be shifted: by
//! `GRANARY_FAULT_CLOCK_SKEW_MS` milliseconds from the start of the
//! process, and (in builds with fault points) at run time with
//! [`set_skew_ms`]. A shift moves this clock only, as a stepped system
//! clock would; request signatures are still checked against the
//! system's.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The current shift in ns; initialised from the environment on first use.
fn skew() -> &'static AtomicI64 {
    static SKEW: OnceLock<AtomicI64> = OnceLock::new();
    SKEW.get_or_init(|| {
        let ms = std::env::var("GRANARY_FAULT_CLOCK_SKEW_MS")
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        AtomicI64::new(ms.saturating_mul(1_000_000))
    })
}

/// Now, in nanoseconds since the epoch (shifted as set for tests).
pub fn now_ns() -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    now.saturating_add_signed(skew().load(Ordering::Relaxed))
}

/// The shift in milliseconds.
pub fn skew_ms() -> i64 {
    skew().load(Ordering::Relaxed) / 1_000_000
}

/// Steps the clock: from now on it reads `ms` milliseconds off the
/// system's (a negative shift is a step back). Only builds with fault
/// points have it.
#[cfg(feature = "failpoints")]
pub fn set_skew_ms(ms: i64) {
    skew().store(ms.saturating_mul(1_000_000), Ordering::Relaxed);
}
