//! Progress on stderr for `lock` and `check`. On a terminal: a bar with the pin being called and
//! an ETA, redrawn in place. Elsewhere (a CI log): a plain line every ten seconds, so a slow
//! provider never looks like a hung job. Nothing with `-q`, and no colour.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::audit::tally::{Snapshot, Tally};
use crate::cmd::Output;
use crate::transport::human_duration;

/// How often a log line is written off a terminal.
const LOG_EVERY: Duration = Duration::from_secs(10);

pub struct Progress {
    tally: Arc<Tally>,
    drawer: Option<(JoinHandle<()>, bool)>,
    planned: Planned,
}

/// What the plan holds, for the totals shown.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    pub calls: u64,
    pub pins: u64,
}

impl Progress {
    /// Draws `tally`, the one the audit advances, against what was planned.
    #[must_use]
    pub fn start(
        out: Output,
        label: &'static str,
        planned: Planned,
        tally: Arc<Tally>,
    ) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let drawer = (!out.quiet && planned.calls > 0).then(|| {
            let tally = tally.clone();
            let started = Instant::now();
            let task = tokio::spawn(async move {
                let every = if terminal {
                    Duration::from_millis(100)
                } else {
                    LOG_EVERY
                };
                loop {
                    tokio::time::sleep(every).await;
                    let line = describe(label, &tally.snapshot(), planned, started.elapsed());
                    let mut err = std::io::stderr().lock();
                    let _ = if terminal {
                        write!(err, "\r\x1b[2K{line}")
                    } else {
                        writeln!(err, "{line}")
                    };
                    let _ = err.flush();
                }
            });
            (task, terminal)
        });
        Progress {
            tally,
            drawer,
            planned,
        }
    }

    /// What the plan holds.
    #[must_use]
    pub fn planned(&self) -> Planned {
        self.planned
    }

    /// The tally the audit advances.
    #[must_use]
    pub fn tally(&self) -> Arc<Tally> {
        self.tally.clone()
    }

    /// Stops drawing and clears the bar.
    pub fn finish(self) {
        if let Some((drawer, terminal)) = self.drawer {
            drawer.abort();
            if terminal {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K");
                let _ = err.flush();
            }
        }
    }
}

/// `check [######........] 120/600 calls · support-bot · 12s left · slowest: openai 2.3s/call`
fn describe(label: &str, now: &Snapshot, planned: Planned, elapsed: Duration) -> String {
    const WIDTH: u64 = 20;
    let done = now.calls_done.min(planned.calls);
    let filled = (done * WIDTH).checked_div(planned.calls).unwrap_or(0);
    let bar: String = (0..WIDTH)
        .map(|i| if i < filled { '#' } else { '.' })
        .collect();
    let mut parts = vec![format!("{label} [{bar}] {done}/{} calls", planned.calls)];
    match now.running.as_slice() {
        [] => {}
        [one] => parts.push(shortened(one)),
        [one, rest @ ..] => parts.push(format!("{} +{}", shortened(one), rest.len())),
    }
    let waiting = planned
        .pins
        .saturating_sub(now.pins_finished + now.running.len() as u64);
    if waiting > 0 {
        parts.push(format!(
            "{waiting} pin{} waiting",
            if waiting == 1 { "" } else { "s" }
        ));
    }
    if done > 0 && done < planned.calls {
        let left = elapsed.mul_f64((planned.calls - done) as f64 / done as f64);
        parts.push(format!("about {} left", human_duration(round_secs(left))));
    }
    if let Some((provider, mean)) = &now.slowest {
        parts.push(format!(
            "slowest: {} {}/call",
            shortened(provider),
            human_duration(*mean)
        ));
    }
    parts.join(" · ")
}

fn round_secs(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs().max(1))
}

/// Names as the config has them, cut so the line stays on one row.
fn shortened(name: &str) -> String {
    const MAX: usize = 32;
    let clean: String = name.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= MAX {
        clean
    } else {
        clean.chars().take(MAX - 1).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_the_pin_the_wait_and_the_slowest_provider() {
        let now = Snapshot {
            calls_done: 150,
            pins_finished: 2,
            running: vec!["support-bot".into(), "router".into()],
            slowest: Some(("openai".into(), Duration::from_millis(2300))),
        };
        let planned = Planned {
            calls: 600,
            pins: 10,
        };
        let line = describe("check", &now, planned, Duration::from_secs(30));
        assert_eq!(
            line,
            "check [#####...............] 150/600 calls · support-bot +1 · 6 pins waiting · about 90s left · slowest: openai 2.3s/call"
        );
    }

    #[test]
    fn nothing_done_yet_has_no_eta_and_names_are_cut() {
        let now = Snapshot {
            calls_done: 0,
            pins_finished: 0,
            running: vec!["x".repeat(100)],
            slowest: None,
        };
        let planned = Planned { calls: 1, pins: 1 };
        let line = describe("lock", &now, planned, Duration::from_secs(5));
        assert!(!line.contains("left"), "{line}");
        assert!(line.contains(&format!("{}…", "x".repeat(31))), "{line}");
    }
}
