//! `modelpin daemon`: scheduled audits, durable history, metrics and health, for months unattended.
//!
//! This module starts the daemon and stops it; each job is a module of its own (as tokio's
//! mini-redis `server.rs` owns its shutdown): `state` (what the tasks share, and health),
//! `scheduler` (the one loop: due pins, dispatch, catch-up, reload), `audit` (one pin's audit),
//! `commit` (the one way audits and traffic verdicts reach the store), `upkeep` (feeds and
//! pruning, never in the loop's way), `delivery` (one worker per alert channel), `signals`,
//! `http` with `auth`, `page` and `traffic`. Start-up opens the store and binds the listener
//! before anything runs, so a refusal is an exit code; the listener serves and the heartbeat
//! beats from the start, while the first feeds still load. On stop, the background tasks end in
//! the reverse order they started and the store is flushed.

pub mod audit;
pub mod auth;
pub mod budget;
pub mod commit;
mod delivery;
pub mod fleet;
pub mod http;
pub mod listener;
pub mod metrics;
pub mod page;
pub mod scheduler;
mod selection;
pub mod signals;
pub mod spend;
pub mod state;
pub mod traffic;
pub mod upkeep;

#[cfg(test)]
pub(crate) mod test_support;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::exit::Exit;
use crate::store::Store;

pub use selection::Selection;
pub use state::{Daemon, Parts, Snapshot};

/// How long running audits may finish after a shutdown signal before they are cancelled.
pub const GRACE: Duration = Duration::from_secs(10);

/// The daemon could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Io(String),
}

impl DaemonError {
    /// As the user reads it: a config's own diagnostics (file, line, column), or one problem.
    #[must_use]
    pub fn render(&self) -> String {
        use crate::problem::Explain as _;
        match self {
            DaemonError::Config(e) => e.to_string(),
            DaemonError::Store(e) => e.problem().to_string(),
            DaemonError::Io(message) => crate::problem::Problem::new(message.as_str()).to_string(),
        }
    }
}

/// Runs the daemon until SIGTERM or SIGINT; `Exit::Error` when it could not stop cleanly.
pub async fn run(
    config_path: &Path,
    reset_store: bool,
    pins: &[String],
    log: crate::logging::Style,
) -> Result<Exit, DaemonError> {
    let selection = Selection::new(pins)?;
    let config = selection.load(config_path)?;
    crate::logging::init(log, config.redactor(&|name| std::env::var(name).ok()));
    // The store before the port: a second daemon on the same store is told who holds it.
    let store = Store::open_for_daemon(&config.settings.store, reset_store)
        .await
        .map_err(DaemonError::Store)?;
    store.index_older_entries().await?;
    // Every daemon on a shared store is one of a fleet: it writes only while it leads.
    store.join_fleet();
    let listener = bind(&config).await?;
    let address = listener
        .local_addr()
        .map_err(|e| DaemonError::Io(format!("cannot read the listening address: {e}")))?;
    let daemon = Arc::new(start(config_path, selection, config, store)?);
    let refresh_facts = Arc::new(Notify::new());
    let background = spawn_background(&daemon, listener, address, &refresh_facts);
    let code = schedule(&daemon, refresh_facts).await;
    // The last spans are judged, then delivery stops (undelivered notifications stay in the
    // outbox and are sent after a restart), then upkeep and the listener.
    background.stop().await;
    if let Err(e) = daemon.store.flush().await {
        tracing::error!(error = %e, help = crate::problem::Explain::help(&e).as_deref(), "final flush failed");
        return Ok(Exit::Error);
    }
    if let Err(e) = daemon.store.close().await {
        tracing::error!(error = %e, help = crate::problem::Explain::help(&e).as_deref(), "the store was flushed but its header not written: the next start checks it as after a crash");
        return Ok(Exit::Error);
    }
    tracing::info!("daemon stopped");
    Ok(code)
}

/// The daemon's shared state, with everything else read once at start: the tokens and the
/// traces receiver's state.
fn start(
    config_path: &Path,
    selection: Selection,
    config: Config,
    store: Store,
) -> Result<Daemon, DaemonError> {
    let api_token = api_token(&config)?;
    let traffic = traffic::Traffic::new(&config)?;
    warn_if_public(&config);
    let daemon = Daemon::new(Parts {
        config_path: config_path.to_owned(),
        selection,
        snapshot: Snapshot::of(config).map_err(DaemonError::Io)?,
        store,
        api_token,
        traffic,
    });
    daemon.metrics.declare(&daemon.config());
    daemon.metrics.fleet(daemon.fleet.leads(), 0);
    Ok(daemon)
}

/// The listener first (the address it bound is logged), then upkeep (the first feed load starts
/// now, beside everything else), delivery and traffic judging.
fn spawn_background(
    daemon: &Arc<Daemon>,
    listener: tokio::net::TcpListener,
    address: std::net::SocketAddr,
    refresh_facts: &Arc<Notify>,
) -> Background {
    let mut background = Background::default();
    background.spawn(|stop| http::serve(daemon.clone(), listener, stop));
    background.spawn(|stop| fleet::run(daemon.clone(), stop));
    let config = daemon.config();
    // What the schedules will spend, said before the first audit.
    let lock = daemon.lock_file(&config.settings.lockfile).ok();
    let daily = spend::Daily::of(
        &config,
        lock.as_deref().and_then(Option::as_ref),
        chrono::Utc::now(),
    );
    tracing::info!(
        calls_per_day = daily.calls,
        usd_per_day = daily.usd,
        "{}",
        daily.describe()
    );
    // The address actually bound: `metrics = "127.0.0.1:0"` picks a free port.
    tracing::info!(url = %format!("http://{address}/"), store = %config.settings.store, pins = config.pins.len(), "daemon started: status page, /metrics and /healthz listening");
    let chores = {
        let daemon = daemon.clone();
        move |chore| upkeep::perform(daemon.clone(), chore)
    };
    background.spawn(|stop| upkeep::run(chores, refresh_facts.clone(), stop));
    background.spawn(|stop| delivery::run(daemon.clone(), stop));
    background.spawn(|stop| traffic::judge_loop(daemon.clone(), stop));
    background
}

/// Runs the scheduler, told by the process's signals, until it stops.
async fn schedule(daemon: &Arc<Daemon>, refresh_facts: Arc<Notify>) -> Exit {
    let (control, told) = mpsc::channel(4);
    let stop_signals = CancellationToken::new();
    let signals = match signals::forward(control, stop_signals.clone()) {
        Ok(task) => task,
        Err(e) => {
            tracing::error!(error = %e, "cannot listen for signals");
            return Exit::Error;
        }
    };
    let audit = |daemon: Arc<Daemon>, pin: String| async move {
        audit::audit_pin(&daemon, &pin).await;
    };
    let code = scheduler::Scheduler::new(daemon.clone(), told, refresh_facts, audit)
        .run()
        .await;
    stop_signals.cancel();
    let _ = signals.await;
    code
}

/// The tasks beside the scheduler, each with its own stop; stopped in the reverse order they
/// were started, each waited for.
#[derive(Default)]
struct Background {
    tasks: Vec<(CancellationToken, JoinHandle<()>)>,
}

impl Background {
    fn spawn<F>(&mut self, task: impl FnOnce(CancellationToken) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = CancellationToken::new();
        let handle = tokio::spawn(task(stop.clone()));
        self.tasks.push((stop, handle));
    }

    async fn stop(mut self) {
        while let Some((stop, task)) = self.tasks.pop() {
            stop.cancel();
            let _ = task.await;
        }
    }
}

async fn bind(config: &Config) -> Result<tokio::net::TcpListener, DaemonError> {
    let addr = config.settings.metrics;
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| DaemonError::Io(format!("cannot listen on {addr} (settings.metrics): {e}")))
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
