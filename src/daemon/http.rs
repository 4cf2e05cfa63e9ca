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
use crate::store::Cursor;

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

pub async fn serve(
    daemon: Arc<Daemon>,
    listener: tokio::net::TcpListener,
    stop: CancellationToken,
) {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/api/history", get(history))
        .route("/v1/traces", post(crate::daemon::traffic::receive))
        .route("/", get(page::serve::overview_page))
        .route("/pins/{id}", get(page::serve::pin_page))
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
    match daemon.health(Utc::now()) {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy: {reason}\n"),
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
    let read = daemon
        .store
        .history_page(q.pin.as_deref(), q.since, cursor.as_ref(), limit)
        .await;
    match read {
        Ok(page) => {
            let mut response = axum::Json(page.records).into_response();
            if let Some(next) = page.next
                && let Ok(link) = next_link(q.pin.as_deref(), q.since, &next, limit).parse()
            {
                response.headers_mut().insert(header::LINK, link);
            }
            response
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
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
    use super::{Cursor, next_link};

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
