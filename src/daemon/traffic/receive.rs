//! The `/v1/traces` handler: checks in the order that costs least first (receiver on, token,
//! content type and encoding, declared length), then the body, its bytes counted against the
//! shared body budget as they arrive and held to a minimum rate, then a decoding slot, decoding,
//! and the spans into their pins' windows.
//!
//! The decoding slot is taken only once the whole body is here: a client that sends its body
//! slowly holds the bytes it has sent and nothing else, so slow clients cannot keep real
//! exporters out (they did when the slot was taken before the body was read).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::daemon::metrics::labels::SpanResult;
use crate::daemon::{Daemon, auth};
use crate::store::Offered;
use crate::traffic::otlp::{self, Encoding, MAX_BODY, Rejected};

/// A body that has not fully arrived this long after its head is refused (408).
const BODY_DEADLINE: Duration = Duration::from_secs(10);

/// After `BODY_GRACE`, a body must have arrived at `MIN_BODY_RATE` bytes per second on average
/// or it is refused (408): a client sending a byte a second is cut after about a second.
const BODY_GRACE: Duration = Duration::from_secs(1);
pub(crate) const MIN_BODY_RATE: usize = 64 * 1024;

/// How long a body that has fully arrived waits for a decoding slot before it is answered 429.
/// Decoding takes milliseconds, so a wait this long means the receiver is overloaded.
const SLOT_WAIT: Duration = Duration::from_secs(1);

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
    if daemon.traffic.closed() {
        let mut response = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the daemon is shutting down; retry later",
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
        return response;
    }
    if !auth::authorized(daemon.traffic.token.as_ref(), headers) {
        return auth::unauthorized();
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
    let (bytes, held) = match read_body(body, &daemon.traffic.bodies).await {
        Ok(read) => read,
        Err(BodyError::Busy) => return busy(encoding),
        Err(BodyError::Refused(rejected)) => return refusal(encoding, &rejected),
    };
    let slot = tokio::time::timeout(SLOT_WAIT, daemon.traffic.slots.clone().acquire_owned());
    let Ok(Ok(_slot)) = slot.await else {
        return busy(encoding);
    };
    // Decoded on this worker: a 4 MiB body takes milliseconds, and at most `max_requests` run at
    // once, where the blocking pool would add a thread (and a malloc arena) per request.
    let extracted = match otlp::decode(encoding, gzip, &bytes) {
        Ok(extracted) => extracted,
        Err(rejected) => return refusal(encoding, &rejected),
    };
    drop(bytes);
    drop(held);
    let genai = extracted.spans.len() as u64;
    let other = extracted
        .seen
        .saturating_sub(genai)
        .saturating_sub(extracted.malformed);
    let spans = crate::traffic::spans::masked(extracted.spans, &config);
    let (admitted, matched) = daemon.traffic.sort(&config, spans);
    if daemon.store.is_shared() {
        // In a fleet the leader judges what every member accepted: into the store's inbox,
        // answered 200 only once it is there.
        if !matched.is_empty() {
            match offer(daemon, &matched).await {
                Ok(Some(Offered::Accepted)) => {}
                Ok(Some(Offered::Full)) => return busy(encoding),
                // No inbox after all (the store is one daemon's own): judged here.
                Ok(None) => daemon.traffic.window(&config, matched),
                Err(e) => return store_down(&e),
            }
        }
    } else {
        daemon.traffic.window(&config, matched);
    }
    daemon.metrics.traffic_spans(
        &admitted.served,
        [
            (SpanResult::Matched, admitted.matched),
            (SpanResult::Unmatched, admitted.unmatched),
            (SpanResult::NotGenai, other),
            (SpanResult::Rejected, extracted.malformed),
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

/// Why a body was not read.
enum BodyError {
    /// The body budget is spent: 429.
    Busy,
    Refused(Rejected),
}

/// The whole body, at most `MAX_BODY` bytes, within `BODY_DEADLINE` and at `MIN_BODY_RATE`;
/// each chunk's bytes are taken from `budget` as it arrives and held (the permit) until the
/// body is decoded.
async fn read_body(
    body: Body,
    budget: &Arc<Semaphore>,
) -> Result<(Vec<u8>, Option<OwnedSemaphorePermit>), BodyError> {
    let started = Instant::now();
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    let mut held: Option<OwnedSemaphorePermit> = None;
    loop {
        let due = body_due(started, out.len());
        let chunk = match tokio::time::timeout_at(due, stream.next()).await {
            Err(_) => {
                let rejected = Rejected::TooSlow(BODY_DEADLINE.as_secs(), MIN_BODY_RATE);
                return Err(BodyError::Refused(rejected));
            }
            Ok(None) => return Ok((out, held)),
            Ok(Some(Err(_))) => return Err(BodyError::Refused(Rejected::Incomplete)),
            Ok(Some(Ok(chunk))) => chunk,
        };
        let chunk: Bytes = chunk;
        if out.len() + chunk.len() > MAX_BODY {
            return Err(BodyError::Refused(Rejected::TooLarge(MAX_BODY)));
        }
        let n = u32::try_from(chunk.len()).map_err(|_| BodyError::Busy)?;
        let permit = budget
            .clone()
            .try_acquire_many_owned(n)
            .map_err(|_| BodyError::Busy)?;
        match &mut held {
            Some(held) => held.merge(permit),
            None => held = Some(permit),
        }
        out.extend_from_slice(&chunk);
    }
}

/// When the next chunk of a body with `received` bytes so far must have arrived: the minimum
/// rate's allowance for what came, after the grace, and never past the whole body's deadline.
fn body_due(started: Instant, received: usize) -> Instant {
    let allowance = Duration::from_secs_f64(received as f64 / MIN_BODY_RATE as f64);
    (started + BODY_GRACE + allowance).min(started + BODY_DEADLINE)
}

/// Writes one request's matched spans into the fleet's inbox.
async fn offer(
    daemon: &Daemon,
    spans: &[crate::traffic::spans::GenAiSpan],
) -> Result<Option<Offered>, crate::store::StoreError> {
    let batch = serde_json::to_vec(spans).map_err(|e| crate::store::StoreError::Write {
        path: std::path::PathBuf::from("traffic spans"),
        message: e.to_string(),
    })?;
    daemon.store.offer_spans(&daemon.fleet.holder, &batch).await
}

/// 503 with `Retry-After`: the fleet's store did not take the spans; exporters retry.
fn store_down(error: &crate::store::StoreError) -> Response {
    tracing::warn!(error = %error, "traffic spans refused: the fleet's store did not take them");
    let mut response = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "the fleet's store is unreachable; retry later",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
    response
}

/// 429 with `Retry-After`: the body budget or every decoding slot is taken, or the fleet's
/// inbox is full.
fn busy(encoding: Encoding) -> Response {
    let body = otlp::refused(
        encoding,
        429,
        "busy: the receiver holds as many request bodies as it takes; retry later",
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
