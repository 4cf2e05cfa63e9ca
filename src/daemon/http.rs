//! The daemon's HTTP endpoint: `/metrics` for Prometheus, `/healthz` for liveness checks and
//! `/api/history` so `modelpin history` can read the store while the daemon holds it.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::daemon::Daemon;
use crate::daemon::metrics::CONTENT_TYPE;

pub async fn serve(
    daemon: Arc<Daemon>,
    listener: tokio::net::TcpListener,
    stop: CancellationToken,
) {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/api/history", get(history))
        .with_state(daemon);
    let shutdown = async move { stop.cancelled().await };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        tracing::error!(error = %e, "the metrics endpoint stopped");
    }
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
}

async fn history(State(daemon): State<Arc<Daemon>>, Query(q): Query<HistoryQuery>) -> Response {
    match daemon.store.history(q.pin.as_deref(), q.since) {
        Ok(records) => axum::Json(records).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
