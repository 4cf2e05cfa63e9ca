//! Serving the status pages: same access rule as `/api/*`, 304 while nothing changed (`cache`),
//! gzip, and a strict Content-Security-Policy.
//!
//! An idle browser should cost the daemon close to nothing: only a change renders the page again.
//! The store reads a page's records in one call per page (off the async workers), and rendering
//! and compression run on the blocking pool, off the workers that run the audits.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use crate::config::Pin;
use crate::daemon::page::cache::{Stamp, accepts_gzip, compress, not_modified, stamp, validators};
use crate::daemon::page::html::{content_security_policy, document};
use crate::daemon::page::overview::overview;
use crate::daemon::page::{
    Mark, Meta, PIN_AUDITS, PinHistory, PinView, STRIP_AUDITS, by_urgency, pin, standing_record,
};
use crate::daemon::{Daemon, auth};
use crate::lock::LoadedLock;
use crate::store::{AuditRecord, RawRecord, Store, StoreError};

/// The page to render once the stamp says the client's copy is stale.
enum Which {
    Overview,
    Pin(String),
}

pub async fn overview_page(State(daemon): State<Arc<Daemon>>, headers: HeaderMap) -> Response {
    respond(daemon, headers, Which::Overview).await
}

pub async fn pin_page(
    State(daemon): State<Arc<Daemon>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    respond(daemon, headers, Which::Pin(id)).await
}

async fn respond(daemon: Arc<Daemon>, headers: HeaderMap, which: Which) -> Response {
    if !auth::authorized(daemon.api_token.as_ref(), &headers) {
        return auth::unauthorized();
    }
    // Gathering and rendering hold a permit: pages are built `RENDERS` at a time.
    let permits = daemon.clone();
    let Ok(_permit) = permits.renders.acquire().await else {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the daemon is shutting down\n".to_owned(),
        );
    };
    match build(daemon, headers, which).await {
        Ok(response) => response,
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the store cannot be read: {e}\n"),
        ),
    }
}

/// What a page shows, gathered; rendered on the blocking pool.
enum Gathered {
    Overview(Vec<PinView>),
    Pin(Box<PinHistory>),
}

async fn build(
    daemon: Arc<Daemon>,
    headers: HeaderMap,
    which: Which,
) -> Result<Response, StoreError> {
    let config = daemon.snapshot().config.clone();
    let lock = lock_of(&daemon, &config).await;
    let pins: Vec<&Pin> = match &which {
        Which::Overview => config.pins.iter().collect(),
        Which::Pin(id) => match config.pins.iter().find(|p| &p.id == id) {
            Some(pin) => vec![pin],
            None => return Ok(not_found(id)),
        },
    };
    let kind = match which {
        Which::Overview => "overview",
        Which::Pin(_) => "pin",
    };
    let store = &daemon.store;
    let stamp = stamp(store, &config, lock.as_ref(), &pins, kind, daemon.started).await?;
    let private = daemon.api_token.is_some();
    if not_modified(&headers, &stamp) {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        validators(response.headers_mut(), &stamp, private);
        return Ok(response);
    }
    let gathered = match which {
        Which::Overview => Gathered::Overview(overview_views(store, &pins, lock.as_ref()).await?),
        Which::Pin(_) => {
            let blank = PinView::blank(pins[0], locked_of(lock.as_ref(), &pins[0].id));
            let (view, records) = view_of(store, blank, PIN_AUDITS).await?;
            Gathered::Pin(Box::new(PinHistory {
                view,
                records,
                alpha: config.settings.alpha,
            }))
        }
    };
    Ok(render(gathered, stamp, accepts_gzip(&headers), private).await)
}

/// modelpin.lock, read on the blocking pool when it changed; `None` when absent or unreadable.
async fn lock_of(daemon: &Arc<Daemon>, config: &crate::config::Config) -> Option<LoadedLock> {
    let reader = daemon.clone();
    let path = config.settings.lockfile.clone();
    tokio::task::spawn_blocking(move || reader.lock_file(&path))
        .await
        .ok()
        .and_then(Result::ok)
        .and_then(|l| l.as_ref().clone())
}

/// The page rendered and compressed on the blocking pool.
async fn render(gathered: Gathered, stamp: Stamp, gzip: bool, private: bool) -> Response {
    let rendered = tokio::task::spawn_blocking(move || {
        let meta = Meta {
            generated: stamp.last_modified,
            etag: stamp.etag.clone(),
        };
        let html = match &gathered {
            Gathered::Overview(views) => overview(views, &meta),
            Gathered::Pin(history) => pin::page(history, &meta),
        };
        html_response(StatusCode::OK, html, Some(&stamp), gzip, private)
    })
    .await;
    rendered.unwrap_or_else(|e| plain(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")))
}

/// What the lock recorded as served for a pin; `None` when it is not locked.
fn locked_of(lock: Option<&LoadedLock>, pin: &str) -> Option<Vec<String>> {
    lock.and_then(|l| l.lock.pins.get(pin))
        .map(|p| p.served_models.keys().cloned().collect())
}

/// The overview's views of `pins`, worst first, read from the store.
pub async fn overview_views(
    store: &Store,
    pins: &[&Pin],
    lock: Option<&LoadedLock>,
) -> Result<Vec<PinView>, StoreError> {
    let blanks = pins
        .iter()
        .map(|p| PinView::blank(p, locked_of(lock, &p.id)))
        .collect();
    let mut views: Vec<PinView> = views_of(store, blanks, STRIP_AUDITS)
        .await?
        .into_iter()
        .map(|(view, _)| view)
        .collect();
    by_urgency(&mut views);
    Ok(views)
}

/// `view` filled from the pin's latest `limit` records, and those records (oldest first) when
/// `limit` is more than a strip.
pub async fn view_of(
    store: &Store,
    view: PinView,
    limit: usize,
) -> Result<(PinView, Vec<AuditRecord>), StoreError> {
    let raw = store
        .recent(std::slice::from_ref(&view.id), limit)
        .await?
        .into_iter()
        .next()
        .unwrap_or_default();
    fill(store, view, &raw, limit).await
}

/// Each of `views` filled from its pin's latest `limit` records, read from the store at once.
pub async fn views_of(
    store: &Store,
    views: Vec<PinView>,
    limit: usize,
) -> Result<Vec<(PinView, Vec<AuditRecord>)>, StoreError> {
    let ids: Vec<String> = views.iter().map(|v| v.id.clone()).collect();
    let recent = store.recent(&ids, limit).await?;
    let mut out = Vec::with_capacity(views.len());
    for (view, raw) in views.into_iter().zip(recent) {
        out.push(fill(store, view, &raw, limit).await?);
    }
    Ok(out)
}

/// `view` filled from `raw` (its pin's newest records, newest first): a strip decodes whole only
/// the newest probe audit and traffic verdict, a pin's page every record.
async fn fill(
    store: &Store,
    mut view: PinView,
    raw: &[RawRecord],
    limit: usize,
) -> Result<(PinView, Vec<AuditRecord>), StoreError> {
    let mut records = Vec::new();
    let (probe, traffic) = if limit <= STRIP_AUDITS {
        view.marks = raw
            .iter()
            .rev()
            .filter_map(|r| Mark::decode(r.bytes()))
            .collect();
        let newest = |traffic: bool| {
            raw.iter()
                .find(|r| Mark::decode(r.bytes()).is_some_and(|m| m.traffic == traffic))
                .and_then(RawRecord::decode)
        };
        (newest(false), newest(true).map(bounded))
    } else {
        records = raw
            .iter()
            .rev()
            .filter_map(RawRecord::decode)
            .map(bounded)
            .collect();
        view.marks = records.iter().map(Mark::of).collect();
        let newest = |traffic: bool| {
            records
                .iter()
                .rev()
                .find(|r| r.source.is_some() == traffic)
                .cloned()
        };
        (newest(false), newest(true))
    };
    // A probe audit pushed out of the window by traffic verdicts still counts.
    let probe = match probe {
        None if traffic.is_some() => store.last_audit(&view.id).await?,
        probe => probe,
    };
    (view.latest, view.aside) = standing_record(probe, traffic, Utc::now());
    Ok((view, records))
}

/// A traffic record within its byte budget (`traffic::budget`), however it was stored.
fn bounded(mut record: AuditRecord) -> AuditRecord {
    if record.source.is_some() {
        crate::traffic::budget::cap_record(&mut record);
    }
    record
}

/// `html`, gzipped when `gzip` and it pays, with the page's security and cache headers.
fn html_response(
    status: StatusCode,
    html: String,
    stamp: Option<&Stamp>,
    gzip: bool,
    private: bool,
) -> Response {
    let compressed = gzip.then(|| compress(html.as_bytes())).flatten();
    let encoded = compressed.is_some();
    let mut response = match compressed {
        Some(bytes) => (status, bytes).into_response(),
        None => (status, html).into_response(),
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(&content_security_policy()) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if encoded {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    match stamp {
        Some(stamp) => validators(h, stamp, private),
        None => {
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
    }
    response
}

fn not_found(id: &str) -> Response {
    let meta = Meta {
        generated: Utc::now(),
        etag: String::new(),
    };
    let main = format!(
        "<p><a href=\"../\">← all pins</a></p><h1>No such pin</h1><p>pins.toml has no pin <code>{}</code>.</p>",
        crate::daemon::page::html::outside(id, crate::text::DISPLAY_ID_CHARS)
    );
    html_response(
        StatusCode::NOT_FOUND,
        document("No such pin · modelpin", &meta, &main),
        None,
        false,
        false,
    )
}

fn plain(status: StatusCode, text: String) -> Response {
    let mut response = (status, text).into_response();
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
