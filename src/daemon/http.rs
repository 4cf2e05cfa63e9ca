//! The daemon's HTTP endpoint: `/metrics` for Prometheus, `/healthz` for liveness checks,
//! `/api/history` so `modelpin history` can read the store while the daemon holds it, and the
//! status pages (`/`, `/pins/{id}`, in `page`).
//!
//! Bounded so no client can starve the audits or the health checks: connections are capped, time
//! out when idle and make room for newcomers (`listener`); a request's whole head must arrive
//! within `HEAD_DEADLINE` of the server starting to wait for it (from accept, or from the end of
//! the previous response on a kept-alive connection), so a client trickling header lines holds
//! its connection that long at most; history comes a page at a time (`limit`, `cursor`; the next page's URL in a
//! `Link` header, RFC 8288), read by the store off the async workers that run the audits (sled:
//! on the blocking pool). `/api/*` and the status pages require `Authorization: Bearer` when
//! `settings.api_token_env` is set (`auth`). `POST /v1/traces` is the OTLP/HTTP traces receiver
//! (`traffic`), with its own token (`traffic.token_env`).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use http_body_util::BodyExt as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Deserialize;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::daemon::listener::{Bounded, Connection, Guarded, IDLE_TIMEOUT, MAX_CONNECTIONS};
use crate::daemon::metrics::CONTENT_TYPE;
use crate::daemon::{Daemon, auth, page};
use crate::store::{Cursor, Store};

/// Records per `/api/history` page unless `limit` says otherwise.
pub const DEFAULT_PAGE: usize = 100;

/// The largest `limit` honoured.
pub const MAX_PAGE: usize = 1000;

/// A request's head (request line and headers) must arrive in full this long after the server
/// starts waiting for it; then the connection is closed. Generous for any real client (a head is
/// one packet), short enough that trickled headers cannot hold slots.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(10);

/// On shutdown, connections still open this long after the listener stopped are cut.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The most bytes of records one `/api/history` answer holds: a page stops before the record
/// that would pass it, and its `Link` continues from there (one record is always sent; traffic
/// records are at most `traffic::budget::MAX_RECORD` bytes).
pub const MAX_ANSWER: usize = 1024 * 1024;

/// Records read from the store at a time while a page is filled: what one answer holds decoded
/// besides its bytes.
const CHUNK: usize = 50;

pub async fn serve(
    daemon: Arc<Daemon>,
    listener: tokio::net::TcpListener,
    stop: CancellationToken,
) {
    // What `api_token_env` guards: never stored by a shared cache, and never served from a cache
    // to a request with another (or no) token.
    let private = Router::new()
        .route("/api/history", get(history))
        .route("/", get(page::serve::overview_page))
        .route("/pins/{id}", get(page::serve::pin_page))
        .layer(axum::middleware::map_response(private_answer));
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/v1/traces", post(crate::daemon::traffic::receive))
        .merge(private)
        .with_state(daemon);
    let listener = Bounded::new(listener, MAX_CONNECTIONS, IDLE_TIMEOUT);
    let mut connections = JoinSet::new();
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => break,
            stream = listener.next() => stream,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        if let Some(io) = listener.admit(stream).await {
            connections.spawn(serve_connection(app.clone(), io, stop.clone()));
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::debug!(
            open = connections.len(),
            "listener: connections cut at shutdown"
        );
    }
}

/// `Cache-Control: private, no-store` unless the answer set its own (the pages revalidate with
/// an ETag: `private, no-cache` when a token guards them), and `Vary: Authorization` always.
async fn private_answer(mut response: Response) -> Response {
    let headers = response.headers_mut();
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("private, no-store"),
        );
    }
    headers.append(
        header::VARY,
        header::HeaderValue::from_static("Authorization"),
    );
    response
}

/// One connection, HTTP/1.1 with keep-alive, until the client or the head deadline ends it;
/// on `stop` the response under way finishes and the connection closes.
async fn serve_connection(app: Router, io: Guarded, stop: CancellationToken) {
    let connection = io.connection();
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        answer(app.clone(), connection.clone(), request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_DEADLINE);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::trace!(error = %e, "listener: connection ended");
            }
            return;
        }
        () = stop.cancelled() => conn.as_mut().graceful_shutdown(),
    }
    let _ = conn.await;
}

/// The router's response, the connection marked as answering from then until its body is
/// written. Only then: while a request's body is still arriving the client sets the pace, and
/// such a connection may be closed to make room like any other that waits on its client.
async fn answer(
    app: Router,
    connection: Arc<Connection>,
    request: Request<hyper::body::Incoming>,
) -> Result<Response, std::convert::Infallible> {
    let response = app.oneshot(request.map(Body::new)).await?;
    let answering = connection.answering();
    Ok(response.map(move |body| {
        Body::new(body.map_frame(move |frame| {
            let _ = &answering;
            frame
        }))
    }))
}

async fn metrics(State(daemon): State<Arc<Daemon>>) -> Response {
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        daemon.metrics.render(),
    )
        .into_response()
}

async fn healthz(State(daemon): State<Arc<Daemon>>) -> Response {
    // The role first, so a probe (and a person) tells the leader from a standby at a glance.
    let role = daemon.role();
    match daemon.health(Utc::now()) {
        Ok(()) => (StatusCode::OK, format!("ok: {role}\n")).into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy: {role}: {reason}\n"),
        )
            .into_response(),
    }
}

#[derive(Deserialize)]
struct HistoryQuery {
    pin: Option<String>,
    since: Option<DateTime<Utc>>,
    limit: Option<usize>,
    cursor: Option<String>,
}

async fn history(
    State(daemon): State<Arc<Daemon>>,
    headers: HeaderMap,
    Query(q): Query<HistoryQuery>,
) -> Response {
    if !auth::authorized(daemon.api_token.as_ref(), &headers) {
        return auth::unauthorized();
    }
    let cursor = match q.cursor.as_deref().map(Cursor::from_hex) {
        Some(None) => return (StatusCode::BAD_REQUEST, "invalid cursor\n").into_response(),
        Some(cursor) => cursor,
        None => None,
    };
    let limit = q.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let Ok(_permit) = daemon.renders.acquire().await else {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    };
    let from = Filter {
        pin: q.pin.as_deref(),
        since: q.since,
    };
    match history_answer(&daemon.store, &from, cursor, limit, MAX_ANSWER).await {
        Ok((body, next)) => {
            let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
            if let Some(next) = next
                && let Ok(link) = next_link(q.pin.as_deref(), q.since, &next, limit).parse()
            {
                response.headers_mut().insert(header::LINK, link);
            }
            response
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// Which records a page is of.
struct Filter<'q> {
    pin: Option<&'q str>,
    since: Option<DateTime<Utc>>,
}

/// The JSON array of at most `limit` records after `cursor`, at most `max` bytes (or one
/// record), read `CHUNK` at a time; traffic records within their budget. With the cursor of the
/// next page when records remain.
async fn history_answer(
    store: &Store,
    q: &Filter<'_>,
    mut cursor: Option<Cursor>,
    limit: usize,
    max: usize,
) -> Result<(Vec<u8>, Option<Cursor>), String> {
    let mut body = vec![b'['];
    let mut sent = 0;
    loop {
        let want = (limit - sent).min(CHUNK);
        let page = store
            .history_page(q.pin, q.since, cursor.as_ref(), want)
            .await
            .map_err(|e| e.to_string())?;
        for (i, mut record) in page.records.into_iter().enumerate() {
            if record.source.is_some() {
                crate::traffic::budget::cap_record(&mut record);
            }
            // The report's escaping: no raw bidi override or C1 control reaches a reader.
            let bytes = serde_json::to_string(&record)
                .map(|text| crate::text::json_inert(text).into_bytes())
                .map_err(|e| format!("record {} cannot be written: {e}", record.audit_id))?;
            if sent > 0 && body.len() + bytes.len() + 2 > max {
                // The page ends before this record: the cursor of the one before it.
                let next = if i == 0 {
                    cursor
                } else {
                    store
                        .history_page(q.pin, q.since, cursor.as_ref(), i)
                        .await
                        .map_err(|e| e.to_string())?
                        .next
                };
                body.push(b']');
                return Ok((body, next));
            }
            if sent > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&bytes);
            sent += 1;
        }
        if page.next.is_none() || sent == limit {
            body.push(b']');
            return Ok((body, page.next));
        }
        cursor = page.next;
    }
}

/// `</api/history?…&cursor=…>; rel="next"`.
fn next_link(
    pin: Option<&str>,
    since: Option<DateTime<Utc>>,
    next: &Cursor,
    limit: usize,
) -> String {
    let mut url = reqwest::Url::parse("http://daemon/api/history").expect("a valid URL");
    {
        let mut query = url.query_pairs_mut();
        if let Some(pin) = pin {
            query.append_pair("pin", pin);
        }
        if let Some(since) = since {
            query.append_pair("since", &since.to_rfc3339());
        }
        query.append_pair("limit", &limit.to_string());
        query.append_pair("cursor", &next.to_hex());
    }
    let path = &url[url::Position::BeforePath..];
    format!("<{path}>; rel=\"next\"")
}

#[cfg(test)]
mod tests {
    use super::{Cursor, Filter, history_answer, next_link};
    use crate::store::{Holder, Store};

    /// Pages cut by bytes continue where they stopped: following the cursors yields every
    /// record once, in order, and no answer is over its cap (or more than one record).
    #[tokio::test]
    async fn history_pages_cut_by_bytes_continue_where_they_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store"), Holder::Daemon)
            .await
            .unwrap();
        for i in 0..23 {
            let mut r = crate::store::tests::record("p", 1_800_000_000 + i, &format!("a{i:02}"));
            r.pin.model = "m".repeat(usize::try_from(i).unwrap() * 40);
            store.append(&r).await.unwrap();
        }
        let q = Filter {
            pin: None,
            since: None,
        };
        // (byte cap, limit)
        for (max, limit) in [(2_000, 1000), (1, 1000), (usize::MAX, 5), (3_000, 4)] {
            let (mut seen, mut cursor) = (Vec::new(), None);
            loop {
                let (body, next) = history_answer(&store, &q, cursor, limit, max)
                    .await
                    .unwrap();
                let page: Vec<serde_json::Value> = serde_json::from_slice(&body).unwrap();
                assert!(
                    body.len() <= max || page.len() == 1,
                    "{max}: {}",
                    body.len()
                );
                assert!(!page.is_empty() && page.len() <= limit);
                seen.extend(
                    page.iter()
                        .map(|r| r["audit_id"].as_str().unwrap().to_owned()),
                );
                match next {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            let all: Vec<String> = (0..23).map(|i| format!("a{i:02}")).collect();
            assert_eq!(seen, all, "cap {max}, limit {limit}");
        }
    }

    #[test]
    fn next_link_keeps_the_filters_and_encodes_them() {
        let cursor = Cursor::from_hex("0001020304050607aa").unwrap();
        let link = next_link(Some("a b&c"), None, &cursor, 50);
        assert_eq!(
            link,
            "</api/history?pin=a+b%26c&limit=50&cursor=0001020304050607aa>; rel=\"next\""
        );
    }
}
