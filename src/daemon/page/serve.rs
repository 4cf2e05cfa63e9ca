//! Serving the status pages: same access rule as `/api/*`, conditional requests, gzip, and a
//! strict Content-Security-Policy.
//!
//! An idle browser should cost the daemon close to nothing. Every page carries a validator made
//! from what it shows — the config and lock digests and the key of each pin's latest audit, read
//! without decoding a record — so a revalidation (`If-None-Match`, else `If-Modified-Since`) is
//! answered 304 from a few key lookups, and only a change renders the page again. Rendering and
//! compression run on the blocking pool, off the workers that run the audits.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use sha2::Digest as _;

use crate::config::{Config, Pin};
use crate::daemon::Daemon;
use crate::daemon::page::html::{content_security_policy, document, overview};
use crate::daemon::page::{
    Mark, Meta, PIN_AUDITS, PinHistory, PinView, STRIP_AUDITS, by_urgency, pin,
};
use crate::lock::LoadedLock;
use crate::store::{AuditRecord, Store, StoreError, key_millis};

/// What a page shows, reduced to a validator and a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamp {
    /// A weak entity tag, `W/"<hex>"`: the gzip and plain forms share it.
    pub etag: String,
    pub last_modified: DateTime<Utc>,
}

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
    if !crate::daemon::http::authorized(&daemon, &headers) {
        return crate::daemon::http::unauthorized();
    }
    let work = tokio::task::spawn_blocking(move || build(&daemon, &headers, &which)).await;
    match work {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the store cannot be read: {e}\n"),
        ),
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

fn build(daemon: &Daemon, headers: &HeaderMap, which: &Which) -> Result<Response, StoreError> {
    let config = daemon.snapshot().config.clone();
    let lock = daemon
        .lock_file(&config.settings.lockfile)
        .ok()
        .and_then(|l| l.as_ref().clone());
    let pins: Vec<&Pin> = match which {
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
    let stamp = stamp(
        &daemon.store,
        &config,
        lock.as_ref(),
        &pins,
        kind,
        daemon.started,
    )?;
    let private = daemon.api_token.is_some();
    if not_modified(headers, &stamp) {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        validators(response.headers_mut(), &stamp, private);
        return Ok(response);
    }
    let meta = Meta {
        generated: stamp.last_modified,
        etag: stamp.etag.clone(),
    };
    let html = match which {
        Which::Overview => overview(&overview_views(&daemon.store, &pins, lock.as_ref())?, &meta),
        Which::Pin(_) => {
            let blank = PinView::blank(pins[0], locked_of(lock.as_ref(), &pins[0].id));
            let (view, records) = view_of(&daemon.store, blank, PIN_AUDITS)?;
            let history = PinHistory {
                view,
                records,
                alpha: config.settings.alpha,
            };
            pin::page(&history, &meta)
        }
    };
    Ok(html_response(
        StatusCode::OK,
        html,
        Some(&stamp),
        accepts_gzip(headers),
        private,
    ))
}

/// The validator of a page over `pins`: changes when the config, the lock or any of the pins'
/// latest audit changes.
pub fn stamp(
    store: &Store,
    config: &Config,
    lock: Option<&LoadedLock>,
    pins: &[&Pin],
    kind: &str,
    started: DateTime<Utc>,
) -> Result<Stamp, StoreError> {
    let mut hash = sha2::Sha256::new();
    for part in [
        kind,
        env!("CARGO_PKG_VERSION"),
        &config.digest,
        lock.map_or("-", |l| l.digest.as_str()),
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let mut newest = started.timestamp_millis().max(0) as u64;
    for pin in pins {
        hash.update(pin.id.as_bytes());
        hash.update([0]);
        if let Some(key) = store.latest_key(&pin.id)? {
            hash.update(&key);
            newest = newest.max(key_millis(&pin.id, &key).unwrap_or(0));
        }
        hash.update([0xff]);
    }
    let digest = hash.finalize();
    let mut etag = "W/\"".to_owned();
    for byte in &digest[..12] {
        let _ = write!(etag, "{byte:02x}");
    }
    etag.push('"');
    let last_modified =
        DateTime::from_timestamp_millis(i64::try_from(newest).unwrap_or(0)).unwrap_or(started);
    Ok(Stamp {
        etag,
        last_modified,
    })
}

/// What the lock recorded as served for a pin; `None` when it is not locked.
fn locked_of(lock: Option<&LoadedLock>, pin: &str) -> Option<Vec<String>> {
    lock.and_then(|l| l.lock.pins.get(pin))
        .map(|p| p.served_models.keys().cloned().collect())
}

/// The overview's views of `pins`, worst first, read from the store.
pub fn overview_views(
    store: &Store,
    pins: &[&Pin],
    lock: Option<&LoadedLock>,
) -> Result<Vec<PinView>, StoreError> {
    let mut views = pins
        .iter()
        .map(|p| {
            let blank = PinView::blank(p, locked_of(lock, &p.id));
            view_of(store, blank, STRIP_AUDITS).map(|(v, _)| v)
        })
        .collect::<Result<Vec<_>, _>>()?;
    by_urgency(&mut views);
    Ok(views)
}

/// `view` filled from the pin's latest `limit` audits, and those records (oldest first) when
/// `limit` is more than a strip: the overview decodes whole only each pin's latest record.
pub fn view_of(
    store: &Store,
    mut view: PinView,
    limit: usize,
) -> Result<(PinView, Vec<AuditRecord>), StoreError> {
    let raw = store.recent_raw(&view.id, limit)?;
    let mut records = Vec::new();
    if limit <= STRIP_AUDITS {
        view.latest = raw
            .first()
            .and_then(|b| serde_json::from_slice::<AuditRecord>(b).ok());
        view.marks = raw.iter().rev().filter_map(|b| Mark::decode(b)).collect();
    } else {
        records = raw
            .iter()
            .rev()
            .filter_map(|b| serde_json::from_slice::<AuditRecord>(b).ok())
            .collect();
        view.latest = records.last().cloned();
        view.marks = records
            .iter()
            .map(|r| Mark {
                started_at: r.started_at,
                status: r.pin.status,
            })
            .collect();
    }
    Ok((view, records))
}

/// Whether the client's copy is current: `If-None-Match` decides when present (a weak match,
/// RFC 9110 §13.1.2), else `If-Modified-Since`.
#[must_use]
pub fn not_modified(headers: &HeaderMap, stamp: &Stamp) -> bool {
    let ours = stamp.etag.trim_start_matches("W/");
    if let Some(tags) = headers.get(header::IF_NONE_MATCH) {
        let Ok(tags) = tags.to_str() else {
            return false;
        };
        return tags
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.trim_start_matches("W/") == ours);
    }
    let since = headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    since.is_some_and(|since| {
        let since: DateTime<Utc> = since.into();
        stamp.last_modified.timestamp() <= since.timestamp()
    })
}

/// Whether `Accept-Encoding` takes gzip (with a q-value above 0).
#[must_use]
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(accept) = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    accept.split(',').any(|part| {
        let mut fields = part.split(';');
        let name = fields.next().unwrap_or("").trim();
        let q = fields
            .find_map(|f| f.trim().strip_prefix("q="))
            .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok());
        (name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip"))
            && q.is_some_and(|q| q > 0.0)
    })
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

/// ETag, Last-Modified, and a cache policy that makes browsers revalidate every time.
fn validators(h: &mut HeaderMap, stamp: &Stamp, private: bool) {
    if let Ok(etag) = HeaderValue::from_str(&stamp.etag) {
        h.insert(header::ETAG, etag);
    }
    let modified = httpdate::fmt_http_date(stamp.last_modified.into());
    if let Ok(modified) = HeaderValue::from_str(&modified) {
        h.insert(header::LAST_MODIFIED, modified);
    }
    let cache = if private {
        "private, no-cache"
    } else {
        "no-cache"
    };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
}

/// gzip at the default level; `None` if the encoder fails (the page is then sent plain).
#[must_use]
pub fn compress(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::default(),
    );
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok()
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

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};
    use chrono::DateTime;

    use super::{Stamp, accepts_gzip, not_modified};

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn stamp() -> Stamp {
        Stamp {
            etag: "W/\"abc\"".into(),
            last_modified: DateTime::from_timestamp(1_800_000_000, 500_000_000).unwrap(),
        }
    }

    #[test]
    fn if_none_match_decides_before_if_modified_since() {
        let s = stamp();
        for (value, want) in [
            ("W/\"abc\"", true),
            ("\"abc\"", true),
            ("\"x\", W/\"abc\"", true),
            ("*", true),
            ("\"abd\"", false),
        ] {
            assert_eq!(
                not_modified(&headers(&[(header::IF_NONE_MATCH, value)]), &s),
                want,
                "{value}"
            );
        }
        let later = "Fri, 15 Jan 2027 08:00:00 GMT";
        let same = httpdate::fmt_http_date(s.last_modified.into());
        let earlier = "Thu, 01 Jan 2026 00:00:00 GMT";
        assert!(not_modified(
            &headers(&[(header::IF_MODIFIED_SINCE, later)]),
            &s
        ));
        assert!(not_modified(
            &headers(&[(header::IF_MODIFIED_SINCE, &same)]),
            &s
        ));
        assert!(!not_modified(
            &headers(&[(header::IF_MODIFIED_SINCE, earlier)]),
            &s
        ));
        assert!(!not_modified(
            &headers(&[(header::IF_MODIFIED_SINCE, "yesterday")]),
            &s
        ));
        let both = headers(&[
            (header::IF_NONE_MATCH, "\"other\""),
            (header::IF_MODIFIED_SINCE, later),
        ]);
        assert!(
            !not_modified(&both, &s),
            "a stale ETag wins over a fresh date"
        );
        assert!(!not_modified(&HeaderMap::new(), &s));
    }

    #[test]
    fn gzip_only_when_accepted_with_a_positive_quality() {
        for (value, want) in [
            ("gzip", true),
            ("br;q=1.0, gzip;q=0.5", true),
            ("GZIP", true),
            ("x-gzip", true),
            ("gzip;q=0", false),
            ("gzip;q=0.000", false),
            ("br, deflate", false),
            ("gzip;q=nonsense", false),
        ] {
            assert_eq!(
                accepts_gzip(&headers(&[(header::ACCEPT_ENCODING, value)])),
                want,
                "{value}"
            );
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
