//! Strict mirror of the `modelpin.report/v1` JSON: an accidental schema change fails decoding.

// Every field is here so that decoding is strict, not because every test reads it.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub schema: String,
    pub modelpin_version: String,
    pub config_digest: String,
    pub lock_digest: Option<String>,
    pub lock_config_digest: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    pub status: String,
    pub exit_code: u8,
    pub pins: Vec<Pin>,
    pub summary: Summary,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    pub id: String,
    pub provider: String,
    pub model: String,
    pub status: String,
    pub served_models: BTreeMap<String, u64>,
    pub upstreams: BTreeMap<String, u64>,
    pub calls: Calls,
    pub tokens: Tokens,
    pub cost_usd: Option<f64>,
    pub lifecycle: Option<Lifecycle>,
    pub behaviour: Vec<BehaviourTest>,
    pub findings: Vec<Finding>,
    /// Traffic records only: what the byte budget summed into `(others)`, by field.
    #[serde(default)]
    pub capped: BTreeMap<String, Others>,
    /// Daemon audits only: what the audit added to the evidence accumulated since the lock.
    #[serde(default)]
    pub lifetime: Option<Lifetime>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lifetime {
    pub audits: u64,
    pub smallest_p: Option<f64>,
    /// The level at which the audit alarms on its own.
    #[serde(default)]
    pub look: Option<f64>,
    pub conformal_p: Option<f64>,
    pub e_value: Option<f64>,
    pub statistic: f64,
    pub threshold: f64,
    pub since: Option<String>,
    pub years_to_false_alarm: f64,
    #[serde(default)]
    pub held_back: bool,
    pub alarm: Option<Alarm>,
    /// Set on the daemon's identity-only ticks: when its next behaviour audit may run.
    #[serde(default)]
    pub next_behaviour: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alarm {
    pub at: String,
    pub cause: String,
    pub audit_id: String,
    pub audits: u64,
    #[serde(default)]
    pub look: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Others {
    pub ids: u64,
    pub count: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BehaviourTest {
    pub test: String,
    pub probes: Vec<String>,
    pub p_value: f64,
    pub adjusted_p: Option<f64>,
    pub rejected: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lifecycle {
    pub stage: String,
    pub retires: Option<String>,
    pub days_left: Option<i64>,
    pub replacement: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calls {
    pub sent: u64,
    pub ok: u64,
    pub retried: u64,
    pub failed: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub code: String,
    pub severity: Option<String>,
    pub message: String,
    pub evidence: serde_json::Value,
    pub action: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub pins: u64,
    pub ok: u64,
    pub warning: u64,
    pub drift: u64,
    pub inconclusive: u64,
    pub calls: Calls,
    pub tokens: Tokens,
    /// `null` when no pin could be priced; a lower bound when `unpriced_pins` is not empty.
    pub cost_usd: Option<f64>,
    pub unpriced_pins: Vec<String>,
    pub findings: BTreeMap<String, u64>,
}

impl Report {
    pub fn pin(&self, id: &str) -> &Pin {
        self.pins
            .iter()
            .find(|p| p.id == id)
            .expect("pin in report")
    }
}

impl Pin {
    pub fn codes(&self) -> Vec<&str> {
        self.findings.iter().map(|f| f.code.as_str()).collect()
    }

    pub fn finding(&self, code: &str) -> &Finding {
        self.findings
            .iter()
            .find(|f| f.code == code)
            .unwrap_or_else(|| panic!("no {code} in {:?}", self.codes()))
    }
}

/// One audit as `/api/history` and `modelpin history --format json` give it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub audit_id: String,
    pub started_at: String,
    pub finished_at: String,
    pub config_digest: String,
    pub lock_digest: Option<String>,
    pub pin: Pin,
    /// `traffic` for a verdict judged from spans; absent for a probe audit.
    pub source: Option<String>,
}

impl Record {
    pub fn is_traffic(&self) -> bool {
        self.source.as_deref() == Some("traffic")
    }

    pub fn has_finding(&self, code: &str) -> bool {
        self.pin.findings.iter().any(|f| f.code == code)
    }
}
