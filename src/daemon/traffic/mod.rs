//! `POST /v1/traces`: the application's own LLM calls, as OpenTelemetry GenAI spans, judged by
//! the probe rules at no probe cost.
//!
//! Bounded at every step, since anything that can reach the listener can send: bodies being read
//! hold at most `[traffic] max_requests` × `otlp::MAX_BODY` bytes together, counted as they
//! arrive (a client that declares a length and sends nothing holds nothing), and each must keep
//! up a minimum rate; at most `max_requests` bodies are decoded at once. A body that finds either
//! full is answered 429 with `Retry-After` (the OTLP/HTTP back-pressure signal; exporters retry)
//! instead of queueing. Each pin keeps only its newest `[traffic] window` spans. Every `[traffic] interval` the pins that received spans are
//! judged; the verdict is committed like an audit's (`commit`: alert state machine, outbox,
//! failures counted and retried), with its own alert state, so traffic and probes never resolve
//! each other's alerts, and into history when it changed or `KEEP_EVERY` passed, marked as
//! traffic. A verdict not stored within the pass's deadline is judged again at the next pass.

mod receive;

pub use receive::receive;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::daemon::commit::{self, Patience, audit_id};
use crate::daemon::{Daemon, DaemonError};
use crate::finding::{Code, PinStatus};
use crate::provider::Secret;
use crate::store::{AuditRecord, RecordSource};
use crate::traffic::budget::{self, Others};
use crate::traffic::spans::GenAiSpan;

/// Served-model label values exported per pin; more become `(other)`, so a provider answering
/// with ever-new IDs cannot grow the metrics without bound.
const SERVED_LABELS: usize = 16;

/// A pass of judging whose verdicts are not committed by then gives them up (each pin is judged
/// again at the next interval); judging never waits long on a stuck store.
const COMMIT_DEADLINE: Duration = Duration::from_secs(10);

/// An unchanged traffic verdict is written to history at most this often.
const KEEP_EVERY: Duration = Duration::from_secs(600);

/// Traffic records written per pin per `KEEP_EVERY` window, changed or not: a verdict that
/// flips at every interval (served IDs that churn) writes at most this many; the verdicts past
/// it are counted and the count is written with the pin's next record (`capped.verdicts`).
/// With `budget::MAX_RECORD` this bounds what traffic writes to history per pin:
/// 6 windows an hour × `KEPT_PER_WINDOW` × 16 KiB = 576 KiB an hour.
pub const KEPT_PER_WINDOW: u32 = 6;

/// What the receiver holds between requests and judgments.
pub struct Traffic {
    windows: Mutex<BTreeMap<String, Window>>,
    /// Served-model label values exported so far, per pin.
    labels: Mutex<BTreeMap<String, BTreeSet<String>>>,
    /// Bodies decoded at once.
    slots: Arc<Semaphore>,
    /// Bytes of bodies being read, taken as they arrive.
    bodies: Arc<Semaphore>,
    token: Option<Secret>,
    /// Set when judging has stopped (the daemon is shutting down): spans are refused with 503,
    /// which exporters retry, rather than accepted and never judged.
    closed: AtomicBool,
}

#[derive(Default)]
struct Window {
    spans: VecDeque<GenAiSpan>,
    /// Spans arrived since the last judgment.
    fresh: bool,
    /// The last verdict written to history, and when.
    kept: Option<(Verdict, Instant)>,
    /// The records written in the current `KEEP_EVERY` window and the verdicts not written.
    quota: Quota,
}

/// What one pin's traffic wrote to history in the current window.
#[derive(Debug, Default)]
struct Quota {
    started: Option<Instant>,
    written: u32,
    /// Verdicts that would have been written but for the quota, and the spans they judged,
    /// since the last record written.
    unkept: Others,
}

/// Whether a verdict goes to history, and what the quota held back before it.
#[derive(Debug, PartialEq, Eq)]
enum Kept {
    Write { unkept: Others },
    Skip,
}

/// What makes two traffic verdicts the same for history.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verdict {
    status: PinStatus,
    codes: Vec<Code>,
    served: Served,
}

/// The served IDs a verdict names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Served {
    Ids(Vec<String>),
    /// The map was capped (ever-new served IDs): one verdict whatever its first IDs are.
    Capped,
}

/// Spans of one request, by what became of them.
#[derive(Debug, Default)]
struct Admitted {
    matched: u64,
    unmatched: u64,
    /// (pin, served label) → spans.
    served: BTreeMap<(String, String), u64>,
}

impl Traffic {
    /// The receiver's state; the token comes from the variable `[traffic] token_env` names,
    /// and an unset variable is an error, never an open endpoint.
    pub fn new(config: &Config) -> Result<Traffic, DaemonError> {
        let token = match &config.traffic.token_env {
            // The variable matters only to a receiver that is on.
            _ if !config.traffic.enabled => None,
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(token) if !token.is_empty() => Some(Secret::new(token)),
                _ => {
                    return Err(DaemonError::Io(format!(
                        "environment variable `{var}` ([traffic] token_env, the /v1/traces bearer token) is not set"
                    )));
                }
            },
        };
        Ok(Traffic {
            windows: Mutex::new(BTreeMap::new()),
            labels: Mutex::new(BTreeMap::new()),
            slots: Arc::new(Semaphore::new(config.traffic.max_requests)),
            bodies: Arc::new(Semaphore::new(
                config.traffic.max_requests * crate::traffic::otlp::MAX_BODY,
            )),
            token,
            closed: AtomicBool::new(false),
        })
    }

    /// Puts each span that matches a pin into that pin's window, dropping the oldest: `sort`
    /// then `window`, the path of a daemon on a store of its own.
    #[cfg(test)]
    fn admit(&self, config: &Config, spans: Vec<GenAiSpan>) -> Admitted {
        let (admitted, matched) = self.sort(config, spans);
        self.window(config, matched);
        admitted
    }

    /// The spans that match a pin, and what became of each span for the metrics (its served
    /// model's label, capped per pin).
    fn sort(&self, config: &Config, spans: Vec<GenAiSpan>) -> (Admitted, Vec<GenAiSpan>) {
        let mut out = Admitted::default();
        let mut matched = Vec::with_capacity(spans.len());
        let mut labels = self.labels.lock().expect("traffic labels");
        for span in spans {
            let Some(pin) = crate::traffic::pin_for(config, &span) else {
                out.unmatched += 1;
                continue;
            };
            out.matched += 1;
            let seen = labels.entry(pin.id.clone()).or_default();
            let served = span.served.clone().unwrap_or_else(|| "(none)".to_owned());
            let label = if seen.contains(&served) || seen.len() < SERVED_LABELS {
                seen.insert(served.clone());
                served
            } else {
                "(other)".to_owned()
            };
            *out.served.entry((pin.id.clone(), label)).or_default() += 1;
            matched.push(span);
        }
        (out, matched)
    }

    /// Puts each span that matches a pin now into that pin's window, dropping the oldest.
    fn window(&self, config: &Config, spans: Vec<GenAiSpan>) {
        let mut windows = self.windows.lock().expect("traffic windows");
        for span in spans {
            let Some(pin) = crate::traffic::pin_for(config, &span) else {
                continue;
            };
            let window = windows.entry(pin.id.clone()).or_default();
            window.spans.push_back(span);
            // A loop, not one pop: `window` may have shrunk on reload.
            while window.spans.len() > config.traffic.window {
                window.spans.pop_front();
            }
            window.fresh = true;
        }
    }

    /// The pins that received spans since the last call, marked judged.
    fn take_fresh(&self) -> Vec<String> {
        let mut windows = self.windows.lock().expect("traffic windows");
        windows
            .iter_mut()
            .filter(|(_, w)| w.fresh)
            .map(|(pin, w)| {
                w.fresh = false;
                pin.clone()
            })
            .collect()
    }

    /// A copy of one pin's window: pins are judged one at a time, so at most one copy exists.
    fn spans_of(&self, pin: &str) -> Vec<GenAiSpan> {
        let windows = self.windows.lock().expect("traffic windows");
        windows
            .get(pin)
            .map(|w| w.spans.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether this verdict (judged over `spans`) goes to history: it differs from the last
    /// kept, that is old, or verdicts were held back since; and the window's quota allows.
    fn keep(&self, pin: &str, verdict: Verdict, spans: u64) -> Kept {
        let mut windows = self.windows.lock().expect("traffic windows");
        let window = windows.entry(pin.to_owned()).or_default();
        let now = Instant::now();
        let quota = &mut window.quota;
        if quota
            .started
            .is_none_or(|at| now.duration_since(at) >= KEEP_EVERY)
        {
            quota.started = Some(now);
            quota.written = 0;
        }
        let stale = quota.unkept.ids > 0
            || window
                .kept
                .as_ref()
                .is_none_or(|(kept, at)| *kept != verdict || at.elapsed() >= KEEP_EVERY);
        if !stale {
            return Kept::Skip;
        }
        if quota.written >= KEPT_PER_WINDOW {
            quota.unkept.ids += 1;
            quota.unkept.count += spans;
            return Kept::Skip;
        }
        quota.written += 1;
        window.kept = Some((verdict, now));
        Kept::Write {
            unkept: std::mem::take(&mut quota.unkept),
        }
    }

    /// A verdict that could not be committed: judged again at the next tick, and not taken as
    /// kept in history.
    fn retry(&self, pin: &str) {
        let mut windows = self.windows.lock().expect("traffic windows");
        if let Some(window) = windows.get_mut(pin) {
            window.fresh = true;
            window.kept = None;
        }
    }

    /// Verdicts counted in a record that was not stored: counted again for the next.
    fn hold_back(&self, pin: &str, unkept: Others) {
        let mut windows = self.windows.lock().expect("traffic windows");
        if let Some(window) = windows.get_mut(pin) {
            window.quota.unkept.ids += unkept.ids;
            window.quota.unkept.count += unkept.count;
        }
    }

    /// Forgets the windows of pins no longer configured (on reload).
    pub(crate) fn forget_unconfigured(&self, config: &Config) {
        let mut windows = self.windows.lock().expect("traffic windows");
        windows.retain(|pin, _| config.pins.iter().any(|p| &p.id == pin));
        drop(windows);
        let mut labels = self.labels.lock().expect("traffic labels");
        labels.retain(|pin, _| config.pins.iter().any(|p| &p.id == pin));
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// Judges the pins that received spans, every `[traffic] interval`, until `stop`; then closes
/// the receiver and judges what arrived since the last tick once more.
pub async fn judge_loop(daemon: Arc<Daemon>, stop: CancellationToken) {
    loop {
        let interval = daemon.config().traffic.interval;
        let stopping = tokio::select! {
            () = tokio::time::sleep(interval) => false,
            () = stop.cancelled() => true,
        };
        if stopping {
            daemon.traffic.closed.store(true, Ordering::Relaxed);
        }
        // Only the fleet's leader judges (and so alerts); see `fleet`. In a fleet, the spans
        // every member accepted wait in the store's inbox until then.
        if daemon.fleet.leads() {
            take_inbox(&daemon).await;
            judge_fresh(&daemon, Instant::now() + COMMIT_DEADLINE).await;
        }
        if stopping {
            return;
        }
    }
}

/// Passes of `take_inbox` at most per tick: each takes `store::INBOX_TAKE` batches; what is left
/// waits for the next tick.
const TAKES_PER_TICK: usize = 4;

/// On a fleet's store, moves the spans any member accepted from the inbox into this leader's
/// windows, oldest first. A batch that does not decode (written by another version) is
/// dropped with a warning naming how many.
async fn take_inbox(daemon: &Daemon) {
    if !daemon.store.is_shared() {
        return;
    }
    let config = daemon.config();
    for _ in 0..TAKES_PER_TICK {
        let batches = match daemon.store.take_spans().await {
            Ok(batches) => batches,
            Err(e) => {
                tracing::warn!(error = %e, "traffic spans could not be taken from the fleet's inbox; they wait there for the next pass");
                return;
            }
        };
        let (mut undecodable, taken) = (0usize, batches.len());
        for batch in batches {
            match serde_json::from_slice::<Vec<GenAiSpan>>(&batch) {
                Ok(spans) => daemon.traffic.window(&config, spans),
                Err(_) => undecodable += 1,
            }
        }
        if undecodable > 0 {
            tracing::warn!(
                batches = undecodable,
                "traffic span batches in the fleet's inbox did not decode (written by another modelpin version?) and were dropped"
            );
        }
        if taken < crate::store::INBOX_TAKE as usize {
            return;
        }
    }
}

/// Judges every pin that received spans since the last pass; a pin whose verdict is not stored
/// by `deadline` (one for the whole pass) is judged again at the next.
pub(crate) async fn judge_fresh(daemon: &Daemon, deadline: Instant) {
    for pin in daemon.traffic.take_fresh() {
        let spans = daemon.traffic.spans_of(&pin);
        if !judge_pin(daemon, &pin, &spans, deadline).await {
            daemon.traffic.retry(&pin);
        }
    }
}

/// Judges one pin's window and commits the verdict; false when the commit failed.
async fn judge_pin(daemon: &Daemon, pin: &str, spans: &[GenAiSpan], deadline: Instant) -> bool {
    let snapshot = daemon.snapshot();
    let config = &snapshot.config;
    let Some(pinned) = config.pins.iter().find(|p| p.id == pin) else {
        return true;
    };
    let lock = daemon
        .lock_file(&config.settings.lockfile)
        .unwrap_or_else(|_| Arc::new(None));
    let lock = lock.as_ref().as_ref();
    let started = Utc::now();
    // Only the spans that still match the pin as configured now: a reload may have changed
    // its model or narrowed the allow-lists since they arrived.
    let refs: Vec<&GenAiSpan> = spans
        .iter()
        .filter(|s| crate::traffic::pin_for(config, s).is_some_and(|p| p.id == pin))
        .collect();
    if refs.is_empty() {
        return true;
    }
    let report = crate::traffic::pin_report(config, lock, pinned, &refs, &snapshot.facts);
    let mut record = AuditRecord {
        audit_id: audit_id(started),
        started_at: started,
        finished_at: Utc::now(),
        config_digest: config.digest.clone(),
        lock_digest: lock.map(|l| l.digest.clone()),
        pin: report,
        source: Some(RecordSource::Traffic),
    };
    budget::cap_record(&mut record);
    daemon.metrics.traffic_verdict(&record.pin);
    let kept = daemon
        .traffic
        .keep(pin, verdict_of(&record), refs.len() as u64);
    let keep = match kept {
        Kept::Write { unkept } => {
            if unkept.ids > 0 {
                record.pin.capped.insert("verdicts".to_owned(), unkept);
            }
            crate::alert::Keep::Audit
        }
        Kept::Skip => crate::alert::Keep::AlertsOnly,
    };
    let patience = Patience::Until(deadline);
    let Ok(processed) = commit::commit(daemon, config, &record, keep, None, patience).await else {
        // The count held back goes with the next record instead.
        if let Kept::Write { unkept } = kept {
            daemon.traffic.hold_back(pin, unkept);
        }
        return false;
    };
    if !processed.queued.is_empty() {
        tracing::info!(
            pin,
            queued = processed.queued.len(),
            "traffic: notifications queued"
        );
    }
    true
}

/// What makes the verdict the same as an earlier one for history.
fn verdict_of(record: &AuditRecord) -> Verdict {
    Verdict {
        status: record.pin.status,
        codes: record.pin.findings.iter().map(|f| f.code).collect(),
        served: if record.pin.capped.contains_key("served_models") {
            Served::Capped
        } else {
            Served::Ids(record.pin.served_models.keys().cloned().collect())
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{KEPT_PER_WINDOW, Kept, Others, SERVED_LABELS, Served, Traffic, Verdict};
    use crate::config::tests_support::minimal_config;
    use crate::finding::PinStatus;
    use crate::traffic::spans::GenAiSpan;

    fn span(served: &str) -> GenAiSpan {
        GenAiSpan {
            requested: Some("gpt-4o-2024-08-06".to_owned()),
            served: Some(served.to_owned()),
            provider: Some("OpenAI".to_owned()),
            ..GenAiSpan::default()
        }
    }

    #[test]
    fn windows_keep_the_newest_spans_and_served_labels_are_capped() {
        let mut config = minimal_config();
        config.traffic.window = 10;
        let traffic = Traffic::new(&config).unwrap();
        let spans = (0..40).map(|i| span(&format!("model-{i}"))).collect();
        let admitted = traffic.admit(&config, spans);
        assert_eq!((admitted.matched, admitted.unmatched), (40, 0));
        let labels: Vec<&str> = admitted.served.keys().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels.len(), SERVED_LABELS + 1);
        assert!(labels.contains(&"(other)"));
        assert_eq!(
            admitted.served[&("support-bot".to_owned(), "(other)".to_owned())],
            24
        );
        assert_eq!(traffic.take_fresh(), ["support-bot"]);
        let spans = traffic.spans_of("support-bot");
        let kept: Vec<_> = spans.iter().map(|s| s.served.clone().unwrap()).collect();
        assert_eq!(kept.first().map(String::as_str), Some("model-30"));
        assert_eq!(kept.len(), 10);
        assert!(
            traffic.take_fresh().is_empty(),
            "judged once until new spans arrive"
        );
    }

    #[test]
    fn a_failed_commit_is_judged_again_and_removed_pins_lose_their_windows() {
        let mut config = minimal_config();
        let traffic = Traffic::new(&config).unwrap();
        traffic.admit(&config, vec![span("gpt-4o-2024-08-06")]);
        assert_eq!(traffic.take_fresh(), ["support-bot"]);
        let verdict = Verdict {
            status: PinStatus::Ok,
            codes: Vec::new(),
            served: Served::Ids(Vec::new()),
        };
        let written = Kept::Write {
            unkept: Others::default(),
        };
        assert_eq!(traffic.keep("support-bot", verdict.clone(), 1), written);
        traffic.retry("support-bot");
        assert_eq!(traffic.take_fresh(), ["support-bot"], "judged again");
        assert_eq!(
            traffic.keep("support-bot", verdict, 1),
            written,
            "and kept again"
        );
        config.pins.clear();
        traffic.forget_unconfigured(&config);
        assert!(traffic.spans_of("support-bot").is_empty());
    }

    /// A verdict that changes at every pass writes `KEPT_PER_WINDOW` records per window; the
    /// rest are counted, and the count (verdicts, spans) rides with the next record written.
    #[tokio::test(start_paused = true)]
    async fn a_verdict_that_flips_at_every_pass_writes_a_bounded_number_of_records() {
        let config = minimal_config();
        let traffic = Traffic::new(&config).unwrap();
        let verdict = |i: u32| Verdict {
            status: PinStatus::Drift,
            codes: Vec::new(),
            served: Served::Ids(vec![format!("m-{i}")]),
        };
        // (passes in the window, written, held back at its end)
        let mut decisions = Vec::new();
        for i in 0..(KEPT_PER_WINDOW + 4) {
            decisions.push(traffic.keep("support-bot", verdict(i), 10));
            tokio::time::advance(std::time::Duration::from_secs(1)).await;
        }
        let written = decisions.iter().filter(|k| **k != Kept::Skip).count();
        assert_eq!(written, KEPT_PER_WINDOW as usize);
        assert!(
            decisions[KEPT_PER_WINDOW as usize..]
                .iter()
                .all(|k| *k == Kept::Skip)
        );
        // The next window's first verdict is written, even unchanged, with what was held back.
        tokio::time::advance(super::KEEP_EVERY).await;
        let last = verdict(KEPT_PER_WINDOW + 3);
        assert_eq!(
            traffic.keep("support-bot", last.clone(), 10),
            Kept::Write {
                unkept: Others { ids: 4, count: 40 }
            }
        );
        assert_eq!(
            traffic.keep("support-bot", last, 10),
            Kept::Skip,
            "unchanged"
        );
    }

    /// Through the commit path: a verdict the store refuses until the pass's deadline is not
    /// stored, each refused attempt is counted, and the pin is judged again at the next pass.
    #[tokio::test(start_paused = true)]
    async fn a_verdict_not_stored_by_the_deadline_is_judged_again_at_the_next_pass() {
        use crate::daemon::test_support::{daemon_with, metric};
        let t = daemon_with(minimal_config()).await;
        let daemon = &t.daemon;
        daemon
            .traffic
            .admit(&daemon.config(), vec![span("gpt-4o-2024-08-06")]);
        daemon.store.refuse_writes(u32::MAX);
        let deadline = tokio::time::Instant::now() + super::COMMIT_DEADLINE;
        super::judge_fresh(daemon, deadline).await;
        assert_eq!(
            tokio::time::Instant::now(),
            deadline,
            "given up at the deadline"
        );
        assert!(daemon.store.history(None, None).await.unwrap().is_empty());
        // Attempts at 0, 0.5, 1.5, 3.5 and 7.5 s; the next would come after the deadline.
        let failures = "modelpin_store_write_failures_total";
        assert_eq!(metric(daemon, failures), Some(5.0));
        daemon.store.refuse_writes(0);
        let deadline = tokio::time::Instant::now() + super::COMMIT_DEADLINE;
        super::judge_fresh(daemon, deadline).await;
        let stored = daemon.store.history(None, None).await.unwrap();
        assert_eq!(stored.len(), 1, "judged again and stored");
        assert_eq!(stored[0].source, Some(crate::store::RecordSource::Traffic));
        assert!(daemon.traffic.take_fresh().is_empty());
        assert_eq!(metric(daemon, failures), Some(5.0));
    }

    #[test]
    fn a_token_variable_matters_only_to_a_receiver_that_is_on() {
        let mut config = minimal_config();
        config.traffic.token_env = Some("MODELPIN_TEST_UNSET_OTLP_TOKEN".to_owned());
        assert!(
            Traffic::new(&config).is_err(),
            "on: an unset variable refuses"
        );
        config.traffic.enabled = false;
        assert!(Traffic::new(&config).is_ok());
    }

    #[test]
    fn spans_outside_the_allow_lists_or_of_another_provider_match_no_pin() {
        let mut config = minimal_config();
        config.traffic.services = vec!["billing".to_owned()];
        let traffic = Traffic::new(&config).unwrap();
        let mut other_service = span("gpt-4o-2024-08-06");
        other_service.service = Some("support".to_owned());
        let mut other_provider = span("gpt-4o-2024-08-06");
        other_provider.service = Some("billing".to_owned());
        other_provider.provider = Some("anthropic".to_owned());
        let mut ok = span("gpt-4o-2024-08-06");
        ok.service = Some("billing".to_owned());
        let admitted = traffic.admit(&config, vec![other_service, other_provider, ok]);
        assert_eq!((admitted.matched, admitted.unmatched), (1, 2));
    }

    #[test]
    fn provider_names_widen_and_server_addresses_narrow_the_match() {
        let mut config = minimal_config();
        let mut gateway = span("gpt-4o-2024-08-06");
        gateway.provider = Some("LiteLLM".to_owned());
        gateway.server_address = Some("gateway.internal".to_owned());
        let direct = span("gpt-4o-2024-08-06");
        let count = |config: &crate::config::Config| {
            let traffic = Traffic::new(config).unwrap();
            traffic
                .admit(config, vec![gateway.clone(), direct.clone()])
                .matched
        };
        assert_eq!(count(&config), 1, "only the openai span by default");
        config.traffic.provider_names = vec!["litellm".to_owned()];
        assert_eq!(count(&config), 2);
        config.traffic.server_addresses = vec!["gateway.internal".to_owned()];
        assert_eq!(count(&config), 1, "the direct span names no address");
    }
}
