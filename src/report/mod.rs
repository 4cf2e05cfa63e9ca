//! The report: one audit's result as a serialisable value, and its renderers.
//!
//! The audit builds a `Report` (`audit::verdict`); a command hands it to exactly one renderer.
//! Nothing here judges, counts or prices: this module only holds the result and writes it. The JSON form is the contract CI scripts read (`modelpin.report/v1`): pins in
//! config order, maps sorted, so the same inputs give the same bytes apart from the two times.

pub mod github;
pub mod human;
pub mod junit;
mod lifetime;
#[cfg(test)]
mod props;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::exit::Exit;
use crate::finding::{Code, Finding, PinStatus};

pub use lifetime::{Alarm, AlarmCause, LifetimeEvidence};

pub const SCHEMA: &str = "modelpin.report/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub modelpin_version: String,
    pub config_digest: String,
    pub lock_digest: Option<String>,
    /// The digest of the pins.toml the lock was recorded for; differs from `config_digest` when
    /// pins.toml changed since (entries still matching their pin are compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_config_digest: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    pub status: PinStatus,
    pub exit_code: Exit,
    pub pins: Vec<PinReport>,
    pub summary: Summary,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PinReport {
    pub id: String,
    pub provider: String,
    pub model: String,
    pub status: PinStatus,
    pub served_models: BTreeMap<String, u64>,
    pub upstreams: BTreeMap<String, u64>,
    pub calls: Calls,
    pub tokens: Tokens,
    /// Reported by the provider where it reports cost, else usage × price; `None` without a price.
    pub cost_usd: Option<f64>,
    /// The pinned model's retirement, when any source lists one.
    pub lifecycle: Option<LifecycleSummary>,
    /// Every behaviour test run in this audit (also when nothing drifted).
    pub behaviour: Vec<BehaviourTest>,
    pub findings: Vec<Finding>,
    /// What the traffic budget summed into an `(others)` entry, by field (`served_models`,
    /// `upstreams`); absent when nothing was (every probe audit).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capped: BTreeMap<String, Others>,
    /// What this audit added to the behaviour evidence accumulated since the lock (daemon
    /// audits only; `alert::lifetime`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<LifetimeEvidence>,
}

/// What one map or list of a traffic record lost to its byte budget (`traffic::budget`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Others {
    /// Distinct IDs summed into `(others)` (for a list: entries left out).
    pub ids: u64,
    /// Their counts, summed (for a list: entries left out).
    pub count: u64,
}

/// One behaviour test, for dashboards: the full evidence is in `behavior_drift`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BehaviourTest {
    pub test: crate::stats::TestKind,
    pub probes: Vec<String>,
    pub p_value: f64,
    /// After Holm; `None` for tests outside the family (too small to ever reject).
    pub adjusted_p: Option<f64>,
    pub rejected: bool,
}

/// Where the pinned model stands; the sources are in the lifecycle findings' evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LifecycleSummary {
    /// `deprecated`, `scheduled` or `retired` (never `no_record`: then there is no summary).
    pub stage: crate::lifecycle::Stage,
    /// The retirement date or instant, as the deciding source gives it.
    pub retires: Option<String>,
    pub days_left: Option<i64>,
    pub replacement: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calls {
    pub sent: u64,
    pub ok: u64,
    pub retried: u64,
    pub failed: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub pins: u64,
    pub ok: u64,
    pub warning: u64,
    pub drift: u64,
    pub inconclusive: u64,
    pub calls: Calls,
    pub tokens: Tokens,
    /// What the priced pins cost, summed; `None` when no pin could be priced. With some pins
    /// unpriced (`unpriced_pins`) it is a lower bound: theirs is not in it.
    pub cost_usd: Option<f64>,
    /// Pins whose cost is unknown (no `price`, and the provider reported none), in config order.
    #[serde(default)]
    pub unpriced_pins: Vec<String>,
    /// How many pins carry each finding code.
    pub findings: BTreeMap<String, u64>,
}

impl Report {
    /// Assembles the report; `strict` makes warnings fail the run.
    #[must_use]
    pub fn new(
        config_digest: String,
        lock_digest: Option<String>,
        started_at: String,
        finished_at: String,
        pins: Vec<PinReport>,
        strict: bool,
    ) -> Report {
        let status = pins.iter().map(|p| p.status).max().unwrap_or(PinStatus::Ok);
        let summary = summarise(&pins);
        Report {
            schema: SCHEMA.to_owned(),
            modelpin_version: env!("CARGO_PKG_VERSION").to_owned(),
            config_digest,
            lock_digest,
            lock_config_digest: None,
            started_at,
            finished_at,
            status,
            exit_code: Exit::of_status(status, strict),
            pins,
            summary,
        }
    }
}

fn summarise(pins: &[PinReport]) -> Summary {
    let mut summary = Summary {
        pins: pins.len() as u64,
        ok: 0,
        warning: 0,
        drift: 0,
        inconclusive: 0,
        calls: Calls::default(),
        tokens: Tokens::default(),
        cost_usd: None,
        unpriced_pins: Vec::new(),
        findings: BTreeMap::new(),
    };
    for pin in pins {
        match pin.status {
            PinStatus::Ok => summary.ok += 1,
            PinStatus::Warning => summary.warning += 1,
            PinStatus::Drift => summary.drift += 1,
            PinStatus::Inconclusive => summary.inconclusive += 1,
        }
        summary.calls.sent += pin.calls.sent;
        summary.calls.ok += pin.calls.ok;
        summary.calls.retried += pin.calls.retried;
        summary.calls.failed += pin.calls.failed;
        summary.tokens.input = summary.tokens.input.saturating_add(pin.tokens.input);
        summary.tokens.output = summary.tokens.output.saturating_add(pin.tokens.output);
        match pin.cost_usd {
            Some(cost) => *summary.cost_usd.get_or_insert(0.0) += cost,
            None => summary.unpriced_pins.push(pin.id.clone()),
        }
        let codes: std::collections::BTreeSet<Code> = pin.findings.iter().map(|f| f.code).collect();
        for code in codes {
            *summary
                .findings
                .entry(code.as_str().to_owned())
                .or_insert(0) += 1;
        }
    }
    summary.cost_usd = summary.cost_usd.map(|c| (c * 1e8).round() / 1e8);
    summary
}

impl Summary {
    /// The audit's cost in words, as the human and GitHub forms show it: `$0.0123`,
    /// `unpriced` when no pin could be priced, or `$0.0123 + 2 pins unpriced`.
    #[must_use]
    pub fn cost_text(&self) -> String {
        match (self.cost_usd, self.unpriced_pins.len()) {
            (None, _) => "unpriced".to_owned(),
            (Some(c), 0) => format!("${c:.4}"),
            (Some(c), n) => format!("${c:.4} + {} unpriced", crate::words::count_of(n, "pin")),
        }
    }
}

/// The JSON form: pretty, with a trailing newline.
#[must_use]
pub fn to_json(report: &Report) -> String {
    let mut text = crate::text::json_inert(
        serde_json::to_string_pretty(report).expect("report types always serialise"),
    );
    text.push('\n');
    text
}
