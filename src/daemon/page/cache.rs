//! Revalidation and encoding of the status pages. Every page carries a validator made from what
//! it shows — the config and lock digests and the key of each pin's latest audit, read without
//! decoding a record — so a browser revalidating an unchanged page gets 304 after a few key
//! lookups. `Last-Modified` is the start of the newest audit shown; `If-None-Match`, which
//! browsers send along, decides when both are present.

use std::fmt::Write as _;
use std::io::Write as _;

use axum::http::{HeaderMap, HeaderValue, header};
use chrono::{DateTime, Utc};
use sha2::Digest as _;

use crate::config::{Config, Pin};
use crate::daemon::page::TRAFFIC_COUNTS_MINUTES;
use crate::lock::LoadedLock;
use crate::store::{LatestKey, Store, StoreError};

/// What a page shows, reduced to a validator and a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamp {
    /// A weak entity tag, `W/"<hex>"`: the gzip and plain forms share it.
    pub etag: String,
    pub last_modified: DateTime<Utc>,
}

/// The validator of a page over `pins`: changes when the config, the lock or any of the pins'
/// latest record changes. One read of the store for all of them.
pub async fn stamp(
    store: &Store,
    config: &Config,
    lock: Option<&LoadedLock>,
    pins: &[&Pin],
    kind: &str,
    started: DateTime<Utc>,
) -> Result<Stamp, StoreError> {
    let ids: Vec<String> = pins.iter().map(|p| p.id.clone()).collect();
    let latest = store.latest_keys(&ids).await?;
    Ok(stamp_of(config, lock, &ids, &latest, kind, started))
}

fn stamp_of(
    config: &Config,
    lock: Option<&LoadedLock>,
    pins: &[String],
    latest: &[Option<LatestKey>],
    kind: &str,
    started: DateTime<Utc>,
) -> Stamp {
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
    for (pin, latest) in pins.iter().zip(latest) {
        hash.update(pin.as_bytes());
        hash.update([0]);
        if let Some(key) = latest {
            hash.update(key.started_millis.to_be_bytes());
            hash.update(key.audit_id.as_bytes());
            newest = newest.max(key.started_millis);
            // A traffic verdict stops counting after a quiet spell with no record written, so
            // the page changes then too (`TRAFFIC_RULE`). Judged on the pin's newest record: a
            // traffic verdict older than a newer probe audit is caught when that one ages.
            let now = Utc::now().timestamp_millis().max(0) as u64;
            let quiet =
                now.saturating_sub(key.started_millis) >= (TRAFFIC_COUNTS_MINUTES * 60_000) as u64;
            hash.update([u8::from(quiet)]);
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
    Stamp {
        etag,
        last_modified,
    }
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

/// ETag, Last-Modified, and a cache policy that makes browsers revalidate every time.
pub(super) fn validators(h: &mut HeaderMap, stamp: &Stamp, private: bool) {
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

/// gzip at level 3; `None` if the encoder fails (the page is then sent plain). On 100 pins the
/// default level 6 saves 10% of the bytes and costs five times the time (bench/status_page).
#[must_use]
pub fn compress(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::new(3),
    );
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok()
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
