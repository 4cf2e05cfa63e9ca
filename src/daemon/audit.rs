//! One scheduled audit of one pin: run it with the snapshot current when it starts, record it in
//! the metrics, and commit it (`commit`, until stored). The scheduler decides when; this says
//! what an audit is.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::alert::lifetime::Lifetime;
use crate::audit::Plan;
use crate::audit::run::{Context, Request, audit};
use crate::config::Config;
use crate::daemon::Daemon;
use crate::daemon::commit::{self, Patience, audit_id};
use crate::lock::LoadedLock;
use crate::store::AuditRecord;

/// Runs one pin's audit, stores it, and updates the metrics.
pub async fn audit_pin(daemon: &Daemon, pin: &str) {
    // No wait for the feeds: the snapshot holds the facts at hand (the built-in table, local
    // feeds, the last downloaded copies) until upkeep's download replaces them.
    let snapshot = daemon.snapshot();
    let config = &snapshot.config;
    let lock = match daemon.lock_file(&config.settings.lockfile) {
        Ok(lock) => lock,
        Err(e) => {
            tracing::error!(pin, error = %e, help = crate::problem::Explain::help(&e).as_deref(), "cannot read the lock: auditing without a baseline");
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
    let lock = lock.as_ref().as_ref();
    let lifetime = lifetime_of(config, pin, lock, started);
    let plan = Plan::for_audit(config, &request, ctx.watch(), lock);
    let report = audit(&plan, lock, &ctx).await.report;
    if let Some(breakers) = snapshot.transport.breakers() {
        daemon.metrics.breakers(breakers);
    }
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
    store(daemon, config, &record, lifetime.as_ref()).await;
}

/// How the pin's behaviour evidence accumulates: against its lock entry, at its schedule's
/// audits a year; `None` when it has no lock entry (no behaviour tests run).
fn lifetime_of(
    config: &Config,
    pin: &str,
    lock: Option<&LoadedLock>,
    now: DateTime<Utc>,
) -> Option<Lifetime> {
    let entry = lock?.lock.pins.get(pin)?;
    let bytes = serde_json::to_vec(entry).ok()?;
    Some(Lifetime {
        alpha: config.settings.alpha,
        false_alarms_per_year: config.settings.false_alarms_per_year,
        audits_per_year: crate::daemon::spend::audits_a_year(config, pin, now),
        basis: crate::lock::digest(&bytes),
    })
}

/// The audit's spend in the metrics; then the audit, weighed into its pin's evidence, in the
/// store, and what it found in the metrics; logged as stored only once it is on disk.
async fn store(
    daemon: &Daemon,
    config: &Config,
    record: &AuditRecord,
    lifetime: Option<&Lifetime>,
) {
    let pin = record.pin.id.as_str();
    daemon
        .last_audit
        .lock()
        .expect("last audit lock")
        .insert(pin.to_owned(), record.finished_at);
    // Spend is known now; what the audit found waits for the store to weigh and keep it.
    crate::daemon::metrics::spent(&daemon.metrics, record);
    let keep = crate::alert::Keep::Audit;
    let patience = Patience::UntilStored;
    let Ok(processed) = commit::commit(daemon, config, record, keep, lifetime, patience).await
    else {
        return;
    };
    let record = processed.record.as_ref().unwrap_or(record);
    crate::daemon::metrics::judged(&daemon.metrics, record);
    let queued = processed.queued;
    tracing::info!(
        pin,
        audit_id = %record.audit_id,
        status = record.pin.status.as_str(),
        findings = record.pin.findings.len(),
        "stored audit"
    );
    if !queued.is_empty() {
        tracing::info!(pin, audit_id = %record.audit_id, queued = queued.len(), "notifications queued");
    }
}
