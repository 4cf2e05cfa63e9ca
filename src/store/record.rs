//! What history holds and how it is read back: the stored record of one audit (or traffic
//! verdict), a page of them with the cursor of the next, the newest record's key (a validator for
//! the status pages) and records as stored, for readers that decode only a few fields.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::report::PinReport;

/// One pin's audit as kept in history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditRecord {
    pub audit_id: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub config_digest: String,
    pub lock_digest: Option<String>,
    pub pin: PinReport,
    /// Where the verdict came from; absent for a probe audit (and every older record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RecordSource>,
}

/// A verdict that was not a probe audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordSource {
    /// Judged from the application's own calls, as OpenTelemetry GenAI spans.
    Traffic,
}

impl AuditRecord {
    /// The key of the alert state this record steps: probe audits and traffic verdicts keep
    /// separate states, so a verdict from one never resolves an alert the other raised.
    #[must_use]
    pub fn alert_subject(&self) -> String {
        match self.source {
            None => self.pin.id.clone(),
            Some(RecordSource::Traffic) => format!("{}\0traffic", self.pin.id),
        }
    }
}

/// A record as stored (JSON): a reader that needs a few fields decodes only those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord(pub(crate) Vec<u8>);

impl RawRecord {
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The whole record; `None` for bytes that are not one.
    #[must_use]
    pub fn decode(&self) -> Option<AuditRecord> {
        serde_json::from_slice(&self.0).ok()
    }
}

/// What identifies a pin's newest record, read without decoding it: enough to tell whether
/// anything changed since a page was rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatestKey {
    /// When the record's audit started, in milliseconds since the epoch.
    pub started_millis: u64,
    pub audit_id: String,
}

/// Where a page of history ended, as it travels in a URL (hex); what the bytes mean is the
/// backend's business.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor(pub(crate) Vec<u8>);

impl Cursor {
    /// The cursor as it travels in a URL.
    #[must_use]
    pub fn to_hex(&self) -> String {
        use std::fmt::Write as _;
        self.0.iter().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    }

    /// The history index's key of an audit, the one layout both backends page by: start time
    /// (ms since the epoch, big-endian), pin, NUL, audit id. sled stores it as its time index.
    #[must_use]
    pub(crate) fn index_key(millis: u64, pin: &str, audit_id: &str) -> Cursor {
        let mut key = millis.to_be_bytes().to_vec();
        key.extend_from_slice(pin.as_bytes());
        key.push(0);
        key.extend_from_slice(audit_id.as_bytes());
        Cursor(key)
    }

    /// The cursor just after `record`, in either order.
    #[must_use]
    pub fn after(record: &AuditRecord) -> Cursor {
        let millis = record.started_at.timestamp_millis().max(0) as u64;
        Cursor::index_key(millis, &record.pin.id, &record.audit_id)
    }

    /// `None` unless `text` is hex of a plausible index key.
    #[must_use]
    pub fn from_hex(text: &str) -> Option<Cursor> {
        if !text.len().is_multiple_of(2) || text.len() > 2048 {
            return None;
        }
        let bytes: Option<Vec<u8>> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
            .collect();
        bytes.filter(|b| b.len() >= 8).map(Cursor)
    }
}

/// Which way a page of history runs: a script watching for news reads the newest first, an
/// export the oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Oldest first: the order records were written in, and what readers got before `Desc`.
    #[default]
    Asc,
    /// Newest first.
    Desc,
}

/// One page of history.
#[derive(Debug, Default)]
pub struct Page {
    pub records: Vec<AuditRecord>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}
