//! Waiting on state, never on time: a condition is polled every 50 ms until it holds or a
//! generous deadline passes, and a timeout says what was awaited.

use std::time::{Duration, Instant};

/// Long enough for a loaded two-core machine; a passing test never waits it out.
pub const DEADLINE: Duration = Duration::from_secs(60);

const EVERY: Duration = Duration::from_millis(50);

/// Polls `state` until it yields a value; `None` once `deadline` has passed.
pub fn poll<T>(deadline: Duration, mut state: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = state() {
            return Some(value);
        }
        if started.elapsed() >= deadline {
            return None;
        }
        std::thread::sleep(EVERY);
    }
}

/// Polls `state` until it yields a value, or fails the test naming `what` it waited for.
#[track_caller]
pub fn wait_until<T>(deadline: Duration, what: &str, state: impl FnMut() -> Option<T>) -> T {
    poll(deadline, state)
        .unwrap_or_else(|| panic!("timed out after {deadline:?} waiting for {what}"))
}

/// Polls `ready` until it is true; false once `deadline` has passed (the caller says what failed).
pub fn eventually(deadline: Duration, mut ready: impl FnMut() -> bool) -> bool {
    poll(deadline, || ready().then_some(())).is_some()
}
