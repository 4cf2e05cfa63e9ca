//! The one way a verdict reaches the store, for probe audits and traffic verdicts alike: the
//! record, its alert transitions and its notifications in one transaction (`alert::process`),
//! a failed write counted once and retried with capped backoff, the store recovered before each
//! retry (sled refuses every write after one failure until it is reopened), and the delivery
//! workers woken when notifications were queued — only then, so nothing is sent before it is on
//! disk.
//!
//! Only how long to keep trying differs. A probe audit waits in memory until it is stored or the
//! daemon stops (`/healthz` reports the store failing meanwhile); a traffic verdict gives up at
//! its deadline, since the pin's window is judged again at the next interval and judging must
//! never wait on a stuck store.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;
use uuid::Uuid;

use crate::alert::lifetime::Lifetime;
use crate::alert::{Keep, Processed};
use crate::config::Config;
use crate::daemon::Daemon;
use crate::store::AuditRecord;

/// The wait after the first failed write; it doubles up to `LAST_RETRY`.
const FIRST_RETRY: Duration = Duration::from_millis(500);
const LAST_RETRY: Duration = Duration::from_secs(10);

/// How long a commit keeps trying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// A probe audit: until stored, or until the daemon cancels running audits.
    UntilStored,
    /// A traffic verdict: until this instant.
    Until(Instant),
}

/// Why a verdict was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotStored {
    /// The daemon is stopping while the store fails.
    Stopping,
    /// The deadline passed.
    OutOfTime,
    /// This daemon no longer leads its fleet: the leader that does audits (and judges) again.
    Deposed,
}

/// Stores `record` (for `Keep::Audit`), weighed into its pin's accumulated evidence when
/// `weigh` says how, with its alert state and notifications; returns the notification ids
/// queued and the record as stored.
pub async fn commit(
    daemon: &Daemon,
    config: &Config,
    record: &AuditRecord,
    keep: Keep,
    weigh: Option<&Lifetime>,
    patience: Patience,
) -> Result<Processed, NotStored> {
    let mut wait = FIRST_RETRY;
    loop {
        if patience.passed() {
            return Err(NotStored::OutOfTime);
        }
        let generation = daemon.store.generation();
        match attempt(daemon, config, record, keep, weigh, patience).await {
            Ok(processed) => {
                crate::fault::at(crate::fault::Point::AfterFlush);
                if !processed.queued.is_empty() {
                    daemon.outbox_wake.send_modify(|n| *n += 1);
                }
                return Ok(processed);
            }
            Err(Attempt::Deposed) => {
                tracing::warn!(pin = %record.pin.id, audit_id = %record.audit_id, "{} NOT stored: this daemon no longer leads its fleet; the leader audits again", what(record));
                return Err(NotStored::Deposed);
            }
            Err(Attempt::Failed(e)) => {
                daemon.metrics.store_write_failed();
                tracing::error!(pin = %record.pin.id, audit_id = %record.audit_id, error = %e, retry_in_ms = wait.as_millis(), "{} NOT stored yet; retrying", what(record));
            }
        }
        pause(daemon, record, patience, wait).await?;
        if let Err(e) = daemon.store.recover(generation).await {
            tracing::warn!(error = %e, help = crate::problem::Explain::help(&e).as_deref(), "store not reopened yet");
        }
        wait = (wait * 2).min(LAST_RETRY);
    }
}

impl Patience {
    fn passed(self) -> bool {
        matches!(self, Patience::Until(deadline) if Instant::now() >= deadline)
    }
}

/// One try; a traffic verdict's is cut short at its deadline.
async fn attempt(
    daemon: &Daemon,
    config: &Config,
    record: &AuditRecord,
    keep: Keep,
    weigh: Option<&Lifetime>,
    patience: Patience,
) -> Result<Processed, Attempt> {
    let process = crate::alert::process(&daemon.store, config, record, keep, weigh);
    let done = match patience {
        Patience::UntilStored => process.await,
        Patience::Until(deadline) => match tokio::time::timeout_at(deadline, process).await {
            Ok(done) => done,
            Err(_) => {
                return Err(Attempt::Failed(
                    "no answer from the store in time".to_owned(),
                ));
            }
        },
    };
    done.map_err(|e| match e {
        crate::store::StoreError::Deposed { .. } => Attempt::Deposed,
        e => {
            use crate::problem::Explain as _;
            let problem = e.problem();
            Attempt::Failed(match problem.help {
                Some(help) => format!("{} (help: {help})", problem.message),
                None => problem.message,
            })
        }
    })
}

/// Why one try did not store the verdict.
enum Attempt {
    /// Refused by the fleet's lease: retrying cannot help.
    Deposed,
    Failed(String),
}

/// Waits `wait` before the next try; ends early when the daemon stops (an audit) or the deadline
/// comes first (a traffic verdict).
async fn pause(
    daemon: &Daemon,
    record: &AuditRecord,
    patience: Patience,
    wait: Duration,
) -> Result<(), NotStored> {
    match patience {
        Patience::UntilStored => tokio::select! {
            () = tokio::time::sleep(wait) => Ok(()),
            () = daemon.cancel_audits.cancelled() => {
                tracing::error!(pin = %record.pin.id, audit_id = %record.audit_id, "audit NOT stored: stopping while the store fails");
                Err(NotStored::Stopping)
            }
        },
        Patience::Until(deadline) => {
            tokio::time::sleep_until(deadline.min(Instant::now() + wait)).await;
            if Instant::now() >= deadline {
                tracing::error!(pin = %record.pin.id, "traffic verdict NOT stored; judged again next interval");
                return Err(NotStored::OutOfTime);
            }
            Ok(())
        }
    }
}

fn what(record: &AuditRecord) -> &'static str {
    match record.source {
        None => "audit",
        Some(crate::store::RecordSource::Traffic) => "traffic verdict",
    }
}

/// A record id: time-ordered and unique within one daemon (millis since the epoch plus a random
/// suffix).
pub(crate) fn audit_id(at: DateTime<Utc>) -> String {
    format!(
        "{:013x}-{}",
        at.timestamp_millis(),
        &Uuid::new_v4().simple().to_string()[..8]
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{NotStored, Patience, commit};
    use crate::alert::Keep;
    use crate::config::tests_support::minimal_config;
    use crate::daemon::test_support::{daemon_with, metric};
    use crate::store::tests::record;

    const FAILURES: &str = "modelpin_store_write_failures_total";

    #[tokio::test(start_paused = true)]
    async fn a_refused_write_is_retried_counted_once_per_failure_and_stored_once() {
        let t = daemon_with(minimal_config()).await;
        let config = t.daemon.config();
        let audit = record("support-bot", 100, "a1");
        t.daemon.store.refuse_writes(3);
        let start = Instant::now();
        let stored = commit(
            &t.daemon,
            &config,
            &audit,
            Keep::Audit,
            None,
            Patience::UntilStored,
        )
        .await;
        assert_eq!(stored.map(|s| s.queued), Ok(Vec::new()));
        assert_eq!(metric(&t.daemon, FAILURES), Some(3.0));
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(500 + 1000 + 2000),
            "backoff"
        );
        assert_eq!(t.daemon.store.history(None, None).await.unwrap(), [audit]);
        assert!(t.daemon.store.failing().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn an_audit_the_store_refuses_until_the_daemon_stops_is_given_up() {
        let t = daemon_with(minimal_config()).await;
        let config = t.daemon.config();
        let audit = record("support-bot", 100, "a1");
        t.daemon.store.refuse_writes(u32::MAX);
        let cancel = t.daemon.cancel_audits.clone();
        let stop = async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            cancel.cancel();
        };
        let (stored, ()) = tokio::join!(
            commit(
                &t.daemon,
                &config,
                &audit,
                Keep::Audit,
                None,
                Patience::UntilStored
            ),
            stop
        );
        assert_eq!(stored.map(|s| s.queued), Err(NotStored::Stopping));
        // Attempts at 0, 0.5, 1.5, 3.5, 7.5 and 15.5 s, then every 10 s: 10 within the minute.
        assert_eq!(metric(&t.daemon, FAILURES), Some(10.0));
        assert!(
            t.daemon.store.failing().is_some(),
            "the health check says so"
        );
    }
}
