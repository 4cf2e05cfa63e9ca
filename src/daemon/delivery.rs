//! The daemon's delivery workers: one per channel (those configured now, and any with
//! notifications waiting), so a slow or dead receiver delays only its own queue. A worker is
//! woken by every commit that queued notifications and otherwise sleeps until its next retry is
//! due (at most `IDLE`); the channel is read from the current config on every pass, so a reload
//! applies.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use chrono::Utc;

use crate::daemon::Daemon;

/// The longest a worker sleeps with nothing due: a bound on how late a notification whose wake
/// was missed (a store write that failed after queueing) is sent.
const IDLE: Duration = Duration::from_secs(60);
/// The shortest: a queue whose head is due but was not sent (its outbox update failed) is tried
/// again after this, not at once.
const AGAIN: Duration = Duration::from_secs(1);

/// Starts a worker for each channel as it appears; stops them all on `stop`. Undelivered
/// notifications stay in the outbox and are sent after a restart.
pub async fn run(daemon: Arc<Daemon>, stop: CancellationToken) {
    let mut workers = JoinSet::new();
    let mut started: HashSet<String> = HashSet::new();
    loop {
        let mut names: HashSet<String> = daemon
            .config()
            .alerts
            .iter()
            .map(|c| c.name.clone())
            .collect();
        names.extend(daemon.store.channels_waiting().await.unwrap_or_default());
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

/// Drains one channel's queue until `stop`.
async fn channel_worker(daemon: Arc<Daemon>, channel: String, stop: CancellationToken) {
    let mut wake = daemon.outbox_wake.subscribe();
    loop {
        // A standby sends nothing: the leader does, once.
        tokio::select! {
            () = daemon.fleet.until_leading() => {}
            () = stop.cancelled() => return,
        }
        let deliverer = daemon.deliverer();
        tokio::select! {
            outcomes = crate::alert::deliver::run_channel(&daemon.store, &deliverer, &channel) => {
                for outcome in outcomes {
                    daemon.metrics.notification(&outcome.channel, outcome.result);
                }
            }
            () = stop.cancelled() => return,
        }
        let wait = match crate::alert::deliver::next_due(&daemon.store, &channel).await {
            Some(due) => (due - Utc::now())
                .to_std()
                .map_or(AGAIN, |d| d.clamp(AGAIN, IDLE)),
            None => IDLE,
        };
        tokio::select! {
            _ = wake.changed() => {}
            () = tokio::time::sleep(wait) => {}
            () = stop.cancelled() => return,
        }
    }
}
