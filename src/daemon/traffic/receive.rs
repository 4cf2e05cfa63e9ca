//! The `/v1/traces` handler: checks in the order that costs least first (receiver on, token,
//! content type and encoding, declared length), then a request slot, the body within its
//! deadline, decoding, and the spans into their pins' windows.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;

use crate::daemon::metrics::labels::SpanResult;
use crate::daemon::{Daemon, auth};
use crate::traffic::otlp::{self, Encoding, MAX_BODY, Rejected};

/// A body that has not fully arrived by then is refused.
const BODY_DEADLINE: Duration = Duration::from_secs(10);

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
    let spans = crate::traffic::spans::masked(extracted.spans, &config);
    let admitted = daemon.traffic.admit(&config, spans);
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
