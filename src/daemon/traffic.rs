//! `POST /v1/traces`: the application's own LLM calls, as OpenTelemetry GenAI spans, judged by
//! the probe rules at no probe cost.
//!
//! Bounded at every step, since anything that can reach the listener can send: at most
//! `[traffic] max_requests` bodies are read and decoded at once, and one more is answered 429
//! with `Retry-After` (the OTLP/HTTP back-pressure signal; exporters retry) instead of queueing;
//! a body is at most `otlp::MAX_BODY` bytes, read within `BODY_DEADLINE`; each pin keeps only its
//! newest `[traffic] window` spans. Every `[traffic] interval` the pins that received spans are
//! judged; the verdict goes through the alert state machine and outbox like an audit's (with its
//! own alert state, so traffic and probes never resolve each other's alerts), and into history
//! when it changed or `KEEP_EVERY` passed, marked as traffic.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use futures::StreamExt as _;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::daemon::{Daemon, DaemonError};
use crate::provider::Secret;
use crate::store::{AuditRecord, RecordSource};
use crate::traffic::otlp::{self, Encoding, MAX_BODY, Rejected};
use crate::traffic::spans::GenAiSpan;

/// A body that has not fully arrived by then is refused.
const BODY_DEADLINE: Duration = Duration::from_secs(10);

/// Served-model label values exported per pin; more become `(other)`, so a provider answering
/// with ever-new IDs cannot grow the metrics without bound.
const SERVED_LABELS: usize = 16;

/// A traffic verdict not committed by then is dropped (the next one follows within `interval`);
/// judging never waits on a stuck store.
const COMMIT_DEADLINE: Duration = Duration::from_secs(10);

/// An unchanged traffic verdict is written to history at most this often.
const KEEP_EVERY: Duration = Duration::from_secs(600);

/// What the receiver holds between requests and judgments.
pub struct Traffic {
    windows: Mutex<BTreeMap<String, Window>>,
    slots: Arc<Semaphore>,
    token: Option<Secret>,
}

#[derive(Default)]
struct Window {
    spans: VecDeque<GenAiSpan>,
    /// Spans arrived since the last judgment.
    fresh: bool,
    /// Served-model label values exported so far.
    labels: BTreeSet<String>,
    /// The last verdict written to history, and when.
    kept: Option<(Verdict, Instant)>,
}

/// What makes two traffic verdicts the same for history.
type Verdict = (String, Vec<String>, Vec<String>);

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
            slots: Arc::new(Semaphore::new(config.traffic.max_requests)),
            token,
        })
    }

    /// Puts each span that matches a pin into that pin's window, dropping the oldest.
    fn admit(&self, config: &Config, spans: Vec<GenAiSpan>) -> Admitted {
        let mut out = Admitted::default();
        let mut windows = self.windows.lock().expect("traffic windows");
        for span in spans {
            let Some(pin) = crate::traffic::pin_for(config, &span) else {
                out.unmatched += 1;
                continue;
            };
            out.matched += 1;
            let window = windows.entry(pin.id.clone()).or_default();
            let served = span.served.clone().unwrap_or_else(|| "(none)".to_owned());
            let label = if window.labels.contains(&served) || window.labels.len() < SERVED_LABELS {
                window.labels.insert(served.clone());
                served
            } else {
                "(other)".to_owned()
            };
            *out.served.entry((pin.id.clone(), label)).or_default() += 1;
            window.spans.push_back(span);
            // A loop, not one pop: `window` may have shrunk on reload.
            while window.spans.len() > config.traffic.window {
                window.spans.pop_front();
            }
            window.fresh = true;
        }
        out
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

    /// Whether this verdict goes to history: it differs from the last kept, or that is old.
    fn keep(&self, pin: &str, verdict: Verdict) -> bool {
        let mut windows = self.windows.lock().expect("traffic windows");
        let window = windows.entry(pin.to_owned()).or_default();
        let stale = window
            .kept
            .as_ref()
            .is_none_or(|(kept, at)| *kept != verdict || at.elapsed() >= KEEP_EVERY);
        if stale {
            window.kept = Some((verdict, Instant::now()));
        }
        stale
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        self.token
            .as_ref()
            .is_none_or(|token| super::http::bearer_matches(headers, token))
    }
}

/// The `/v1/traces` handler.
pub async fn receive(
    State(daemon): State<Arc<Daemon>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let response = receive_inner(&daemon, &headers, body).await;
    daemon.metrics.traffic_request(response.status().as_u16());
    response
}

async fn receive_inner(daemon: &Daemon, headers: &HeaderMap, body: Body) -> Response {
    let config = daemon.config();
    if !config.traffic.enabled {
        return plain(
            StatusCode::NOT_FOUND,
            "the traces receiver is off ([traffic] enabled = false)",
        );
    }
    if !daemon.traffic.authorized(headers) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "a bearer token is required\n",
        )
            .into_response();
    }
    let header_text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let content_type = header_text(header::CONTENT_TYPE).unwrap_or_default();
    let Some(encoding) = Encoding::from_content_type(content_type) else {
        let rejected = Rejected::ContentType(crate::traffic::spans::bounded(content_type));
        return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, &rejected.to_string());
    };
    let gzip = match otlp::gzipped(header_text(header::CONTENT_ENCODING)) {
        Ok(gzip) => gzip,
        Err(rejected) => return refusal(encoding, &rejected),
    };
    let declared = header_text(header::CONTENT_LENGTH).and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY) {
        return refusal(encoding, &Rejected::TooLarge(MAX_BODY));
    }
    let Ok(_slot) = daemon.traffic.slots.clone().try_acquire_owned() else {
        return busy(encoding);
    };
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(rejected) => return refusal(encoding, &rejected),
    };
    // Decoded on this worker: a 4 MiB body takes milliseconds, and at most `max_requests` run at
    // once, where the blocking pool would add a thread (and a malloc arena) per request.
    let extracted = match otlp::decode(encoding, gzip, &bytes) {
        Ok(extracted) => extracted,
        Err(rejected) => return refusal(encoding, &rejected),
    };
    drop(bytes);
    let genai = extracted.spans.len() as u64;
    let other = extracted
        .seen
        .saturating_sub(genai)
        .saturating_sub(extracted.malformed);
    let admitted = daemon.traffic.admit(&config, extracted.spans);
    daemon.metrics.traffic_spans(
        &admitted.served,
        [
            ("matched", admitted.matched),
            ("unmatched", admitted.unmatched),
            ("not_genai", other),
            ("rejected", extracted.malformed),
        ],
    );
    let message = if extracted.malformed > 0 {
        format!(
            "{} spans were not OTLP spans of the expected shape",
            extracted.malformed
        )
    } else {
        String::new()
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, encoding.content_type())],
        otlp::accepted(encoding, extracted.malformed, &message),
    )
        .into_response()
}

/// The whole body, at most `MAX_BODY` bytes, within `BODY_DEADLINE`.
async fn read_body(body: Body) -> Result<Vec<u8>, Rejected> {
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    let read = tokio::time::timeout(BODY_DEADLINE, async {
        while let Some(chunk) = stream.next().await {
            let chunk: Bytes = chunk.map_err(|_| Rejected::Incomplete)?;
            if out.len() + chunk.len() > MAX_BODY {
                return Err(Rejected::TooLarge(MAX_BODY));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(())
    })
    .await;
    read.unwrap_or(Err(Rejected::Incomplete)).map(|()| out)
}

/// 429 with `Retry-After`: every request slot is taken.
fn busy(encoding: Encoding) -> Response {
    let body = otlp::refused(
        encoding,
        429,
        "busy: every request slot is taken; retry later",
    );
    let mut response = encoded(StatusCode::TOO_MANY_REQUESTS, encoding, body);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    response
}

fn refusal(encoding: Encoding, rejected: &Rejected) -> Response {
    let status = StatusCode::from_u16(rejected.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let body = otlp::refused(encoding, rejected.status(), &rejected.to_string());
    encoded(status, encoding, body)
}

fn encoded(status: StatusCode, encoding: Encoding, body: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, encoding.content_type())],
        body,
    )
        .into_response()
}

fn plain(status: StatusCode, message: &str) -> Response {
    (status, format!("{message}\n")).into_response()
}

/// Judges the pins that received spans, every `[traffic] interval`, until `stop`.
pub async fn judge_loop(daemon: Arc<Daemon>, stop: CancellationToken) {
    loop {
        let interval = daemon.config().traffic.interval;
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = stop.cancelled() => return,
        }
        for pin in daemon.traffic.take_fresh() {
            let spans = daemon.traffic.spans_of(&pin);
            judge_pin(&daemon, &pin, &spans).await;
        }
    }
}

async fn judge_pin(daemon: &Daemon, pin: &str, spans: &[GenAiSpan]) {
    let snapshot = daemon.snapshot();
    let config = &snapshot.config;
    let Some(pinned) = config.pins.iter().find(|p| p.id == pin) else {
        return;
    };
    let lock = daemon
        .lock_file(&config.settings.lockfile)
        .unwrap_or_else(|_| Arc::new(None));
    let lock = lock.as_ref().as_ref();
    let started = Utc::now();
    let refs: Vec<&GenAiSpan> = spans.iter().collect();
    let report = crate::traffic::pin_report(config, lock, pinned, &refs, &snapshot.facts);
    let record = AuditRecord {
        audit_id: super::audit_id(started),
        started_at: started,
        finished_at: Utc::now(),
        config_digest: config.digest.clone(),
        lock_digest: lock.map(|l| l.digest.clone()),
        pin: report,
        source: Some(RecordSource::Traffic),
    };
    daemon.metrics.traffic_verdict(&record.pin);
    let verdict = (
        record.pin.status.as_str().to_owned(),
        record
            .pin
            .findings
            .iter()
            .map(|f| f.code.as_str().to_owned())
            .collect(),
        record.pin.served_models.keys().cloned().collect(),
    );
    let keep = if daemon.traffic.keep(pin, verdict) {
        crate::alert::Keep::Audit
    } else {
        crate::alert::Keep::AlertsOnly
    };
    let processed = tokio::time::timeout(
        COMMIT_DEADLINE,
        crate::alert::process(&daemon.store, config, &record, keep),
    )
    .await
    .unwrap_or_else(|_| Err(daemon.store.write_error("no answer from the store in time")));
    match processed {
        Ok(queued) if !queued.is_empty() => {
            tracing::info!(pin, queued = queued.len(), "traffic: notifications queued");
            daemon.outbox_wake.send_modify(|n| *n += 1);
        }
        Ok(_) => {}
        Err(e) => {
            daemon.metrics.store_write_failed();
            tracing::error!(pin, error = %e, "traffic verdict NOT stored");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{SERVED_LABELS, Traffic};
    use crate::config::tests_support::minimal_config;
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
