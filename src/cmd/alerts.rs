//! `modelpin alerts test` and the `check --notify` path: the same channels, outbox and dedup as
//! the daemon.

use std::time::Duration;

use chrono::Utc;
use serde_json::json;

use crate::alert::deliver::{Attempted, Deliverer, run_due};
use crate::alert::{AlertCode, AlertItem, AlertStatus, Keep, Notification};
use crate::cmd::AppError;
use crate::cmd::{Output, transport_for};
use crate::config::Config;
use crate::exit::Exit;
use crate::finding::Severity;
use crate::report::Report;
use crate::retry::RetryPolicy;
use crate::store::{AuditRecord, DeliveryState, Holder, Store, StoreError};

/// Sends a clearly marked test notification through each channel (or one); exit 1 if any failed.
pub async fn test(
    config_path: &std::path::Path,
    only: Option<&str>,
    out: Output,
) -> Result<Exit, AppError> {
    // Provider keys are not needed to test alert channels; their secrets are.
    let config = crate::config::load_for(
        config_path,
        crate::config::Needs {
            provider_keys: false,
            channel_secrets: crate::config::ChannelSecrets::Required,
        },
    )?;
    if let Some(name) = only
        && !config.alerts.iter().any(|c| c.name == name)
    {
        let known: Vec<&str> = config.alerts.iter().map(|c| c.name.as_str()).collect();
        return Err(AppError::Usage(format!(
            "no alert channel `{name}`; channels are: {}",
            known.join(", ")
        )));
    }
    let deliverer = deliverer(&config)?;
    let mut failed = 0;
    for channel in config
        .alerts
        .iter()
        .filter(|c| only.is_none_or(|n| n == c.name))
    {
        let n = test_notification(&channel.name);
        let line = match deliver_now(&deliverer, &n).await {
            Ok(attempts) => format!(
                "{}: delivered (notification {}, {attempts} attempt(s))\n",
                channel.name, n.id
            ),
            Err(why) => {
                failed += 1;
                format!("{}: FAILED: {why}\n", channel.name)
            }
        };
        crate::cmd::emit(&line);
    }
    if config.alerts.is_empty() {
        out.progress("no [alerts.NAME] channels are configured");
    }
    Ok(if failed > 0 { Exit::Failed } else { Exit::Ok })
}

fn deliverer(config: &Config) -> Result<Deliverer, AppError> {
    Ok(Deliverer {
        transport: transport_for(config)?,
        channels: config.alerts.clone(),
        timeout: config.settings.timeout.min(Duration::from_secs(10)),
    })
}

fn test_notification(channel: &str) -> Notification {
    let now = Utc::now();
    Notification {
        id: Notification::new_id(now),
        channel: channel.to_owned(),
        pin: "modelpin-test".to_owned(),
        provider: "-".to_owned(),
        model: "-".to_owned(),
        status: AlertStatus::Firing,
        alerts: vec![AlertItem {
            fingerprint: crate::alert::state::fingerprint(
                "modelpin-test",
                AlertCode::Test.as_str(),
            ),
            code: AlertCode::Test,
            severity: Some(Severity::Warning),
            status: AlertStatus::Firing,
            message: "TEST notification from `modelpin alerts test`: this channel works."
                .to_owned(),
            evidence: json!({ "test": true }),
            action: None,
            starts_at: now,
            ends_at: None,
        }],
        created_at: now,
        test: true,
        audit_id: None,
        source: None,
        url: None,
    }
}

/// Up to three attempts within 30 s, same id each time.
async fn deliver_now(deliverer: &Deliverer, n: &Notification) -> Result<u32, String> {
    let policy = RetryPolicy {
        max_attempts: 3,
        ..RetryPolicy::default()
    };
    let mut jitter = crate::retry::jitter_source();
    for attempt in 1..=policy.max_attempts {
        match deliverer.attempt(n).await {
            Attempted::Delivered => return Ok(attempt),
            Attempted::Failed(why) => return Err(why),
            Attempted::Retry { min_wait, reason } => {
                if attempt == policy.max_attempts {
                    return Err(format!("gave up after {attempt} attempts: {reason}"));
                }
                let wait = policy
                    .backoff(attempt, jitter())
                    .max(min_wait.unwrap_or_default());
                if wait > Duration::from_secs(30) {
                    return Err(format!(
                        "the receiver asked to wait {}: {reason}",
                        crate::transport::human_duration(wait)
                    ));
                }
                tokio::time::sleep(wait).await;
            }
        }
    }
    Err("no attempt was made".to_owned())
}

/// `check --notify`: the audit's pins through the alert state machine and the outbox, then
/// delivery for up to `WAIT`. Undelivered notifications stay in the outbox for the next run.
pub async fn notify(config: &Config, report: &Report, out: Output) -> Result<(), AppError> {
    let store = match Store::open_at(&config.settings.store, Holder::CheckNotify).await {
        Ok(store) => store,
        Err(StoreError::InUse { .. }) => {
            out.progress("notify: a daemon holds the store and sends its own notifications; nothing sent from this check");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let outcome = notify_on(&store, config, report, out).await;
    // Closed whatever happened, so the header records what the store holds.
    let closed = store.close().await;
    outcome?;
    Ok(closed?)
}

/// `notify` on the opened store.
async fn notify_on(
    store: &Store,
    config: &Config,
    report: &Report,
    out: Output,
) -> Result<(), AppError> {
    const WAIT: Duration = Duration::from_secs(30);
    let now = Utc::now();
    let mut queued = Vec::new();
    for pin in &report.pins {
        let record = AuditRecord {
            audit_id: format!("check-{}", Notification::new_id(now)),
            started_at: now,
            finished_at: now,
            config_digest: report.config_digest.clone(),
            lock_digest: report.lock_digest.clone(),
            source: None,
            pin: pin.clone(),
        };
        queued.extend(
            crate::alert::process(store, config, &record, Keep::AlertsOnly, None)
                .await?
                .queued,
        );
    }
    let deliverer = deliverer(config)?;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        run_due(store, &deliverer).await;
        let pending: Vec<_> = store
            .outbox_all()
            .await?
            .into_iter()
            .filter(|e| e.delivery.state == DeliveryState::Pending)
            .collect();
        // A receiver that refused twice will not answer within this check: say so now rather
        // than after the whole wait; the outbox keeps the notification for the next run.
        let hopeless = pending
            .iter()
            .filter(|e| queued.contains(&e.notification.id))
            .all(|e| e.delivery.attempts >= 2);
        let pending = pending.len();
        if pending == 0 || hopeless || tokio::time::Instant::now() >= deadline {
            summarize(store, &queued, pending, out).await?;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn summarize(
    store: &Store,
    queued: &[String],
    pending: usize,
    out: Output,
) -> Result<(), AppError> {
    let entries = store.outbox_all().await?;
    let mine = entries
        .iter()
        .filter(|e| queued.contains(&e.notification.id));
    let (mut delivered, mut failed) = (0, 0);
    for e in mine {
        match e.delivery.state {
            DeliveryState::Delivered => delivered += 1,
            DeliveryState::Failed | DeliveryState::Expired => {
                failed += 1;
                out.progress(&format!(
                    "notify: {} to `{}` failed: {}",
                    e.notification.id,
                    e.notification.channel,
                    e.delivery.last_error.as_deref().unwrap_or("unknown")
                ));
            }
            DeliveryState::Pending => out.progress(&format!(
                "notify: {} to `{}` NOT delivered yet ({} attempt{}): {}; it stays in the outbox",
                e.notification.id,
                e.notification.channel,
                e.delivery.attempts,
                if e.delivery.attempts == 1 { "" } else { "s" },
                e.delivery.last_error.as_deref().unwrap_or("no answer")
            )),
            DeliveryState::Superseded => {}
        }
    }
    out.progress(&format!(
        "notify: {} new notification(s): {delivered} delivered, {failed} failed; {pending} still pending in the outbox (sent by the next `check --notify` or the daemon)",
        queued.len()
    ));
    Ok(())
}
