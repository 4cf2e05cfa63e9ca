//! What the daemon's tasks share: the snapshot every audit runs with (swapped whole on reload),
//! the store and metrics, which pins are running and when each was last audited, and the health
//! `/healthz` reports from them.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::audit::lifecycle::Facts;
use crate::config::Config;
use crate::config::schedule::{self, Schedule};
use crate::daemon::metrics::Metrics;
use crate::daemon::selection::Selection;
use crate::daemon::traffic::Traffic;
use crate::lock::LoadedLock;
use crate::provider::Secret;
use crate::store::Store;
use crate::transport::Transport;

/// A loop that has not turned for longer makes `/healthz` fail.
const LOOP_STALLED: Duration = Duration::from_secs(5);

/// What every audit runs with, swapped whole on reload: an audit that started before a SIGHUP
/// finishes with the config, client and facts it started with, never a mix.
pub struct Snapshot {
    pub config: Arc<Config>,
    /// One HTTP client and its connection pools for every audit.
    pub transport: Transport,
    /// Lifecycle facts (table and feeds): what is at hand at start (the built-in table, local
    /// feeds, the last fetched copy of remote ones), then what upkeep downloads. No audit waits
    /// for a download.
    pub facts: Arc<Facts>,
}

impl Snapshot {
    /// `config` with a new client and the lifecycle facts at hand.
    pub fn of(config: Config) -> Result<Snapshot, String> {
        let transport = Transport::for_config(&config).map_err(|f| f.message)?;
        let facts = crate::audit::lifecycle::facts_at_hand(&config);
        Ok(Snapshot {
            config: Arc::new(config),
            transport,
            facts: Arc::new(facts),
        })
    }
}

/// What `Daemon::new` is built from: read once at start.
pub struct Parts {
    pub config_path: PathBuf,
    pub selection: Selection,
    pub snapshot: Snapshot,
    pub store: Store,
    pub api_token: Option<Secret>,
    pub traffic: Traffic,
}

/// State shared by the scheduler, the audit tasks, upkeep and the HTTP endpoint.
pub struct Daemon {
    snapshot: RwLock<Arc<Snapshot>>,
    pub(crate) config_path: PathBuf,
    /// The pins this daemon audits (`--pins`), applied on every load.
    pub(crate) selection: Selection,
    pub store: Store,
    pub metrics: Metrics,
    pub(crate) started: DateTime<Utc>,
    /// The loop's last turn: a stuck loop makes `/healthz` fail.
    heartbeat: Mutex<Instant>,
    /// Pins whose audit is running now.
    pub(crate) running: Mutex<HashSet<String>>,
    /// Finish time of each pin's last audit.
    pub(crate) last_audit: Mutex<BTreeMap<String, DateTime<Utc>>>,
    /// Start of each pin's last behaviour audit here, with the lock entry's digest: the budget
    /// counts from it too when the store cannot say (`daemon::audit::last_behaviour`).
    pub(crate) behaviour_at: Mutex<BTreeMap<String, (String, DateTime<Utc>)>>,
    /// Cancels audits in flight (after the grace period).
    pub(crate) cancel_audits: CancellationToken,
    /// modelpin.lock as last read, with the file's modification time and size: every audit
    /// needs it, and parsing it once per due pin made the start-up burst of 100 audits hold
    /// 100 copies at once.
    lock_cache: Mutex<Option<(LockStamp, Arc<Option<LoadedLock>>)>>,
    /// Counts commits that queued notifications; wakes every channel's delivery worker.
    pub(crate) outbox_wake: tokio::sync::watch::Sender<u64>,
    /// The bearer token `/api/*` requires (`settings.api_token_env`), read once at start.
    pub api_token: Option<Secret>,
    /// The traces receiver's windows, request slots and token (`[traffic]`, read at start).
    pub traffic: Traffic,
    /// Pages and `/api/history` answers built at once (`RENDERS`); the others wait for a
    /// permit, so 20 browsers loading at once cost what `RENDERS` pages cost.
    pub(crate) renders: tokio::sync::Semaphore,
    /// Whether this daemon leads its fleet (always, on a store of its own).
    pub fleet: crate::daemon::fleet::Fleet,
}

/// Pages and history answers built at once. Each is bounded (`page::MAX_PAGE_BYTES`,
/// `http::MAX_ANSWER`), so the memory answers take at once is bounded by this many of them.
pub const RENDERS: usize = 2;

type LockStamp = (Option<std::time::SystemTime>, u64);

impl Daemon {
    #[must_use]
    pub fn new(parts: Parts) -> Daemon {
        let now = Instant::now();
        let fleet = crate::daemon::fleet::Fleet::new(
            parts.store.is_shared(),
            parts.snapshot.config.settings.lease,
        );
        Daemon {
            snapshot: RwLock::new(Arc::new(parts.snapshot)),
            config_path: parts.config_path,
            selection: parts.selection,
            store: parts.store,
            metrics: Metrics::new(),
            started: Utc::now(),
            heartbeat: Mutex::new(now),
            running: Mutex::new(HashSet::new()),
            last_audit: Mutex::new(BTreeMap::new()),
            behaviour_at: Mutex::new(BTreeMap::new()),
            cancel_audits: CancellationToken::new(),
            lock_cache: Mutex::new(None),
            outbox_wake: tokio::sync::watch::Sender::new(0),
            api_token: parts.api_token,
            traffic: parts.traffic,
            renders: tokio::sync::Semaphore::new(RENDERS),
            fleet,
        }
    }

    /// The current snapshot; audits hold it for their whole run.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read().expect("snapshot lock").clone()
    }

    pub(crate) fn config(&self) -> Arc<Config> {
        self.snapshot().config.clone()
    }

    pub(crate) fn swap(&self, snapshot: Snapshot) {
        *self.snapshot.write().expect("snapshot lock") = Arc::new(snapshot);
    }

    /// Puts `facts`, loaded for `config`, into the snapshot, unless a reload replaced `config`
    /// meanwhile (its own load follows). Returns whether they were applied.
    pub(crate) fn swap_facts(&self, config: &Arc<Config>, facts: Arc<Facts>) -> bool {
        let mut current = self.snapshot.write().expect("snapshot lock");
        if !Arc::ptr_eq(&current.config, config) {
            return false;
        }
        *current = Arc::new(Snapshot {
            config: current.config.clone(),
            transport: current.transport.clone(),
            facts,
        });
        drop(current);
        true
    }

    /// The scheduler loop turned.
    pub(crate) fn beat(&self) {
        *self.heartbeat.lock().expect("heartbeat lock") = Instant::now();
    }

    pub(crate) fn deliverer(&self) -> crate::alert::deliver::Deliverer {
        let now = self.snapshot();
        crate::alert::deliver::Deliverer {
            transport: now.transport.clone(),
            channels: now.config.alerts.clone(),
            timeout: now.config.settings.timeout.min(Duration::from_secs(10)),
        }
    }

    /// The lock file, re-read only when it changed on disk.
    pub(crate) fn lock_file(
        &self,
        path: &Path,
    ) -> Result<Arc<Option<LoadedLock>>, crate::lock::LockError> {
        let stamp: LockStamp =
            std::fs::metadata(path).map_or((None, 0), |m| (m.modified().ok(), m.len()));
        let mut cache = self.lock_cache.lock().expect("lock cache");
        if let Some((cached, lock)) = cache.as_ref()
            && *cached == stamp
            && stamp.0.is_some()
        {
            return Ok(lock.clone());
        }
        let lock = Arc::new(crate::lock::read(path)?);
        *cache = Some((stamp, lock.clone()));
        Ok(lock)
    }

    /// Healthy when the store takes writes (in a fleet: answers the lease), the loop turns and,
    /// on the leader, every pin was audited within two of its intervals (a standby audits
    /// nothing; a new leader counts from when it took over).
    pub fn health(&self, now: DateTime<Utc>) -> Result<(), String> {
        if let Some(failing) = self.store.failing() {
            return Err(format!(
                "store writes failing since {}: {}",
                failing.since.to_rfc3339(),
                failing.reason.lines().next().unwrap_or_default()
            ));
        }
        if let Some(why) = self.fleet.mismatch() {
            return Err(why);
        }
        let idle = self.heartbeat.lock().expect("heartbeat lock").elapsed();
        if idle > LOOP_STALLED {
            return Err(format!(
                "the scheduler loop has not run for {}s",
                idle.as_secs()
            ));
        }
        if !self.fleet.leads() {
            return Ok(());
        }
        self.overdue(now)
    }

    /// The first pin not audited within two of its intervals.
    fn overdue(&self, now: DateTime<Utc>) -> Result<(), String> {
        let config = self.config();
        let last = self.last_audit.lock().expect("last audit lock");
        for pin in &config.pins {
            let Some(interval) =
                schedule_of(&config, &pin.id).and_then(|s| schedule::interval(&s, now))
            else {
                continue;
            };
            let since = last
                .get(&pin.id)
                .copied()
                .unwrap_or(self.started)
                .max(self.fleet.since());
            let allowed = chrono::Duration::from_std(interval * 2).unwrap_or(chrono::Duration::MAX);
            if now - since > allowed {
                let when = last
                    .get(&pin.id)
                    .map_or("never since start".to_owned(), DateTime::to_rfc3339);
                return Err(format!(
                    "pin `{}` was last audited {when}, more than two intervals ({}) ago",
                    pin.id,
                    crate::transport::human_duration(interval * 2)
                ));
            }
        }
        Ok(())
    }

    /// What `/healthz` says this daemon is: `leader` or `standby`.
    #[must_use]
    pub fn role(&self) -> &'static str {
        if self.fleet.leads() {
            "leader"
        } else {
            "standby"
        }
    }
}

/// The pin's effective schedule (its own, else the settings').
pub(crate) fn schedule_of(config: &Config, pin: &str) -> Option<Schedule> {
    let pin = config.pins.iter().find(|p| p.id == pin)?;
    Some(
        pin.schedule
            .as_ref()
            .unwrap_or(&config.settings.schedule)
            .clone(),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use chrono::Utc;
    use tokio::time::sleep;

    use crate::audit::lifecycle::Facts;
    use crate::config::tests_support::minimal_config;
    use crate::daemon::test_support::daemon_with;

    #[tokio::test(start_paused = true)]
    async fn facts_loaded_for_a_config_a_reload_replaced_are_dropped() {
        let t = daemon_with(minimal_config()).await;
        let old = t.daemon.config();
        let snapshot = super::Snapshot::of(minimal_config()).unwrap();
        t.daemon.swap(snapshot);
        assert!(!t.daemon.swap_facts(&old, Arc::new(Facts::default())));
        let builtin = t.daemon.snapshot().facts.facts.len();
        assert_eq!(builtin, Facts::builtin_only().facts.len());
    }

    #[tokio::test(start_paused = true)]
    async fn a_loop_that_stops_beating_makes_the_daemon_unhealthy() {
        let t = daemon_with(minimal_config()).await;
        assert_eq!(t.daemon.health(Utc::now()), Ok(()));
        sleep(Duration::from_secs(6)).await;
        assert_eq!(
            t.daemon.health(Utc::now()),
            Err("the scheduler loop has not run for 6s".to_owned())
        );
        t.daemon.beat();
        assert_eq!(t.daemon.health(Utc::now()), Ok(()));
    }
}
