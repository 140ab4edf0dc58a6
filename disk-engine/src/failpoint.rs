//! Named fault points, for the tests of what a crash, a delay or an error
//! at one step of a write or a collection leaves behind. They exist only
//! in builds with the `failpoints` feature (the test builds:
//! `scripts/test.sh` enables it); in other builds every point is an empty
//! inline function that answers "no fault".
//!
//! A point is configured with an action string of the `fail` crate, from
//! the `FAILPOINTS` environment variable at start (`name=action;...`) or
//! at run time ([`configure`]). Of its actions, `return(WHAT)` selects
//! what happens when the point is reached:
//! - `crash`: the process prints `failpoint NAME: crash` to its error
//!   output and kills itself with SIGKILL (as `kill -9` would);
//! - `sleep:MS`: the step waits MS milliseconds (without holding a
//!   thread), so a test can act while it is in progress;
//! - `error`: the step fails as an I/O error would.
//!
//! Any of them may end in `@TEXT`, which limits it to calls whose label
//! (a disk's directory, where there is one) contains TEXT, or one of
//! several texts separated by `|`. The `fail`
//! crate's counts and chains apply too: `2*off->return(crash)` crashes at
//! the third arrival. Every point counts its arrivals and the times it
//! acted ([`counts`]), so a test can prove a point was reached.

/// What a point asks its caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// Go on.
    Nothing,
    /// Fail the step as an I/O error.
    Error,
}

impl Injected {
    /// Whether the step is to fail.
    pub fn is_error(self) -> bool {
        self == Injected::Error
    }
}

#[cfg(feature = "failpoints")]
mod enabled {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use parking_lot::Mutex;

    use super::Injected;

    /// Arrivals and actions per point.
    static COUNTS: Mutex<BTreeMap<String, (u64, u64)>> = Mutex::new(BTreeMap::new());

    enum Action {
        Crash,
        Sleep(Duration),
        Error,
    }

    fn decide(name: &str, label: &str) -> Option<Action> {
        let arg = fail::eval(name, |arg| arg.unwrap_or_default())?;
        let (what, only) = match arg.split_once('@') {
            Some((w, o)) => (w.to_string(), Some(o.to_string())),
            None => (arg, None),
        };
        if only.is_some_and(|o| !o.split('|').any(|one| label.contains(one))) {
            return None;
        }
        let action = match what.as_str() {
            "crash" => Action::Crash,
            "error" => Action::Error,
            w => match w.strip_prefix("sleep:").and_then(|ms| ms.parse().ok()) {
                Some(ms) => Action::Sleep(Duration::from_millis(ms)),
                None => {
                    eprintln!("failpoint {name}: unknown action {w:?} ignored");
                    return None;
                }
            },
        };
        Some(action)
    }

    fn count(name: &str, acted: bool) {
        let mut counts = COUNTS.lock();
        let c = counts.entry(name.to_string()).or_default();
        c.0 += 1;
        c.1 += u64::from(acted);
    }

    fn crash(name: &str) -> ! {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "failpoint {name}: crash");
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort()
    }

    /// What a caller does after arriving at a point (a crash never
    /// returns).
    pub enum Then {
        Go(Injected),
        Sleep(Duration),
    }

    pub fn arrive(name: &'static str, label: &str) -> Then {
        let action = decide(name, label);
        count(name, action.is_some());
        match action {
            None => Then::Go(Injected::Nothing),
            Some(Action::Crash) => crash(name),
            Some(Action::Error) => Then::Go(Injected::Error),
            Some(Action::Sleep(d)) => Then::Sleep(d),
        }
    }

    pub fn configure(name: &str, actions: &str) -> Result<(), String> {
        if actions.is_empty() || actions == "off" {
            fail::remove(name);
            return Ok(());
        }
        fail::cfg(name, actions)
    }

    pub fn counts() -> BTreeMap<String, (u64, u64)> {
        COUNTS.lock().clone()
    }
}

/// Reaches point `name` (for the disk or thing labelled `label`; "" where
/// there is none): crashes, waits or asks for an error as configured.
#[cfg(feature = "failpoints")]
pub async fn hit(name: &'static str, label: &str) -> Injected {
    match enabled::arrive(name, label) {
        enabled::Then::Go(i) => i,
        enabled::Then::Sleep(d) => {
            tokio::time::sleep(d).await;
            Injected::Nothing
        }
    }
}

/// [`hit`] on a thread that may block (a disk's committer).
#[cfg(feature = "failpoints")]
pub fn hit_blocking(name: &'static str, label: &str) -> Injected {
    match enabled::arrive(name, label) {
        enabled::Then::Go(i) => i,
        enabled::Then::Sleep(d) => {
            std::thread::sleep(d);
            Injected::Nothing
        }
    }
}

/// Sets the actions of point `name` (empty or `off` clears them).
#[cfg(feature = "failpoints")]
pub fn configure(name: &str, actions: &str) -> Result<(), String> {
    enabled::configure(name, actions)
}

/// Per point reached so far: (arrivals, times it acted).
#[cfg(feature = "failpoints")]
pub fn counts() -> std::collections::BTreeMap<String, (u64, u64)> {
    enabled::counts()
}

/// Whether this build has fault points.
pub const ENABLED: bool = cfg!(feature = "failpoints");

/// No fault points in this build: nothing happens.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub async fn hit(_name: &'static str, _label: &str) -> Injected {
    Injected::Nothing
}

/// No fault points in this build: nothing happens.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn hit_blocking(_name: &'static str, _label: &str) -> Injected {
    Injected::Nothing
}

/// No fault points in this build.
#[cfg(not(feature = "failpoints"))]
pub fn configure(_name: &str, _actions: &str) -> Result<(), String> {
    Err("this build has no fault points (build with the `failpoints` feature)".into())
}

/// No fault points in this build: none reached.
#[cfg(not(feature = "failpoints"))]
pub fn counts() -> std::collections::BTreeMap<String, (u64, u64)> {
    Default::default()
}
