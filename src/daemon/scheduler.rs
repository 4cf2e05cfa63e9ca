//! The scheduler: the daemon's one loop, and its only job is deciding which audit runs when.
//!
//! Cron jobs (tokio-cron-scheduler) only say "pin X is due" into a channel; the loop owns
//! everything else, so that overlap, reload and shutdown are decided in one place: a pin whose
//! previous audit still runs is skipped and counted, never overlapped; pins whose last stored
//! audit is older than one interval are audited at once (at start and after a reload); a reload
//! keeps the old config when the new one is invalid; on stop, running audits get `GRACE`, then
//! are cancelled (their calls are recorded as cancelled, so the audit is stored as
//! inconclusive). The loop awaits nothing slow: feeds and pruning are upkeep's (`upkeep`), store
//! reads for catch-up run in a task of their own, and the heartbeat is written every second.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinSet;
use tokio_cron_scheduler::{Job, JobScheduler};
use uuid::Uuid;

use crate::config::Config;
use crate::config::schedule;
use crate::daemon::signals::Control;
use crate::daemon::state::{Snapshot, schedule_of};
use crate::daemon::{Daemon, GRACE};
use crate::exit::Exit;
use crate::transport::Transport;

/// How long a SIGHUP may spend reading pins.toml and its files. Every file read is bounded, so
/// only a stalled disk or network mount gets near it.
const RELOAD_DEADLINE: Duration = Duration::from_secs(30);

/// The loop and what it owns. `audit` runs one pin's audit (`audit::audit_pin` in the daemon).
pub struct Scheduler<A> {
    daemon: Arc<Daemon>,
    audit: A,
    due_tx: mpsc::UnboundedSender<String>,
    due_rx: mpsc::UnboundedReceiver<String>,
    control: mpsc::Receiver<Control>,
    /// Asks upkeep to load the lifecycle facts again, for a reloaded config.
    refresh_facts: Arc<Notify>,
    audits: JoinSet<()>,
    /// Catch-up reads of the store, never awaited by the loop.
    catching_up: JoinSet<()>,
    /// Whether this daemon leads its fleet: a standby dispatches nothing, and a daemon that
    /// starts leading catches up from the store (what the last leader stored is not repeated).
    leading: tokio::sync::watch::Receiver<bool>,
}

impl<A, F> Scheduler<A>
where
    A: Fn(Arc<Daemon>, String) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    pub fn new(
        daemon: Arc<Daemon>,
        control: mpsc::Receiver<Control>,
        refresh_facts: Arc<Notify>,
        audit: A,
    ) -> Scheduler<A> {
        let (due_tx, due_rx) = mpsc::unbounded_channel();
        let leading = daemon.fleet.watch();
        Scheduler {
            daemon,
            audit,
            due_tx,
            due_rx,
            control,
            refresh_facts,
            audits: JoinSet::new(),
            catching_up: JoinSet::new(),
            leading,
        }
    }

    /// Where pins are announced due (the cron jobs hold a clone).
    #[cfg(test)]
    pub(crate) fn due(&self) -> mpsc::UnboundedSender<String> {
        self.due_tx.clone()
    }

    /// Runs until `Control::Stop`, then drains the running audits.
    pub async fn run(mut self) -> Exit {
        let mut cron = match self.schedule().await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot start the scheduler");
                return Exit::Error;
            }
        };
        self.catch_up();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                Some(pin) = self.due_rx.recv() => self.dispatch(pin),
                Some(_) = self.audits.join_next(), if !self.audits.is_empty() => {}
                Some(_) = self.catching_up.join_next(), if !self.catching_up.is_empty() => {}
                _ = tick.tick() => self.daemon.beat(),
                Ok(()) = self.leading.changed() => {
                    if *self.leading.borrow_and_update() {
                        self.catch_up();
                    }
                }
                control = self.control.recv() => match control {
                    Some(Control::Reload) => {
                        if let Some(s) = self.reload(&mut cron).await {
                            cron = s;
                        }
                    }
                    Some(Control::Stop) | None => break,
                },
            }
        }
        let _ = cron.shutdown().await;
        self.catching_up.abort_all();
        self.drain().await;
        Exit::Ok
    }

    /// One cron job per pin; a job only announces that its pin is due.
    async fn schedule(&self) -> Result<JobScheduler, String> {
        let scheduler = JobScheduler::new().await.map_err(|e| e.to_string())?;
        let config = self.daemon.config();
        for pin in &config.pins {
            let schedule = pin.schedule.as_ref().unwrap_or(&config.settings.schedule);
            if let Some(original) = &schedule.rewritten_from {
                tracing::info!(pin = %pin.id, crontab = %original, cron = %schedule.expression, "5-field crontab schedule: seconds field 0 prepended");
            }
            let tx = self.due_tx.clone();
            let id = pin.id.clone();
            let job = Job::new_async(schedule.expression.as_str(), move |_: Uuid, _| {
                let _ = tx.send(id.clone());
                Box::pin(async {})
            })
            .map_err(|e| format!("pin `{}`: {e}", pin.id))?;
            scheduler.add(job).await.map_err(|e| e.to_string())?;
        }
        scheduler.start().await.map_err(|e| e.to_string())?;
        Ok(scheduler)
    }

    /// Pins whose last stored audit is older than one interval are announced due at once; the
    /// store is read in a task, beside the loop.
    fn catch_up(&mut self) {
        let daemon = self.daemon.clone();
        let due = self.due_tx.clone();
        self.catching_up.spawn(catch_up(daemon, due));
    }

    fn dispatch(&mut self, pin: String) {
        if !self.daemon.fleet.leads() {
            tracing::debug!(pin = %pin, "standby: the fleet's leader audits this pin");
            return;
        }
        let fresh = self
            .daemon
            .running
            .lock()
            .expect("running lock")
            .insert(pin.clone());
        if !fresh {
            tracing::warn!(pin = %pin, "previous audit still running: this one is skipped");
            self.daemon.metrics.audit_skipped(&pin);
            return;
        }
        let daemon = self.daemon.clone();
        let audit = (self.audit)(daemon.clone(), pin.clone());
        self.audits.spawn(async move {
            audit.await;
            daemon.running.lock().expect("running lock").remove(&pin);
        });
    }

    async fn reload(&mut self, old: &mut JobScheduler) -> Option<JobScheduler> {
        let snapshot = self.reloaded().await?;
        let config = snapshot.config.clone();
        warn_restart_needed(&self.daemon.config(), &config);
        self.daemon.metrics.declare(&config);
        // Windows of pins no longer configured go with the old config.
        self.daemon.traffic.forget_unconfigured(&config);
        self.daemon.swap(snapshot);
        // Until upkeep has loaded the new config's feeds, audits use the facts they had.
        self.refresh_facts.notify_one();
        let _ = old.shutdown().await;
        match self.schedule().await {
            Ok(s) => {
                tracing::info!("SIGHUP: pins.toml reloaded");
                // New pins (and pins whose schedule changed) are audited now if they are due.
                self.catch_up();
                Some(s)
            }
            Err(e) => {
                tracing::error!(error = %e, "SIGHUP: cannot schedule the new config");
                None
            }
        }
    }

    /// A snapshot of pins.toml as it is now, with the facts the running one has; `None` (logged)
    /// when it cannot be used.
    /// The files are read on the blocking pool under `RELOAD_DEADLINE`, so a slow disk holds
    /// up neither the loop nor its signals.
    async fn reloaded(&self) -> Option<Snapshot> {
        let daemon = self.daemon.clone();
        let load = tokio::task::spawn_blocking(move || daemon.selection.load(&daemon.config_path));
        let config = match tokio::time::timeout(RELOAD_DEADLINE, load).await {
            Ok(Ok(Ok(config))) => config,
            Ok(Ok(Err(e))) => {
                tracing::error!(error = %e, "SIGHUP: the new pins.toml is invalid; keeping the running config");
                return None;
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "SIGHUP: reading pins.toml failed; keeping the running config");
                return None;
            }
            Err(_) => {
                tracing::error!(
                    deadline_seconds = RELOAD_DEADLINE.as_secs(),
                    "SIGHUP: reading pins.toml and its files did not finish in time; keeping the running config"
                );
                return None;
            }
        };
        let transport = match Transport::for_config(&config) {
            Ok(transport) => transport,
            Err(e) => {
                tracing::error!(error = %e.message, "SIGHUP: cannot build the HTTP client; keeping the running config");
                return None;
            }
        };
        let running = self.daemon.snapshot();
        if let (Some(new), Some(old)) = (transport.breakers(), running.transport.breakers()) {
            new.continue_from(old);
        }
        Some(Snapshot {
            config: Arc::new(config),
            transport,
            facts: running.facts.clone(),
        })
    }

    /// Lets running audits finish within the grace period, then cancels the rest.
    async fn drain(&mut self) {
        if self.audits.is_empty() {
            return;
        }
        tracing::info!(
            running = self.audits.len(),
            grace_seconds = GRACE.as_secs(),
            "stopping: waiting for running audits"
        );
        let finished = tokio::time::timeout(GRACE, async {
            while self.audits.join_next().await.is_some() {}
        })
        .await;
        if finished.is_err() {
            tracing::warn!(
                running = self.audits.len(),
                "grace period over: cancelling running audits"
            );
            self.daemon.cancel_audits.cancel();
            while self.audits.join_next().await.is_some() {}
        }
    }
}

/// Announces due every pin whose last stored audit is older than one interval, and notes when
/// each was last audited for the health check.
async fn catch_up(daemon: Arc<Daemon>, due: mpsc::UnboundedSender<String>) {
    let config = daemon.config();
    let now = Utc::now();
    for pin in &config.pins {
        let last = daemon.store.last_audit(&pin.id).await.ok().flatten();
        if let Some(record) = &last {
            daemon
                .last_audit
                .lock()
                .expect("last audit lock")
                .insert(pin.id.clone(), record.finished_at);
        }
        let interval = schedule_of(&config, &pin.id).and_then(|s| schedule::interval(&s, now));
        let stale = match (&last, interval) {
            (None, _) => true,
            (Some(record), Some(interval)) => {
                now - record.finished_at
                    > chrono::Duration::from_std(interval).unwrap_or(chrono::Duration::MAX)
            }
            (Some(_), None) => false,
        };
        if stale {
            tracing::info!(pin = %pin.id, "last audit older than one interval: auditing now");
            let _ = due.send(pin.id.clone());
        }
    }
}

/// Settings read once at start: a reload names those that changed, since they keep their
/// old values until a restart.
fn warn_restart_needed(old_config: &Config, new_config: &Config) {
    let (old, new) = (&old_config.settings, &new_config.settings);
    let (old_traffic, new_traffic) = (&old_config.traffic, &new_config.traffic);
    let mut changed = Vec::new();
    if old.store != new.store {
        changed.push("store");
    }
    if old.metrics != new.metrics {
        changed.push("metrics");
    }
    if old_traffic.token_env != new_traffic.token_env {
        changed.push("traffic.token_env");
    }
    if old_traffic.max_requests != new_traffic.max_requests {
        changed.push("traffic.max_requests");
    }
    if !changed.is_empty() {
        tracing::warn!(
            settings = %changed.join(", "),
            "SIGHUP: these settings changed but apply only after a restart; the running daemon keeps the old values"
        );
    }
}

#[cfg(test)]
mod tests;
