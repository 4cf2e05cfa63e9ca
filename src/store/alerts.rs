//! The stored forms of alerting: each pin's firing alerts, and the notifications the outbox
//! holds until a channel takes them. The rules that fill them live in `alert`; the store keeps
//! them, copies them and hands them back as they were written.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::severity::Severity;

/// One alert's stored state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertState {
    pub fingerprint: String,
    pub pin: String,
    pub code: String,
    pub severity: Option<Severity>,
    pub starts_at: DateTime<Utc>,
    pub message: String,
    pub evidence: Value,
    /// What to do, as the finding says it (absent in states stored before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Channel name → when it last heard this alert firing.
    pub notified: BTreeMap<String, DateTime<Utc>>,
}

/// A pin's stored alerting state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinAlerts {
    /// Firing alerts by code.
    pub firing: BTreeMap<String, AlertState>,
    pub inconclusive_streak: u32,
}

/// One alert inside a notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertItem {
    pub fingerprint: String,
    pub code: String,
    pub severity: Option<Severity>,
    pub status: AlertStatus,
    pub message: String,
    pub evidence: Value,
    /// What to do about it, as the CLI and the status page say it (absent in older stores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(rename = "startsAt")]
    pub starts_at: DateTime<Utc>,
    #[serde(rename = "endsAt")]
    pub ends_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    Firing,
    Resolved,
}

impl AlertStatus {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AlertStatus::Firing => "firing",
            AlertStatus::Resolved => "resolved",
        }
    }
}

/// What one channel receives about one pin after one audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notification {
    /// One id per notification, reused on every delivery attempt.
    pub id: String,
    pub channel: String,
    pub pin: String,
    pub provider: String,
    pub model: String,
    /// Firing while any of its alerts fires.
    pub status: AlertStatus,
    pub alerts: Vec<AlertItem>,
    pub created_at: DateTime<Utc>,
    /// A `modelpin alerts test` notification.
    pub test: bool,
    /// The audit that produced it (absent in test notifications and older stores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_id: Option<String>,
    /// Set when a traffic verdict produced it; absent for probe audits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::store::RecordSource>,
    /// The pin's status page, under `settings.external_url`; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
