//! `modelpin daemon`: scheduled audits, durable history, metrics and health, for months unattended.
//!
//! The scheduler (tokio-cron-scheduler) only says "pin X is due" into a channel; this module's
//! loop owns everything else, so that overlap, shutdown and reload are decided in one place:
//! a pin whose previous audit still runs is skipped and counted, never overlapped; SIGTERM/SIGINT
//! stop new audits, give running ones up to `GRACE` and then cancel them (their calls are recorded
//! as cancelled, so the audit is stored as inconclusive); SIGHUP reloads pins.toml and keeps the
//! old config when the new one is invalid. Every audit is written to the store and flushed before
//! it is logged as stored.

pub mod http;
pub mod listener;
pub mod metrics;
pub mod page;
pub mod traffic;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_cron_scheduler::{Job, JobScheduler};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::audit::lifecycle::{Facts, load_facts};
use crate::audit::run::{Context, Request, audit};
use crate::config::Config;
use crate::config::schedule::{self, Schedule};
use crate::daemon::metrics::Metrics;
use crate::exit::Exit;
use crate::lock::LoadedLock;
use crate::store::{AuditRecord, Store};
use crate::transport::Transport;

/// How long running audits may finish after a shutdown signal before they are cancelled.
pub const GRACE: Duration = Duration::from_secs(10);

/// The daemon could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("error: {0}")]
    Io(String),
}

/// What every audit runs with, swapped whole on reload: an audit that started before a SIGHUP
/// finishes with the config, client and facts it started with, never a mix.
pub struct Snapshot {
    pub config: Arc<Config>,
    /// One HTTP client and its connection pools for every audit.
    pub transport: Transport,
    /// Lifecycle facts (table and feeds): loaded at start, refreshed hourly and on reload.
    pub facts: Arc<Facts>,
}

/// State shared by the loop, the audit tasks and the HTTP endpoint.
pub struct Daemon {
    snapshot: RwLock<Arc<Snapshot>>,
    config_path: PathBuf,
    /// The pins this daemon audits (`--pins`), applied on every load.
    selection: Selection,
    pub store: Store,
    pub metrics: Metrics,
    started: DateTime<Utc>,
    /// Unix seconds of the loop's last turn: a stuck loop makes `/healthz` fail.
    heartbeat: AtomicI64,
    /// Pins whose audit is running now.
    running: Mutex<HashSet<String>>,
    /// Finish time of each pin's last audit.
    last_audit: Mutex<BTreeMap<String, DateTime<Utc>>>,
    /// Cancels audits in flight (after the grace period).
    cancel_audits: CancellationToken,
    /// modelpin.lock as last read, with the file's modification time and size: every audit
    /// needs it, and parsing it once per due pin made the start-up burst of 100 audits hold
    /// 100 copies at once.
    lock_cache: Mutex<Option<(LockStamp, Arc<Option<LoadedLock>>)>>,
    /// Counts commits that queued notifications; wakes every channel's delivery worker.
    outbox_wake: tokio::sync::watch::Sender<u64>,
    /// The bearer token `/api/*` requires (`settings.api_token_env`), read once at start.
    pub api_token: Option<crate::provider::Secret>,
    /// The traces receiver's windows, request slots and token (`[traffic]`, read at start).
    pub traffic: traffic::Traffic,
}

type LockStamp = (Option<std::time::SystemTime>, u64);

impl Daemon {
    /// The current snapshot; audits hold it for their whole run.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read().expect("snapshot lock").clone()
    }

    fn config(&self) -> Arc<Config> {
        self.snapshot().config.clone()
    }

    fn swap(&self, snapshot: Snapshot) {
        *self.snapshot.write().expect("snapshot lock") = Arc::new(snapshot);
    }

    /// Reloads the lifecycle table and feeds; a failing feed keeps its cached copy (a warning).
    async fn refresh_facts(&self) {
        let now = self.snapshot();
        let facts = fresh_facts(&now.config, &now.transport).await;
        self.swap(Snapshot {
            config: now.config.clone(),
            transport: now.transport.clone(),
            facts,
        });
    }

    fn deliverer(&self) -> crate::alert::deliver::Deliverer {
        let now = self.snapshot();
        crate::alert::deliver::Deliverer {
            transport: now.transport.clone(),
            channels: now.config.alerts.clone(),
            timeout: now.config.settings.timeout.min(Duration::from_secs(10)),
        }
    }

    /// The lock file, re-read only when it changed on disk.
    fn lock_file(&self, path: &Path) -> Result<Arc<Option<LoadedLock>>, crate::lock::LockError> {
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

    /// Healthy when the store takes writes, the loop turns and every pin was audited within two
    /// of its intervals.
    pub fn health(&self, now: DateTime<Utc>) -> Result<(), String> {
        if let Some(failing) = self.store.failing() {
            return Err(format!(
                "store writes failing since {}: {}",
                failing.since.to_rfc3339(),
                failing.reason.lines().next().unwrap_or_default()
            ));
        }
        let beat = self.heartbeat.load(Ordering::Relaxed);
        if now.timestamp() - beat > 5 {
            return Err(format!(
                "the scheduler loop has not run for {}s",
                now.timestamp() - beat
            ));
        }
        let config = self.config();
        let last = self.last_audit.lock().expect("last audit lock");
        for pin in &config.pins {
            let Some(interval) =
                schedule_of(&config, &pin.id).and_then(|s| schedule::interval(&s, now))
            else {
                continue;
            };
            let since = last.get(&pin.id).copied().unwrap_or(self.started);
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
}

/// The built-in table and the feeds, each failing feed logged (its cached copy is used).
async fn fresh_facts(config: &Config, transport: &Transport) -> Arc<Facts> {
    let facts = load_facts(config, transport).await;
    for warning in &facts.warnings {
        tracing::warn!(%warning, "lifecycle feed");
    }
    Arc::new(facts)
}

/// The pins one daemon audits when several split them: those whose id matches a `--pins` glob,
/// or every pin when none is given.
struct Selection {
    globs: Vec<(String, globset::GlobMatcher)>,
}

impl Selection {
    fn new(patterns: &[String]) -> Result<Selection, DaemonError> {
        let globs = patterns
            .iter()
            .map(|p| {
                globset::Glob::new(p)
                    .map(|g| (p.clone(), g.compile_matcher()))
                    .map_err(|e| DaemonError::Io(format!("--pins {p}: {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Selection { globs })
    }

    /// Loads pins.toml and keeps the selected pins; selecting none is an error.
    fn load(&self, path: &Path) -> Result<Config, DaemonError> {
        let needs = crate::config::Needs {
            provider_keys: true,
            channel_secrets: crate::config::ChannelSecrets::Required,
        };
        let mut config = crate::config::load_for(path, needs)?;
        if self.globs.is_empty() {
            return Ok(config);
        }
        config
            .pins
            .retain(|p| self.globs.iter().any(|(_, g)| g.is_match(&p.id)));
        if config.pins.is_empty() {
            let listed: Vec<&str> = self.globs.iter().map(|(p, _)| p.as_str()).collect();
            return Err(DaemonError::Io(format!(
                "no pin in {} matches --pins {}",
                path.display(),
                listed.join(", ")
            )));
        }
        Ok(config)
    }
}

/// A snapshot of `config` with a new client; facts are loaded by the caller.
fn snapshot_of(config: Config, facts: Arc<Facts>) -> Result<Snapshot, DaemonError> {
    let transport = Transport::for_config(&config).map_err(|f| DaemonError::Io(f.message))?;
    Ok(Snapshot {
        config: Arc::new(config),
        transport,
        facts,
    })
}

/// The pin's effective schedule (its own, else the settings').
fn schedule_of(config: &Config, pin: &str) -> Option<Schedule> {
    let pin = config.pins.iter().find(|p| p.id == pin)?;
    Some(
        pin.schedule
            .as_ref()
            .unwrap_or(&config.settings.schedule)
            .clone(),
    )
}

/// The `/api/*` token from the variable `settings.api_token_env` names; an unset variable is an
/// error, never an open API.
fn api_token(config: &Config) -> Result<Option<crate::provider::Secret>, DaemonError> {
    let Some(var) = &config.settings.api_token_env else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(token) if !token.is_empty() => Ok(Some(crate::provider::Secret::new(token))),
        _ => Err(DaemonError::Io(format!(
            "environment variable `{var}` (settings.api_token_env, the /api bearer token) is not set"
        ))),
    }
}

/// A listener off loopback was asked for explicitly; say so where operators look.
fn warn_if_public(config: &Config) {
    let addr = config.settings.metrics;
    if !addr.ip().is_loopback() {
        let api = if config.settings.api_token_env.is_some() {
            "/api requires the bearer token"
        } else {
            "/api is open to anyone who can connect (set api_token_env)"
        };
        let traces = if !config.traffic.enabled {
            "/v1/traces is off"
        } else if config.traffic.token_env.is_some() {
            "/v1/traces requires its bearer token"
        } else {
            "/v1/traces takes spans from anyone who can connect (set [traffic] token_env)"
        };
        tracing::warn!(%addr, "metrics_public: serving metrics and history off loopback; {api}; {traces}");
    }
}

pub async fn run(
    config_path: &Path,
    reset_store: bool,
    pins: &[String],
    log: crate::logging::Style,
) -> Result<Exit, DaemonError> {
    let selection = Selection::new(pins)?;
    let config = selection.load(config_path)?;
    crate::logging::init(
        log,
        crate::redact::Redactor::from_config(&config, &|name| std::env::var(name).ok()),
    );
    if reset_store {
        match crate::store::reset(&config.settings.store) {
            Ok(Some(aside)) => {
                tracing::warn!(moved_to = %aside.display(), "store moved aside; starting a new one");
            }
            Ok(None) => tracing::info!("no store to reset"),
            Err(e) => return Err(DaemonError::Io(format!("cannot move the store aside: {e}"))),
        }
    }
    let store = open_store(&config.settings.store).await?;
    crate::alert::outbox::index_older_entries(&store).await?;
    let listener = tokio::net::TcpListener::bind(config.settings.metrics)
        .await
        .map_err(|e| {
            DaemonError::Io(format!(
                "cannot listen on {} (settings.metrics): {e}",
                config.settings.metrics
            ))
        })?;
    // The address actually bound: `metrics = "127.0.0.1:0"` picks a free port.
    let address = listener
        .local_addr()
        .map_err(|e| DaemonError::Io(format!("cannot read the listening address: {e}")))?;
    let api_token = api_token(&config)?;
    let traffic = traffic::Traffic::new(&config)?;
    warn_if_public(&config);
    let snapshot = snapshot_of(config, Arc::new(Facts::default()))?;
    let config = snapshot.config.clone();
    let daemon = Arc::new(Daemon {
        snapshot: RwLock::new(Arc::new(snapshot)),
        config_path: config_path.to_owned(),
        selection,
        store,
        metrics: Metrics::new(),
        started: Utc::now(),
        heartbeat: AtomicI64::new(Utc::now().timestamp()),
        running: Mutex::new(HashSet::new()),
        last_audit: Mutex::new(BTreeMap::new()),
        cancel_audits: CancellationToken::new(),
        lock_cache: Mutex::new(None),
        outbox_wake: tokio::sync::watch::Sender::new(0),
        api_token,
        traffic,
    });
    daemon.metrics.declare(&config);
    daemon.refresh_facts().await;
    let stop_http = CancellationToken::new();
    let http = tokio::spawn(http::serve(daemon.clone(), listener, stop_http.clone()));
    tracing::info!(url = %format!("http://{address}/"), store = %config.settings.store.display(), pins = config.pins.len(), "daemon started: status page, /metrics and /healthz listening");
    tracing::info!("status page: http://{address}/");
    let stop_delivery = CancellationToken::new();
    let delivery = tokio::spawn(delivery_worker(daemon.clone(), stop_delivery.clone()));
    let stop_judging = CancellationToken::new();
    let judging = tokio::spawn(traffic::judge_loop(daemon.clone(), stop_judging.clone()));
    let code = Loop::new(daemon.clone()).run().await;
    stop_judging.cancel();
    let _ = judging.await;
    // Undelivered notifications stay in the outbox and are sent after a restart.
    stop_delivery.cancel();
    let _ = delivery.await;
    stop_http.cancel();
    let _ = http.await;
    if let Err(e) = daemon.store.flush().await {
        tracing::error!(error = %e, "final flush failed");
        return Ok(Exit::Error);
    }
    tracing::info!("daemon stopped");
    Ok(code)
}

/// Starts one delivery worker per channel (those configured now, and any with notifications
/// waiting), so a slow or dead receiver delays only its own queue; stops them all on `stop`.
async fn delivery_worker(daemon: Arc<Daemon>, stop: CancellationToken) {
    let mut workers = JoinSet::new();
    let mut started: HashSet<String> = HashSet::new();
    loop {
        let mut names: HashSet<String> = daemon
            .config()
            .alerts
            .iter()
            .map(|c| c.name.clone())
            .collect();
        names.extend(crate::alert::outbox::channels_waiting(&daemon.store).unwrap_or_default());
        for name in names {
            if started.insert(name.clone()) {
                workers.spawn(channel_worker(daemon.clone(), name, stop.clone()));
            }
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = stop.cancelled() => break,
        }
    }
    while workers.join_next().await.is_some() {}
}

/// Drains one channel's queue until `stop`: woken by new notifications, and every second for
/// retries. The channel is read from the current config on every pass, so a reload applies.
async fn channel_worker(daemon: Arc<Daemon>, channel: String, stop: CancellationToken) {
    let mut wake = daemon.outbox_wake.subscribe();
    loop {
        let deliverer = daemon.deliverer();
        tokio::select! {
            outcomes = crate::alert::deliver::run_channel(&daemon.store, &deliverer, &channel) => {
                for outcome in outcomes {
                    daemon.metrics.notification(&outcome.channel, outcome.result);
                }
            }
            () = stop.cancelled() => return,
        }
        tokio::select! {
            _ = wake.changed() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// Opens the store; while another process holds it, waits up to 5 s (a `modelpin history` run
/// holds it for a moment), then refuses, naming the holder: a second daemon must not share a
/// store.
async fn open_store(path: &Path) -> Result<Store, DaemonError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut said = false;
    loop {
        match Store::open(path, crate::store::Holder::Daemon) {
            Ok(store) => return Ok(store),
            Err(crate::store::StoreError::InUse { .. })
                if tokio::time::Instant::now() < deadline =>
            {
                if !said {
                    tracing::warn!(store = %path.display(), "the store is in use by another modelpin process; waiting up to 5s for it");
                    said = true;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => return Err(DaemonError::Store(e)),
        }
    }
}

/// The daemon's main loop and what it owns.
struct Loop {
    daemon: Arc<Daemon>,
    due_tx: mpsc::UnboundedSender<String>,
    due_rx: mpsc::UnboundedReceiver<String>,
    audits: JoinSet<()>,
}

impl Loop {
    fn new(daemon: Arc<Daemon>) -> Loop {
        let (due_tx, due_rx) = mpsc::unbounded_channel();
        Loop {
            daemon,
            due_tx,
            due_rx,
            audits: JoinSet::new(),
        }
    }

    async fn run(mut self) -> Exit {
        let mut scheduler = match self.schedule().await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot start the scheduler");
                return Exit::Error;
            }
        };
        self.catch_up();
        let mut signals = match Signals::new() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for signals");
                return Exit::Error;
            }
        };
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut hourly = tokio::time::interval(Duration::from_secs(3600));
        loop {
            tokio::select! {
                Some(pin) = self.due_rx.recv() => self.dispatch(pin),
                Some(_) = self.audits.join_next(), if !self.audits.is_empty() => {}
                _ = tick.tick() => self.daemon.heartbeat.store(Utc::now().timestamp(), Ordering::Relaxed),
                _ = hourly.tick() => self.upkeep().await,
                signal = signals.next() => match signal {
                    SignalKind::Reload => {
                        if let Some(s) = self.reload(&mut scheduler).await {
                            scheduler = s;
                        }
                    }
                    SignalKind::Stop => break,
                },
            }
        }
        let _ = scheduler.shutdown().await;
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

    /// Pins whose last stored audit is older than one interval are audited at once.
    fn catch_up(&self) {
        let config = self.daemon.config();
        let now = Utc::now();
        for pin in &config.pins {
            let last = self.daemon.store.last_audit(&pin.id).ok().flatten();
            if let Some(record) = &last {
                self.daemon
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
                let _ = self.due_tx.send(pin.id.clone());
            }
        }
    }

    fn dispatch(&mut self, pin: String) {
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
        self.audits.spawn(async move {
            audit_pin(&daemon, &pin).await;
            daemon.running.lock().expect("running lock").remove(&pin);
        });
    }

    async fn reload(&mut self, old: &mut JobScheduler) -> Option<JobScheduler> {
        let path = self.daemon.config_path.clone();
        let config = match self.daemon.selection.load(&path) {
            Ok(config) => config,
            Err(e) => {
                tracing::error!(error = %e, "SIGHUP: the new pins.toml is invalid; keeping the running config");
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
        let facts = fresh_facts(&config, &transport).await;
        warn_restart_needed(&self.daemon.config(), &config);
        self.daemon.metrics.declare(&config);
        // Windows of pins no longer configured go with the old config.
        self.daemon.traffic.forget_unconfigured(&config);
        self.daemon.swap(Snapshot {
            config: Arc::new(config),
            transport,
            facts,
        });
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

    /// Hourly: fresh lifecycle feeds, and history past the retention pruned.
    async fn upkeep(&self) {
        self.daemon.refresh_facts().await;
        let retention = self.daemon.config().settings.retention;
        let cutoff =
            Utc::now() - chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX);
        match self.daemon.store.prune(cutoff).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "pruned audit history past the retention"),
            Err(e) => tracing::error!(error = %e, "pruning failed"),
        }
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

/// Runs one pin's audit, stores it, and updates the metrics.
async fn audit_pin(daemon: &Daemon, pin: &str) {
    let snapshot = daemon.snapshot();
    let config = &snapshot.config;
    let lock = match daemon.lock_file(&config.settings.lockfile) {
        Ok(lock) => lock,
        Err(e) => {
            tracing::error!(pin, error = %e, "cannot read the lock: auditing without a baseline");
            Arc::new(None)
        }
    };
    let Some(pinned) = config.pins.iter().find(|p| p.id == pin) else {
        return;
    };
    let started = Utc::now();
    let request = Request {
        pins: vec![pinned],
        samples: None,
        max_cost: None,
        strict: false,
    };
    let ctx = Context {
        transport: &snapshot.transport,
        facts: Some(snapshot.facts.clone()),
        cancel: daemon.cancel_audits.clone(),
        progress: Arc::default(),
    };
    let report = audit(config, lock.as_ref().as_ref(), &request, &ctx)
        .await
        .report;
    let finished = Utc::now();
    let Some(pin_report) = report.pins.into_iter().next() else {
        return;
    };
    let record = AuditRecord {
        audit_id: audit_id(started),
        started_at: started,
        finished_at: finished,
        config_digest: report.config_digest,
        lock_digest: report.lock_digest,
        source: None,
        pin: pin_report,
    };
    daemon
        .last_audit
        .lock()
        .expect("last audit lock")
        .insert(pin.to_owned(), finished);
    metrics::record(&daemon.metrics, &record);
    let Some(queued) = commit_audit(daemon, config, &record).await else {
        return;
    };
    crate::fault::at(crate::fault::Point::AfterFlush);
    tracing::info!(
        pin,
        audit_id = %record.audit_id,
        status = record.pin.status.as_str(),
        findings = record.pin.findings.len(),
        "stored audit"
    );
    if !queued.is_empty() {
        tracing::info!(pin, audit_id = %record.audit_id, queued = queued.len(), "notifications queued");
        daemon.outbox_wake.send_modify(|n| *n += 1);
    }
}

/// Stores the audit with its alert state and notifications (one transaction). A failed write is
/// retried with capped backoff, reopening the store each time, until it succeeds or the daemon
/// stops: the record waits in memory meanwhile, and `/healthz` reports the store failing.
async fn commit_audit(
    daemon: &Daemon,
    config: &Config,
    record: &AuditRecord,
) -> Option<Vec<String>> {
    let keep = crate::alert::Keep::Audit;
    let mut wait = Duration::from_millis(500);
    loop {
        let generation = daemon.store.generation();
        match crate::alert::process(&daemon.store, config, record, keep).await {
            Ok(queued) => return Some(queued),
            Err(e) => {
                daemon.metrics.store_write_failed();
                tracing::error!(pin = %record.pin.id, audit_id = %record.audit_id, error = %e, retry_in_ms = wait.as_millis(), "audit NOT stored yet; retrying");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = daemon.cancel_audits.cancelled() => {
                tracing::error!(pin = %record.pin.id, audit_id = %record.audit_id, "audit NOT stored: stopping while the store fails");
                return None;
            }
        }
        if let Err(e) = daemon.store.recover(generation).await {
            tracing::warn!(error = %e, "store not reopened yet");
        }
        wait = (wait * 2).min(Duration::from_secs(10));
    }
}

/// Time-ordered and unique within one daemon: millis since the epoch plus a random suffix.
fn audit_id(at: DateTime<Utc>) -> String {
    format!(
        "{:013x}-{}",
        at.timestamp_millis(),
        &Uuid::new_v4().simple().to_string()[..8]
    )
}

enum SignalKind {
    Stop,
    Reload,
}

/// SIGTERM/SIGINT stop, SIGHUP reloads.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind as K, signal};
        Ok(Signals {
            term: signal(K::terminate())?,
            hup: signal(K::hangup())?,
        })
    }

    #[cfg(not(unix))]
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {})
    }

    async fn next(&mut self) -> SignalKind {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => SignalKind::Stop,
                _ = self.term.recv() => SignalKind::Stop,
                _ = self.hup.recv() => SignalKind::Reload,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            SignalKind::Stop
        }
    }
}
