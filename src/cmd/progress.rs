//! A progress bar on stderr for `lock` and `check`: only on a terminal, never with `-q`, and
//! without colour (so `NO_COLOR` has nothing to turn off).

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::cmd::Output;

pub struct Progress {
    done: Arc<AtomicU64>,
    drawer: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts drawing when stderr is a terminal and output is not quiet.
    #[must_use]
    pub fn start(out: Output, label: &'static str, total: u64) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let drawer = (!out.quiet && std::io::stderr().is_terminal() && total > 0).then(|| {
            let done = done.clone();
            tokio::spawn(async move {
                loop {
                    draw(label, done.load(Ordering::Relaxed), total);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        });
        Progress { done, drawer }
    }

    /// The counter the audit advances.
    #[must_use]
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.done.clone()
    }

    /// Stops drawing and clears the line.
    pub fn finish(self) {
        if let Some(drawer) = self.drawer {
            drawer.abort();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

fn draw(label: &str, done: u64, total: u64) {
    const WIDTH: u64 = 30;
    let filled = (done.min(total) * WIDTH).checked_div(total).unwrap_or(0);
    let bar: String = (0..WIDTH)
        .map(|i| if i < filled { '#' } else { '.' })
        .collect();
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r{label} [{bar}] {done}/{total} calls");
    let _ = err.flush();
}
