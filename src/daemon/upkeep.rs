//! Upkeep: lifecycle feeds loaded and history pruned, as a task of its own beside the scheduler.
//!
//! A feed download can take as long as `settings.timeout`; awaited inside the scheduler's loop it
//! stopped dispatch, signals and the heartbeat for that long (`/healthz` failed after 5 s of a
//! slow feed). Here it can be as slow as it likes: the loop never waits on it, and neither does
//! an audit. The first load starts at once, while the listener already serves and the loop
//! already runs; audits started before it finishes use the facts at hand (the built-in table,
//! local feeds and the last downloaded copy of each remote one). Then feeds
//! are refreshed and history pruned every hour, the first time an hour after start, and the
//! feeds again whenever a reload asks (`refresh`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::Notify;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::audit::lifecycle::load_facts;
use crate::daemon::Daemon;

/// How often feeds are refreshed and history is pruned.
pub const EVERY: Duration = Duration::from_secs(3600);

/// One piece of upkeep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chore {
    /// The built-in table and the feeds, loaded for the current config.
    LoadFacts,
    /// History past `settings.retention` removed.
    Prune,
}

/// Runs `chore` for each piece of upkeep until `stop`: the facts at once, both every `EVERY`
/// from start, the facts again on each `refresh`. A chore in progress is abandoned at `stop`.
pub async fn run<C, F>(chore: C, refresh: Arc<Notify>, stop: CancellationToken)
where
    C: Fn(Chore) -> F,
    F: Future<Output = ()>,
{
    let mut hourly = tokio::time::interval_at(Instant::now() + EVERY, EVERY);
    hourly.set_missed_tick_behavior(MissedTickBehavior::Delay);
    if !until_stopped(&stop, chore(Chore::LoadFacts)).await {
        return;
    }
    loop {
        let chores: &[Chore] = tokio::select! {
            _ = hourly.tick() => &[Chore::LoadFacts, Chore::Prune],
            () = refresh.notified() => &[Chore::LoadFacts],
            () = stop.cancelled() => return,
        };
        for c in chores {
            if !until_stopped(&stop, chore(*c)).await {
                return;
            }
        }
    }
}

/// Runs `work` unless `stop` comes first; `false` when it did.
async fn until_stopped(stop: &CancellationToken, work: impl Future<Output = ()>) -> bool {
    tokio::select! {
        () = work => true,
        () = stop.cancelled() => false,
    }
}

/// The daemon's own chores.
pub async fn perform(daemon: Arc<Daemon>, chore: Chore) {
    match chore {
        Chore::LoadFacts => load(&daemon).await,
        Chore::Prune => prune(&daemon).await,
    }
}

/// Loads the table and the feeds for the current config; a failing feed keeps its cached copy
/// (a warning). Facts loaded for a config a reload has replaced meanwhile are dropped: the
/// reload asked for a load of its own.
async fn load(daemon: &Daemon) {
    let now = daemon.snapshot();
    let facts = load_facts(&now.config, &now.transport).await;
    for warning in &facts.warnings {
        tracing::warn!(%warning, "lifecycle feed");
    }
    daemon.swap_facts(&now.config, Arc::new(facts));
}

async fn prune(daemon: &Daemon) {
    let retention = daemon.config().settings.retention;
    // A retention longer than the calendar reaches back keeps everything.
    let Some(cutoff) = crate::config::ago(retention, Utc::now()) else {
        return;
    };
    if !daemon.fleet.leads() {
        return;
    }
    match daemon.store.prune(cutoff).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(removed = n, "pruned audit history past the retention"),
        Err(e) => {
            tracing::error!(error = %e, help = crate::problem::Explain::help(&e).as_deref(), "pruning failed");
        }
    }
    match daemon.store.prune_outbox(cutoff).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            removed = n,
            "pruned finished notifications past the retention"
        ),
        Err(e) => {
            tracing::error!(error = %e, help = crate::problem::Explain::help(&e).as_deref(), "pruning the outbox failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::sync::Notify;
    use tokio::time::{Instant, sleep};
    use tokio_util::sync::CancellationToken;

    use super::{Chore, EVERY, perform, run};

    const SECOND: Duration = Duration::from_secs(1);
    use crate::config::tests_support::minimal_config;
    use crate::daemon::test_support::daemon_with;
    use crate::store::tests::record;

    #[tokio::test(start_paused = true)]
    async fn upkeep_loads_facts_at_once_then_runs_an_hour_after_start_and_not_before() {
        let start = Instant::now();
        let done: Arc<Mutex<Vec<(Chore, u64)>>> = Arc::default();
        let chore = |chore| {
            done.lock()
                .unwrap()
                .push((chore, start.elapsed().as_secs()));
            async {}
        };
        let refresh = Arc::new(Notify::new());
        let stop = CancellationToken::new();
        let driver = async {
            sleep(EVERY.saturating_sub(SECOND)).await;
            assert_eq!(*done.lock().unwrap(), [(Chore::LoadFacts, 0)]);
            sleep(2 * SECOND).await;
            assert_eq!(
                *done.lock().unwrap(),
                [
                    (Chore::LoadFacts, 0),
                    (Chore::LoadFacts, 3600),
                    (Chore::Prune, 3600)
                ]
            );
            // A reload asks for the feeds of its config at once.
            refresh.notify_one();
            sleep(SECOND).await;
            assert_eq!(done.lock().unwrap().last(), Some(&(Chore::LoadFacts, 3601)));
            stop.cancel();
        };
        tokio::join!(run(chore, refresh.clone(), stop.clone()), driver);
    }

    #[tokio::test]
    async fn the_daemon_s_chores_load_the_facts_and_prune_past_the_retention() {
        let t = daemon_with(minimal_config()).await;
        let before = t.daemon.snapshot().facts.clone();
        perform(t.daemon.clone(), Chore::LoadFacts).await;
        assert!(!Arc::ptr_eq(&before, &t.daemon.snapshot().facts), "loaded");
        let recent = chrono::Utc::now().timestamp();
        t.daemon
            .store
            .append(&record("support-bot", 100, "old"))
            .await
            .unwrap();
        let fresh = record("support-bot", recent, "fresh");
        t.daemon.store.append(&fresh).await.unwrap();
        perform(t.daemon.clone(), Chore::Prune).await;
        assert_eq!(t.daemon.store.history(None, None).await.unwrap(), [fresh]);
    }
}
