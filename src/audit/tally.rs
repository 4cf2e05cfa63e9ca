//! How far an audit has got, for whoever shows progress: calls done, which pins are running,
//! how long each provider takes. The audit only counts; the commands draw.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct Tally {
    done: AtomicU64,
    pins_finished: AtomicU64,
    running: Mutex<BTreeSet<String>>,
    /// Per provider: answered or failed calls and their summed latency.
    latency: Mutex<BTreeMap<String, (u64, Duration)>>,
}

/// One look at a running audit.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub calls_done: u64,
    pub pins_finished: u64,
    /// Pins with calls in flight, in id order.
    pub running: Vec<String>,
    /// The provider with the longest mean call so far, and that mean.
    pub slowest: Option<(String, Duration)>,
}

impl Tally {
    pub(crate) fn calls(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn pin_started(&self, pin: &str) {
        self.running
            .lock()
            .expect("tally lock")
            .insert(pin.to_owned());
    }

    pub(crate) fn pin_finished(&self, pin: &str) {
        self.running.lock().expect("tally lock").remove(pin);
        self.pins_finished.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn latency(&self, provider: &str, took: Duration) {
        let mut all = self.latency.lock().expect("tally lock");
        let entry = all.entry(provider.to_owned()).or_default();
        entry.0 += 1;
        entry.1 += took;
    }

    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        let latency = self.latency.lock().expect("tally lock");
        let slowest = latency
            .iter()
            .filter(|(_, (n, _))| *n > 0)
            .map(|(p, (n, total))| (p.clone(), *total / u32::try_from(*n).unwrap_or(u32::MAX)))
            .max_by_key(|(_, mean)| *mean);
        Snapshot {
            calls_done: self.done.load(Ordering::Relaxed),
            pins_finished: self.pins_finished.load(Ordering::Relaxed),
            running: self
                .running
                .lock()
                .expect("tally lock")
                .iter()
                .cloned()
                .collect(),
            slowest,
        }
    }
}
