//! The daemon's HTTP endpoint: `/metrics` for Prometheus, `/healthz` for liveness checks,
//! `/api/history` so `modelpin history` can read the store while the daemon holds it, and the
//! status pages (`/`, `/pins/{id}`, in `page`).
//!
//! Bounded so no client can starve the audits or the health checks: connections are capped, time
//! out when idle and make room for newcomers (`listener`); a request's whole head must arrive
//! within `HEAD_DEADLINE` of the server starting to wait for it (from accept, or from the end of
//! the previous response on a kept-alive connection), so a client trickling header lines holds
//! its connection that long at most; history comes a page at a time (`limit`, `cursor`, `order`;
//! the next page's URL in a `Link` header, RFC 8288), read by the store off the async workers
//! that run the audits (sled: on the blocking pool). `/api/*` and the status pages require `Authorization: Bearer` when
//! `settings.api_token_env` is set (`auth`). `POST /v1/traces` is the OTLP/HTTP traces receiver
//! (`traffic`), with its own token (`traffic.token_env`).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use http_body_util::BodyExt as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::daemon::listener::{Bounded, Connection, Guarded, IDLE_TIMEOUT, MAX_CONNECTIONS};
use crate::daemon::metrics::CONTENT_TYPE;
use crate::daemon::{Daemon, auth, page};
use crate::store::{Cursor, Order, Store};

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

async fn history(
    State(daemon): State<Arc<Daemon>>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    if !auth::authorized(daemon.api_token.as_ref(), &headers) {
        return auth::unauthorized();
    }
    let q = match HistoryQuery::parse(raw.as_deref(), Utc::now()) {
        Ok(q) => q,
        Err(message) => return (StatusCode::BAD_REQUEST, format!("{message}\n")).into_response(),
    };
    let Ok(_permit) = daemon.renders.acquire().await else {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    };
    if let Some(pin) = q.pin.as_deref() {
        match known_pin(&daemon, pin).await {
            Ok(true) => {}
            Ok(false) => return (StatusCode::NOT_FOUND, no_such_pin(pin)).into_response(),
            Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        }
    }
    let from = Filter {
        pin: q.pin.as_deref(),
        since: q.since,
        order: q.order,
    };
    match history_answer(&daemon.store, &from, q.cursor, q.limit, MAX_ANSWER).await {
        Ok((body, next)) => {
            let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
            if let Some(next) = next
                && let Ok(link) = next_link(&from, &next, q.limit).parse()
            {
                response.headers_mut().insert(header::LINK, link);
            }
            response
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// What `/api/history` was asked for, checked: each parameter at most once, and parameters it
/// does not know (a cache buster) ignored.
#[derive(Debug, PartialEq)]
struct HistoryQuery {
    pin: Option<String>,
    /// Resolved to a time when the request came, so a `Link` to the next page keeps the window.
    since: Option<DateTime<Utc>>,
    limit: usize,
    order: Order,
    cursor: Option<Cursor>,
}

/// The parameters `/api/history` takes.
const PARAMETERS: [&str; 5] = ["pin", "since", "limit", "order", "cursor"];

/// The longest part of a refused value quoted back, in characters: enough to spot a typo, too
/// little to carry a payload.
const QUOTED_CHARS: usize = 100;

impl HistoryQuery {
    /// Reads the query string (`since` durations count back from `now`). The error is one line
    /// for a `400`: which parameter, its value made inert, and what it takes. Parsed here rather
    /// than by serde, so no deserialiser's wording (or a value echoed raw) reaches a client.
    fn parse(raw: Option<&str>, now: DateTime<Utc>) -> Result<HistoryQuery, String> {
        let mut q = HistoryQuery {
            pin: None,
            since: None,
            limit: DEFAULT_PAGE,
            order: Order::Asc,
            cursor: None,
        };
        let mut seen = [false; PARAMETERS.len()];
        for (name, value) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            let Some(i) = PARAMETERS.iter().position(|p| *p == name) else {
                continue;
            };
            if std::mem::replace(&mut seen[i], true) {
                return Err(format!(
                    "query parameter `{name}` is given more than once: give it once"
                ));
            }
            match PARAMETERS[i] {
                // No pin id holds a control character (pins.toml refuses them); a NUL would
                // otherwise read another pin's records under a name of its own on sled.
                "pin" if value.chars().any(char::is_control) => {
                    return Err(refused(
                        "pin",
                        &value,
                        "give a pin id as pins.toml writes it (ids hold no control characters)",
                    ));
                }
                "pin" => q.pin = Some(value.into_owned()),
                "since" => q.since = Some(parse_since(&value, now)?),
                "limit" => q.limit = parse_limit(&value)?,
                "order" => q.order = parse_order(&value)?,
                _ => q.cursor = Some(parse_cursor(&value)?),
            }
        }
        Ok(q)
    }
}

/// The refusal of `name=value`: the value escaped (no control or reordering character reaches
/// a terminal or a log) and cut to `QUOTED_CHARS`, then what `name` takes.
fn refused(name: &str, value: &str, accepted: &str) -> String {
    format!(
        "query parameter `{name}` has a value that is not valid: `{}`; {accepted}",
        quoted(value)
    )
}

/// `value` as a message quotes it: inert and bounded.
fn quoted(value: &str) -> String {
    crate::text::bounded(&crate::text::terminal(value), QUOTED_CHARS).into_owned()
}

/// `since`: as `modelpin history --since` takes it, a duration meaning that long before `now`
/// (the same parser), or a time in RFC 3339 (what the CLI sends the daemon). A duration
/// reaching before the earliest time there is means all history.
fn parse_since(value: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(value) {
        return Ok(at.with_timezone(&Utc));
    }
    crate::config::since_ago(value, now).map_err(|_| {
        refused(
            "since",
            value,
            "give how long ago as a duration, whole numbers with units ms, s, m, h or d, largest \
             first (`90s`, `10m`, `2h`, `7d`, `1h30m`), or an RFC 3339 time such as \
             `2025-06-01T12:00:00Z` (a `+` in an offset written `%2B`)",
        )
    })
}

/// `limit`: records per page, at least one; more than `MAX_PAGE` is read as `MAX_PAGE`.
fn parse_limit(value: &str) -> Result<usize, String> {
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    if digits && value.bytes().any(|b| b != b'0') {
        // Too many digits for a number here is more than `MAX_PAGE` too.
        Ok(value
            .parse::<usize>()
            .map_or(MAX_PAGE, |limit| limit.min(MAX_PAGE)))
    } else {
        Err(refused(
            "limit",
            value,
            &format!(
                "give a whole number of records from 1 (larger than {MAX_PAGE} is read as \
                 {MAX_PAGE})"
            ),
        ))
    }
}

/// `order`: `asc` (oldest first, the default) or `desc` (newest first).
fn parse_order(value: &str) -> Result<Order, String> {
    match value {
        "asc" => Ok(Order::Asc),
        "desc" => Ok(Order::Desc),
        _ => Err(refused(
            "order",
            value,
            "give `asc` (oldest first, the default) or `desc` (newest first)",
        )),
    }
}

/// `cursor`: only what a `Link` header of an earlier answer carried.
fn parse_cursor(value: &str) -> Result<Cursor, String> {
    Cursor::from_hex(value).ok_or_else(|| {
        refused(
            "cursor",
            value,
            "give the cursor of a `Link: <…>; rel=\"next\"` header of an earlier answer, \
             unchanged",
        )
    })
}

/// Whether `pin` is one to answer for: in the running config, or with records in the store (a
/// pin removed from pins.toml keeps its history). Anything else is most likely a typo, which
/// an empty list would hide.
async fn known_pin(daemon: &Daemon, pin: &str) -> Result<bool, crate::store::StoreError> {
    if daemon.config().pins.iter().any(|p| p.id == pin) {
        return Ok(true);
    }
    let latest = daemon.store.latest_keys(&[pin.to_owned()]).await?;
    Ok(latest.first().is_some_and(Option::is_some))
}

/// The `404` for a pin neither configured nor stored.
fn no_such_pin(pin: &str) -> String {
    format!("no pin `{}` in pins.toml or in the store\n", quoted(pin))
}

/// Which records a page is of, and which way it runs.
struct Filter<'q> {
    pin: Option<&'q str>,
    since: Option<DateTime<Utc>>,
    order: Order,
}

/// The JSON array of at most `limit` records from `cursor` on (in the filter's order), at most
/// `max` bytes (or one record), read `CHUNK` at a time; traffic records within their budget. With the cursor of the
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
            .history_page(q.pin, q.since, cursor.as_ref(), q.order, want)
            .await
            .map_err(|e| e.to_string())?;
        let mut last: Option<Cursor> = None;
        for (i, mut record) in page.records.into_iter().enumerate() {
            if record.source.is_some() {
                crate::traffic::budget::cap_record(&mut record);
            }
            // The report's escaping: no raw bidi override or C1 control reaches a reader.
            let bytes = serde_json::to_string(&record)
                .map(|text| crate::text::json_inert(text).into_bytes())
                .map_err(|e| format!("record {} cannot be written: {e}", record.audit_id))?;
            if sent > 0 && body.len() + bytes.len() + 2 > max {
                // The page ends before this record: the cursor of the one before it, made from
                // that record itself (a second read could differ: a prune, an undecodable row).
                let next = if i == 0 { cursor } else { last };
                body.push(b']');
                return Ok((body, next));
            }
            if sent > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&bytes);
            sent += 1;
            last = Some(Cursor::after(&record));
        }
        if page.next.is_none() || sent == limit {
            body.push(b']');
            return Ok((body, page.next));
        }
        cursor = page.next;
    }
}

/// `</api/history?…&cursor=…>; rel="next"`: the same filters and order (`since` as the time
/// it was resolved to), continuing after `next`.
fn next_link(q: &Filter<'_>, next: &Cursor, limit: usize) -> String {
    let mut url = reqwest::Url::parse("http://daemon/api/history").expect("a valid URL");
    {
        let mut query = url.query_pairs_mut();
        if let Some(pin) = q.pin {
            query.append_pair("pin", pin);
        }
        if let Some(since) = q.since {
            query.append_pair("since", &since.to_rfc3339());
        }
        if q.order == Order::Desc {
            query.append_pair("order", "desc");
        }
        query.append_pair("limit", &limit.to_string());
        query.append_pair("cursor", &next.to_hex());
    }
    let path = &url[url::Position::BeforePath..];
    format!("<{path}>; rel=\"next\"")
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::{Cursor, Filter, HistoryQuery, MAX_PAGE, history_answer, next_link, no_such_pin};
    use crate::store::{Holder, Order, Store};

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
        // (byte cap, limit, order)
        for (max, limit, order) in [
            (2_000, 1000, Order::Asc),
            (1, 1000, Order::Asc),
            (usize::MAX, 5, Order::Asc),
            (3_000, 4, Order::Asc),
            (2_000, 1000, Order::Desc),
            (3_000, 4, Order::Desc),
        ] {
            let q = Filter {
                pin: None,
                since: None,
                order,
            };
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
            let mut all: Vec<String> = (0..23).map(|i| format!("a{i:02}")).collect();
            if order == Order::Desc {
                all.reverse();
            }
            assert_eq!(seen, all, "cap {max}, limit {limit}, {order:?}");
        }
    }

    #[test]
    fn next_link_keeps_the_filters_and_encodes_them() {
        let cursor = Cursor::from_hex("0001020304050607aa").unwrap();
        let mut q = Filter {
            pin: Some("a b&c"),
            since: None,
            order: Order::Asc,
        };
        assert_eq!(
            next_link(&q, &cursor, 50),
            "</api/history?pin=a+b%26c&limit=50&cursor=0001020304050607aa>; rel=\"next\""
        );
        q.since = DateTime::from_timestamp(1_800_000_000, 5_000_000);
        q.order = Order::Desc;
        assert_eq!(
            next_link(&q, &cursor, 50),
            "</api/history?pin=a+b%26c&since=2027-01-15T08%3A00%3A00.005%2B00%3A00&order=desc\
             &limit=50&cursor=0001020304050607aa>; rel=\"next\""
        );
    }

    /// What a query string reads as, or the start of its refusal.
    fn parsed(raw: &str, now: DateTime<Utc>) -> Result<HistoryQuery, String> {
        HistoryQuery::parse(Some(raw), now)
    }

    #[test]
    fn history_queries_read_as_the_cli_writes_them_and_defaults_stay() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let ago = |secs| Some(now - chrono::TimeDelta::seconds(secs));
        let cursor = Cursor::from_hex("0001020304050607aa");
        let q = |pin: Option<&str>, since, limit, order, cursor: Option<Cursor>| HistoryQuery {
            pin: pin.map(str::to_owned),
            since,
            limit,
            order,
            cursor,
        };
        let default = q(None, None, super::DEFAULT_PAGE, Order::Asc, None);
        let table = [
            ("", default),
            ("since=1m", q(None, ago(60), 100, Order::Asc, None)),
            ("since=2h", q(None, ago(7200), 100, Order::Asc, None)),
            ("since=7d", q(None, ago(7 * 86_400), 100, Order::Asc, None)),
            ("since=1h30m", q(None, ago(5400), 100, Order::Asc, None)),
            // What `modelpin history` sends: RFC 3339, its `+` encoded.
            (
                "since=2027-01-15T07%3A00%3A00%2B00%3A00&pin=a",
                q(Some("a"), ago(3600), 100, Order::Asc, None),
            ),
            (
                "since=2027-01-15T09:00:00%2B02:00",
                q(None, ago(3600), 100, Order::Asc, None),
            ),
            (
                "since=2027-01-15T07:00:00Z",
                q(None, ago(3600), 100, Order::Asc, None),
            ),
            // Longer ago than any time there is: everything, however long it is written.
            (
                "since=99999999999d",
                q(None, Some(DateTime::UNIX_EPOCH), 100, Order::Asc, None),
            ),
            (
                "since=213503982335d",
                q(None, Some(DateTime::UNIX_EPOCH), 100, Order::Asc, None),
            ),
            (
                "since=99999999999999999999999999d",
                q(None, Some(DateTime::UNIX_EPOCH), 100, Order::Asc, None),
            ),
            ("limit=5", q(None, None, 5, Order::Asc, None)),
            ("limit=1000", q(None, None, MAX_PAGE, Order::Asc, None)),
            ("limit=5000", q(None, None, MAX_PAGE, Order::Asc, None)),
            (
                "limit=99999999999999999999999",
                q(None, None, MAX_PAGE, Order::Asc, None),
            ),
            ("order=asc", q(None, None, 100, Order::Asc, None)),
            ("order=desc", q(None, None, 100, Order::Desc, None)),
            (
                "order=desc&cursor=0001020304050607aa&limit=2",
                q(None, None, 2, Order::Desc, cursor),
            ),
            ("pin=a+b%26c", q(Some("a b&c"), None, 100, Order::Asc, None)),
            // Unknown parameters (a cache buster) are ignored.
            ("_=123&pin=p", q(Some("p"), None, 100, Order::Asc, None)),
        ];
        for (raw, want) in table {
            assert_eq!(parsed(raw, now), Ok(want), "{raw}");
        }
    }

    #[test]
    fn a_bad_history_query_is_refused_in_one_inert_line_naming_the_parameter() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let long = format!("since={}", "x".repeat(5000));
        // (query, the parameter and value quoted, what it takes)
        let table = [
            (
                "since=1x",
                "`since` has a value that is not valid: `1x`",
                "`7d`",
            ),
            (
                "since=",
                "`since` has a value that is not valid: ``",
                "RFC 3339",
            ),
            ("since=-1m", "`-1m`", "RFC 3339"),
            ("since=1m2h", "`1m2h`", "largest first"),
            ("since=2027-01-15", "`2027-01-15`", "`2025-06-01T12:00:00Z`"),
            (
                "since=2027-01-15T07:00:00+00:00",
                "`2027-01-15T07:00:00 00:00`",
                "%2B",
            ),
            (
                "since=%1b%5b31m%0aX%e2%80%ae",
                "`\\u{1b}[31m\\nX\\u{202e}`",
                "duration",
            ),
            (
                "limit=0",
                "`limit` has a value that is not valid: `0`",
                "from 1",
            ),
            ("limit=ten", "`ten`", "whole number"),
            ("limit=-1", "`-1`", "whole number"),
            ("limit=", "`limit`", "whole number"),
            (
                "order=newest",
                "`order` has a value that is not valid: `newest`",
                "`desc`",
            ),
            ("order=DESC", "`DESC`", "`asc`"),
            (
                "cursor=zz",
                "`cursor` has a value that is not valid: `zz`",
                "Link",
            ),
            ("cursor=00", "`00`", "earlier answer"),
            (
                "limit=1&limit=2",
                "`limit` is given more than once",
                "give it once",
            ),
            (long.as_str(), "`xxxxxxxx", "RFC 3339"),
            // A NUL would read another pin's records under a name of its own.
            (
                "pin=a%00",
                "`pin` has a value that is not valid: `a\\u{0}`",
                "no control characters",
            ),
        ];
        for (raw, quoted, accepted) in table {
            let message = parsed(raw, now).unwrap_err();
            assert!(message.contains(quoted), "{raw}: {message}");
            assert!(message.contains(accepted), "{raw}: {message}");
            assert!(
                !message.chars().any(crate::text::needs_escape),
                "{raw}: {message}"
            );
            assert!(message.chars().count() < 500, "{raw}: {message}");
        }
    }

    #[test]
    fn an_unknown_pin_is_named_inertly_and_bounded() {
        assert_eq!(
            no_such_pin("nope"),
            "no pin `nope` in pins.toml or in the store\n"
        );
        let hostile = no_such_pin(&format!("a\u{1b}]0;x\u{7}{}", "y".repeat(500)));
        assert!(
            hostile.starts_with("no pin `a\\u{1b}]0;x\\u{7}yyy"),
            "{hostile}"
        );
        assert!(!hostile.trim_end().chars().any(crate::text::needs_escape));
        assert!(hostile.chars().count() < 160, "{hostile}");
    }
}
