//! Crash points for tests: a debug build aborts the process at the point named by
//! `MODELPIN_FAULT`, so a test can show that a crash anywhere in an audit's commit leaves the
//! store with all of that audit or none of it. Release builds compile this to nothing.

/// Where an audit's commit can be cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// The audit has run; nothing of it is written yet.
    BeforeCommit,
    /// The transaction is applied in memory, not yet flushed to disk.
    AfterCommitBeforeFlush,
    /// Everything is on disk; nothing is sent yet.
    AfterFlush,
    /// `store copy` into a directory: the copy is written and verified, not yet renamed into
    /// place.
    CopyBeforeRename,
}

impl Point {
    #[must_use]
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    pub fn as_str(self) -> &'static str {
        match self {
            Point::BeforeCommit => "before-commit",
            Point::AfterCommitBeforeFlush => "after-commit-before-flush",
            Point::AfterFlush => "after-flush",
            Point::CopyBeforeRename => "copy-before-rename",
        }
    }
}

/// Aborts (as `kill -9` would end it, without unwinding or flushing) when this point is named.
pub fn at(point: Point) {
    #[cfg(debug_assertions)]
    if std::env::var("MODELPIN_FAULT").is_ok_and(|v| v == point.as_str()) {
        eprintln!("fault injected: aborting at {}", point.as_str());
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = point;
}

/// Freezes the process (SIGSTOP on itself, as an operator's `kill -STOP` would) inside a
/// PostgreSQL commit's transaction, holding its locks, when `MODELPIN_FAULT` is
/// `stop-inside-commit:N` and this is the process's `N`th such commit. Debug builds only: a test
/// shows a frozen leader blocks no failover.
pub fn stop_inside_commit() {
    #[cfg(debug_assertions)]
    {
        static COMMITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let Some(nth) = std::env::var("MODELPIN_FAULT")
            .ok()
            .and_then(|v| v.strip_prefix("stop-inside-commit:")?.parse::<u64>().ok())
        else {
            return;
        };
        if COMMITS.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1 == nth {
            eprintln!("fault injected: stopping inside commit {nth}");
            let _ = std::process::Command::new("kill")
                .args(["-STOP", &std::process::id().to_string()])
                .status();
        }
    }
}
