//! One scheduled audit of one pin: run it with the snapshot current when it starts, record it in
//! the metrics, and commit it (`commit`, until stored). The scheduler decides when; this says
//! what an audit is.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::alert::lifetime::{Lifetime, next_look};
use crate::audit::Plan;
use crate::audit::run::{Context, Request, audit};
use crate::config::{Config, Pin};
use crate::daemon::Daemon;
use crate::daemon::budget::{self, Budget};
use crate::daemon::commit::{self, Patience, audit_id};
use crate::lock::LoadedLock;
use crate::store::AuditRecord;
use crate::store::alerts::Accumulated;

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
    let lock = lock.as_ref().as_ref();
    let budget = Budget::of(config, pinned, lock);
    let lifetime = lifetime_of(config, pinned, &budget, lock, started);
    let (last, evidence) = match &lifetime {
        Some(lifetime) => last_behaviour(daemon, pin, &lifetime.basis).await,
        None => (None, None),
    };
    let behaviour = budget.due(last, started);
    if let Some(lifetime) = lifetime.as_ref().filter(|_| behaviour) {
        daemon
            .behaviour_at
            .lock()
            .expect("behaviour audits lock")
            .insert(pin.to_owned(), (lifetime.basis.clone(), started));
    }
    let lifetime = lifetime.map(|lifetime| Lifetime {
        next_behaviour: last.filter(|_| !behaviour).map(|l| budget.next_after(l)),
        ..lifetime
    });
    // A behaviour audit's tests resolve p-values down to its own look in the evidence.
    let resolve = lifetime
        .as_ref()
        .filter(|_| behaviour)
        .and_then(|l| next_look(evidence.as_ref(), l));
    let request = Request {
        resolve,
        ..budget::request(pinned, behaviour)
    };
    let ctx = Context {
        transport: &snapshot.transport,
        facts: Some(snapshot.facts.clone()),
        cancel: daemon.cancel_audits.clone(),
        progress: Arc::default(),
    };
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

/// How the pin's behaviour evidence accumulates: against its lock entry, at the behaviour
/// audits a year its schedule and budget make; `None` when it has no lock entry (no behaviour
/// tests run).
fn lifetime_of(
    config: &Config,
    pin: &Pin,
    budget: &Budget,
    lock: Option<&LoadedLock>,
    now: DateTime<Utc>,
) -> Option<Lifetime> {
    let entry = lock?.lock.pins.get(&pin.id)?;
    let bytes = serde_json::to_vec(entry).ok()?;
    Some(Lifetime {
        alpha: config.settings.alpha,
        false_alarms_per_year: config.settings.false_alarms_per_year,
        audits_per_year: crate::daemon::spend::audits_a_year(config, pin, budget, now),
        basis: crate::lock::digest(&bytes),
        next_behaviour: None,
    })
}

/// When the pin's last behaviour audit against the lock entry `basis` started: the later of
/// what the store holds (another daemon of the fleet, or this one before a restart) and what
/// this daemon ran (a store that failed to keep it, or cannot be read now); and the pin's
/// evidence as stored, when the store could say.
async fn last_behaviour(
    daemon: &Daemon,
    pin: &str,
    basis: &str,
) -> (Option<DateTime<Utc>>, Option<Accumulated>) {
    let evidence = match daemon.store.alert_state(pin).await {
        Ok(state) => state.accumulated.filter(|a| a.basis == basis),
        Err(e) => {
            tracing::warn!(pin, error = %e, "cannot read when the pin's last behaviour audit ran: counting from this daemon's own");
            None
        }
    };
    let stored = evidence.as_ref().and_then(|a| a.behaviour_at);
    let here = daemon
        .behaviour_at
        .lock()
        .expect("behaviour audits lock")
        .get(pin)
        .filter(|(b, _)| b == basis)
        .map(|(_, at)| *at);
    (stored.max(here), evidence)
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
