//! The status page: what a person sees when they open the daemon's address. `/` lists every pin,
//! worst first, with what it serves now and at lock, its retirement, the open findings with what
//! to do, and a strip of its recent audits; `/pins/{id}` shows one pin's history as small charts
//! and a table.
//!
//! The page is rendered on the server from the store and the lock, as plain HTML with its style,
//! script and charts inline, so it works offline and behind a strict Content-Security-Policy.
//! Everything here is a pure function of the values gathered (`PinView`, `PinHistory`), so the
//! same code is tested without a daemon and measured by the bench; `serve` does the I/O.

pub mod cache;
pub mod html;
pub mod overview;
pub mod pin;
pub mod sample;
pub mod serve;
pub mod svg;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::finding::PinStatus;
use crate::store::{AuditRecord, RecordSource};

/// Audits shown in each pin's strip on `/`.
pub const STRIP_AUDITS: usize = 30;

/// Audits shown on a pin's page.
pub const PIN_AUDITS: usize = 100;

/// The most bytes a pin's page takes (before gzip), whatever the store holds: its rows, IDs per
/// row, legend and texts are each bounded (`pin`). Checked on a page of hostile records.
pub const MAX_PAGE_BYTES: usize = 512 * 1024;

/// One pin as the overview shows it.
#[derive(Debug, Clone)]
pub struct PinView {
    pub id: String,
    pub provider: String,
    pub model: String,
    /// The latest audit, `None` before the first one is stored.
    pub latest: Option<AuditRecord>,
    /// Recent audits, oldest first.
    pub marks: Vec<Mark>,
    /// Served IDs modelpin.lock recorded; `None` when the pin is not locked.
    pub locked: Option<Vec<String>>,
    /// A traffic verdict that no longer counts toward the status (`TRAFFIC_RULE`).
    pub aside: Option<SetAside>,
}

/// One audit in a strip: when, and how it came out.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Mark {
    pub started_at: DateTime<Utc>,
    pub status: PinStatus,
    /// A verdict judged from traffic (OpenTelemetry spans), not a probe audit.
    pub traffic: bool,
}

/// The fields of a stored record a strip needs; serde skips the rest without building it.
#[derive(Deserialize)]
struct MarkRecord {
    started_at: DateTime<Utc>,
    pin: MarkPin,
    #[serde(default)]
    source: Option<RecordSource>,
}

#[derive(Deserialize)]
struct MarkPin {
    status: PinStatus,
}

impl Mark {
    /// The mark of a stored record; `None` for bytes that are not an audit.
    #[must_use]
    pub fn decode(bytes: &[u8]) -> Option<Mark> {
        let record: MarkRecord = serde_json::from_slice(bytes).ok()?;
        Some(Mark {
            started_at: record.started_at,
            status: record.pin.status,
            traffic: record.source.is_some(),
        })
    }

    /// The mark of a decoded record.
    #[must_use]
    pub fn of(record: &AuditRecord) -> Mark {
        Mark {
            started_at: record.started_at,
            status: record.pin.status,
            traffic: record.source.is_some(),
        }
    }

    /// The fragment naming this audit on its pin's page.
    #[must_use]
    pub fn anchor(&self) -> String {
        anchor(self.started_at)
    }
}

/// How long a traffic verdict counts toward its pin's status without a newer one. While spans
/// arrive the daemon stores a verdict whenever it changes and at least every 10 minutes, so a
/// verdict this old means three refreshes missed: the application stopped sending spans for
/// the pin.
pub const TRAFFIC_COUNTS_MINUTES: i64 = 30;

/// The rule, as the page and docs/daemon.md state it.
pub const TRAFFIC_RULE: &str = "A traffic verdict counts toward its pin's status until a probe audit that started after it finds no drift (ok or warning), or until 30 minutes pass without a newer one (no spans for the pin). After that it is shown, set aside, and no longer sets the status.";

/// A traffic verdict the pin no longer stands on, with why; the page still names it.
#[derive(Debug, Clone, PartialEq)]
pub struct SetAside {
    pub status: PinStatus,
    pub judged_at: DateTime<Utc>,
    pub why: Aside,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aside {
    /// A probe audit started after the verdict and found no drift; when it finished.
    LaterProbe(DateTime<Utc>),
    /// No newer verdict for `TRAFFIC_COUNTS_MINUTES`: no spans arrived.
    Quiet,
}

/// The record a pin stands on, from its newest probe audit and its newest traffic verdict at
/// `now`: the worse of the two (the probe audit on a tie), so a traffic verdict of ok never
/// hides what the last probe audit found, nor the other way round — while the traffic verdict
/// counts (`TRAFFIC_RULE`). One that no longer counts is returned beside, for the page to show.
#[must_use]
pub fn standing_record(
    probe: Option<AuditRecord>,
    traffic: Option<AuditRecord>,
    now: DateTime<Utc>,
) -> (Option<AuditRecord>, Option<SetAside>) {
    let Some(t) = traffic else {
        return (probe, None);
    };
    let aside = |why| SetAside {
        status: t.pin.status,
        judged_at: t.finished_at,
        why,
    };
    if let Some(p) = &probe
        && p.started_at >= t.finished_at
        && matches!(p.pin.status, PinStatus::Ok | PinStatus::Warning)
    {
        let why = aside(Aside::LaterProbe(p.finished_at));
        return (probe, (t.pin.status != PinStatus::Ok).then_some(why));
    }
    if now - t.finished_at >= chrono::Duration::minutes(TRAFFIC_COUNTS_MINUTES) {
        let why = aside(Aside::Quiet);
        return (probe, (t.pin.status != PinStatus::Ok).then_some(why));
    }
    let standing = match probe {
        Some(p) if Standing::of_status(t.pin.status) >= Standing::of_status(p.pin.status) => p,
        _ => t,
    };
    (Some(standing), None)
}

/// `a-<millis>`: the id of an audit's row on its pin's page.
#[must_use]
pub fn anchor(started_at: DateTime<Utc>) -> String {
    format!("a-{}", started_at.timestamp_millis())
}

/// One pin's page: the overview's facts plus whole records, oldest first.
#[derive(Debug, Clone)]
pub struct PinHistory {
    pub view: PinView,
    pub records: Vec<AuditRecord>,
    /// The family-wise false-alarm rate the p-values are judged against.
    pub alpha: f64,
}

/// What every page says about itself.
#[derive(Debug, Clone)]
pub struct Meta {
    pub generated: DateTime<Utc>,
    /// The validator the page was rendered for; the refresh script compares it.
    pub etag: String,
}

/// How a pin stands on the overview, worst first: a pin never audited sits between the pins
/// that need attention and those that are fine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    Drift,
    Inconclusive,
    Warning,
    Pending,
    Ok,
}

impl Standing {
    #[must_use]
    pub fn of(view: &PinView) -> Standing {
        view.latest
            .as_ref()
            .map_or(Standing::Pending, |r| Standing::of_status(r.pin.status))
    }

    #[must_use]
    pub fn of_status(status: PinStatus) -> Standing {
        match status {
            PinStatus::Drift => Standing::Drift,
            PinStatus::Inconclusive => Standing::Inconclusive,
            PinStatus::Warning => Standing::Warning,
            PinStatus::Ok => Standing::Ok,
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Drift => "drift",
            Standing::Inconclusive => "inconclusive",
            Standing::Warning => "warning",
            Standing::Pending => "not audited yet",
            Standing::Ok => "ok",
        }
    }
}

impl PinView {
    /// A configured pin before its history is read.
    #[must_use]
    pub fn blank(pin: &crate::config::Pin, locked: Option<Vec<String>>) -> PinView {
        PinView {
            id: pin.id.clone(),
            provider: pin.provider.clone(),
            model: pin.model.clone(),
            latest: None,
            marks: Vec::new(),
            locked,
            aside: None,
        }
    }

    /// Days until the pinned model retires (negative once retired), per the latest audit.
    #[must_use]
    pub fn days_left(&self) -> Option<i64> {
        self.latest
            .as_ref()?
            .pin
            .lifecycle
            .as_ref()
            .and_then(|l| l.days_left)
    }
}

/// Worst first: by standing, then the nearest retirement, then id.
pub fn by_urgency(pins: &mut [PinView]) {
    pins.sort_by(|a, b| {
        Standing::of(a)
            .cmp(&Standing::of(b))
            .then_with(|| {
                let days = |v: &PinView| v.days_left().unwrap_or(i64::MAX);
                days(a).cmp(&days(b))
            })
            .then_with(|| a.id.cmp(&b.id))
    });
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{Mark, PinView, Standing, by_urgency};
    use crate::finding::PinStatus;
    use crate::report::LifecycleSummary;
    use crate::store::AuditRecord;

    pub(crate) fn view(id: &str, status: Option<PinStatus>, days: Option<i64>) -> PinView {
        let latest = status.map(|s| {
            let mut r: AuditRecord = crate::store::tests::record(id, 1_800_000_000, "x");
            r.pin.status = s;
            r.pin.lifecycle = days.map(|d| LifecycleSummary {
                stage: crate::lifecycle::Stage::Scheduled,
                retires: Some("2027-06-01".into()),
                days_left: Some(d),
                replacement: vec!["next-model".into()],
            });
            r
        });
        PinView {
            id: id.into(),
            provider: "p".into(),
            model: "m".into(),
            marks: Vec::new(),
            latest,
            locked: None,
            aside: None,
        }
    }

    #[test]
    fn worst_first_then_nearest_retirement_then_id() {
        let mut pins = vec![
            view("ok-b", Some(PinStatus::Ok), None),
            view("ok-a", Some(PinStatus::Ok), Some(200)),
            view("new", None, None),
            view("warn", Some(PinStatus::Warning), Some(20)),
            view("drift", Some(PinStatus::Drift), None),
            view("unsure", Some(PinStatus::Inconclusive), None),
            view("warn-soon", Some(PinStatus::Warning), Some(3)),
        ];
        by_urgency(&mut pins);
        let ids: Vec<&str> = pins.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "drift",
                "unsure",
                "warn-soon",
                "warn",
                "new",
                "ok-a",
                "ok-b"
            ]
        );
        assert_eq!(Standing::of(&pins[4]), Standing::Pending);
    }

    /// The page weight target: 100 pins, a full strip each, a third drifting, gzipped.
    #[test]
    fn a_hundred_pins_gzip_to_at_most_50_kb() {
        let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let mut pins = super::sample::fleet(100, now);
        by_urgency(&mut pins);
        let meta = super::Meta {
            generated: now,
            etag: "W/\"0123456789abcdef01234567\"".into(),
        };
        let html = super::overview::overview(&pins, &meta);
        let zipped = super::cache::compress(html.as_bytes()).unwrap();
        assert!(
            zipped.len() <= 50 * 1024,
            "{} bytes gzipped ({} plain)",
            zipped.len(),
            html.len()
        );
        assert_eq!(html.matches("<article class=\"pin ").count(), 100);
    }

    #[test]
    fn a_traffic_verdict_never_hides_a_worse_probe_audit_nor_the_other_way_round() {
        use crate::store::RecordSource::Traffic;
        let record = |status, traffic: bool| {
            let mut r = crate::store::tests::record("p", 1_800_000_000, "x");
            r.pin.status = status;
            r.source = traffic.then_some(Traffic);
            r
        };
        let now = chrono::DateTime::from_timestamp(1_800_000_060, 0).unwrap();
        let standing = |p: Option<PinStatus>, t: Option<PinStatus>| {
            super::standing_record(p.map(|s| record(s, false)), t.map(|s| record(s, true)), now)
                .0
                .map(|r| (r.pin.status, r.source.is_some()))
        };
        for (probe, traffic, want) in [
            (
                Some(PinStatus::Drift),
                Some(PinStatus::Ok),
                Some((PinStatus::Drift, false)),
            ),
            (
                Some(PinStatus::Inconclusive),
                Some(PinStatus::Drift),
                Some((PinStatus::Drift, true)),
            ),
            (
                Some(PinStatus::Inconclusive),
                Some(PinStatus::Inconclusive),
                Some((PinStatus::Inconclusive, false)),
            ),
            (None, Some(PinStatus::Ok), Some((PinStatus::Ok, true))),
            (Some(PinStatus::Ok), None, Some((PinStatus::Ok, false))),
            (None, None, None),
        ] {
            assert_eq!(standing(probe, traffic), want, "{probe:?} {traffic:?}");
        }
    }

    #[test]
    fn a_traffic_verdict_stops_counting_after_a_later_clean_probe_audit_or_half_an_hour_of_quiet() {
        use super::{Aside, standing_record};
        use crate::store::RecordSource::Traffic;
        let at = |secs: i64, status, traffic: bool| {
            let mut r = crate::store::tests::record("p", secs, "x");
            r.finished_at = r.started_at;
            r.pin.status = status;
            r.source = traffic.then_some(Traffic);
            r
        };
        let t0 = 1_800_000_000;
        let now = |secs: i64| chrono::DateTime::from_timestamp(secs, 0).unwrap();
        let drift = at(t0, PinStatus::Drift, true);
        // Fresh, with an older ok probe audit: the drift stands.
        let (st, aside) = standing_record(
            Some(at(t0 - 60, PinStatus::Ok, false)),
            Some(drift.clone()),
            now(t0 + 60),
        );
        assert_eq!(st.map(|r| r.pin.status), Some(PinStatus::Drift));
        assert_eq!(aside, None);
        // A probe audit after it found no drift: ok, the verdict set aside with that reason.
        for later in [PinStatus::Ok, PinStatus::Warning] {
            let (st, aside) = standing_record(
                Some(at(t0 + 10, later, false)),
                Some(drift.clone()),
                now(t0 + 60),
            );
            assert_eq!(st.map(|r| r.pin.status), Some(later));
            let aside = aside.expect("set aside");
            assert_eq!(aside.status, PinStatus::Drift);
            assert!(matches!(aside.why, Aside::LaterProbe(_)));
        }
        // A later probe audit that is itself inconclusive does not clear it.
        let (st, _) = standing_record(
            Some(at(t0 + 10, PinStatus::Inconclusive, false)),
            Some(drift.clone()),
            now(t0 + 60),
        );
        assert_eq!(st.map(|r| r.pin.status), Some(PinStatus::Drift));
        // 29 minutes quiet: still counts; 30: set aside, even with no probe audit at all.
        let (st, _) = standing_record(None, Some(drift.clone()), now(t0 + 29 * 60));
        assert_eq!(st.map(|r| r.pin.status), Some(PinStatus::Drift));
        let (st, aside) = standing_record(None, Some(drift.clone()), now(t0 + 30 * 60));
        assert_eq!(
            st, None,
            "a pin seen only through stale traffic is not audited yet"
        );
        assert_eq!(aside.map(|a| a.why), Some(Aside::Quiet));
    }

    #[test]
    fn a_mark_decodes_from_a_stored_record_and_garbage_is_none() {
        let mut record = crate::store::tests::record("p", 1_800_000_000, "x");
        record.pin.status = PinStatus::Drift;
        let bytes = serde_json::to_vec(&record).unwrap();
        let mark = Mark::decode(&bytes).unwrap();
        assert_eq!(mark.status, PinStatus::Drift);
        assert_eq!(mark.anchor(), "a-1800000000000");
        assert!(!mark.traffic);
        assert_eq!(Mark::of(&record), mark);
        record.source = Some(crate::store::RecordSource::Traffic);
        let traffic = Mark::decode(&serde_json::to_vec(&record).unwrap()).unwrap();
        assert!(traffic.traffic, "a traffic verdict is marked as such");
        assert_eq!(Mark::of(&record), traffic);
        assert!(Mark::decode(b"{\"not\": 1}").is_none());
        assert!(Mark::decode(b"\xff\x00").is_none());
    }
}
