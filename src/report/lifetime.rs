//! The accumulated-evidence part of a daemon audit's record: what the audit added to the pin's
//! evidence since its lock, for the status page's plot and the alert's "since when".

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What one audit added to the pin's accumulated behaviour evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LifetimeEvidence {
    /// Audits weighed since the lock, this one included.
    pub audits: u64,
    /// This audit's smallest Holm-adjusted p-value against the lock; `None` when it measured no
    /// behaviour test (the evidence then stood still).
    pub smallest_p: Option<f64>,
    /// The level at which that p-value alarms on its own (`stats::sequential::own_look`); `None`
    /// when the audit was not weighed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub look: Option<f64>,
    /// Where that p-value ranks among the audits since the lock (uniform while nothing changed).
    pub conformal_p: Option<f64>,
    /// The e-value the rank was turned into.
    pub e_value: Option<f64>,
    /// The Shiryaev–Roberts statistic after this audit, and the threshold it alarms at.
    pub statistic: f64,
    pub threshold: f64,
    /// Since when the statistic has stayed at 1 or above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Mean years to a false alarm at the pin's schedule once the early audits are past, at
    /// least: the accumulated evidence and the later audits' own looks together.
    pub years_to_false_alarm: f64,
    /// This audit rejected on its own at `alpha` but is not an alarm: the evidence since the
    /// lock is below its threshold.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_back: bool,
    /// The alarm, once raised; it stands until the pin is locked again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm: Option<Alarm>,
    /// Set when the audit checked identity only (the daemon's behaviour budget): when the next
    /// behaviour audit may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_behaviour: Option<DateTime<Utc>>,
}

/// When and why the accumulated evidence raised `behavior_drift`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alarm {
    pub at: DateTime<Utc>,
    pub cause: AlarmCause,
    /// The audit that raised it.
    pub audit_id: String,
    /// Audits weighed since the lock when it was raised.
    pub audits: u64,
    /// The level of that audit's own look, when the look raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub look: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlarmCause {
    /// The first audit after the lock rejected on its own, at `alpha`.
    FirstAudit,
    /// One of the next early audits (`alert::lifetime::EARLY_AUDITS`) rejected on its own, at
    /// `alpha / 8`.
    EarlyAudit,
    /// A later audit rejected on its own at `stats::sequential::later_level`.
    LaterAudit,
    /// The statistic crossed its threshold.
    Accumulated,
    /// A cause a newer modelpin of the same fleet wrote.
    #[serde(other)]
    Other,
}
