//! Alerts that arrive once: alert state, a durable outbox, and delivery to email, webhooks,
//! Slack and Alertmanager.
//!
//! An alert is (pin, finding code) with a stable fingerprint. Each audit runs the pure state
//! machine (`state`), which decides what fires, repeats and resolves per channel and groups one
//! pin's changes into one notification per channel. The audit, the new alert state and the
//! notifications are written to the store in one transaction and flushed before any attempt to
//! send (`outbox`), so a crash can neither lose a notification, skip an audit's evaluation, nor
//! make a restart send it again; a newer notification supersedes older undelivered ones. The
//! delivery workers (`deliver`) send with the transport's classifier: every notification carries
//! one id — `webhook-id` and `Idempotency-Key` headers, the email `Message-ID` — reused on every
//! retry, so an attempt whose outcome is unknown can be repeated and the receiver can drop the
//! duplicate.

pub mod deliver;
pub mod email;
pub mod lifetime;
pub mod outbox;
pub mod readable;
pub mod sign;
pub mod state;

use chrono::{DateTime, Utc};

use crate::finding::{Code, Severity};

pub use crate::store::alerts::{AlertCode, AlertItem, AlertStatus, Notification};

impl Notification {
    /// A new id: time-ordered, unique, safe in headers and Message-IDs.
    #[must_use]
    pub fn new_id(now: DateTime<Utc>) -> String {
        format!(
            "ntf_{:013x}{}",
            now.timestamp_millis(),
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        )
    }

    /// One line for a subject or a chat message.
    #[must_use]
    pub fn headline(&self) -> String {
        let codes: Vec<&str> = self.alerts.iter().map(|a| a.code.as_str()).collect();
        let lead = if self.test {
            "TEST".to_owned()
        } else {
            self.status.as_str().to_uppercase()
        };
        let seen_in = match self.source {
            None => "",
            Some(crate::store::RecordSource::Traffic) => " (traffic)",
        };
        format!(
            "[modelpin] {lead} {}{seen_in}: {}",
            self.pin,
            codes.join(", ")
        )
    }

    /// The plain-text body a human reads at a glance: what changed, the evidence, what to do.
    #[must_use]
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        if self.test {
            let _ = writeln!(
                out,
                "This is a TEST notification from `modelpin alerts test`. Nothing changed.\n"
            );
        }
        let _ = writeln!(
            out,
            "Pin `{}` ({} via provider `{}`)\n",
            self.pin, self.model, self.provider
        );
        if self.source == Some(crate::store::RecordSource::Traffic) {
            let _ = writeln!(
                out,
                "Seen in the application's own calls (OpenTelemetry spans), not a probe audit.\n"
            );
        }
        let _ = writeln!(out, "What changed:");
        for a in &self.alerts {
            let sev = a.severity.map_or("-", Severity::as_str);
            let _ = writeln!(
                out,
                "  - {} {} {}: {}",
                a.status.as_str(),
                sev,
                a.code,
                crate::text::terminal(&a.message)
            );
        }
        let _ = writeln!(out, "\nEvidence:");
        for a in &self.alerts {
            let _ = writeln!(out, "  {}:", a.code);
            for line in readable::evidence_lines(&a.evidence, "    ") {
                let _ = writeln!(out, "{line}");
            }
        }
        let _ = writeln!(out, "\nWhat to do:");
        let _ = writeln!(out, "{}", advice(self));
        if let Some(url) = &self.url {
            let _ = writeln!(out, "\nPin page: {url}");
        }
        let _ = writeln!(out, "\nNotification id: {}", self.id);
        out
    }
}

/// The pin's page under the daemon's external address: `BASE/pins/ID`, the id percent-encoded
/// as a path segment.
#[must_use]
pub fn pin_url(base: &str, pin: &str) -> String {
    format!(
        "{}/pins/{}",
        base.trim_end_matches('/'),
        crate::text::path_segment(pin)
    )
}

/// What to do: each firing alert's own action (the line the CLI and the status page show),
/// then where to look; the generic advice only for alerts stored without an action.
fn advice(n: &Notification) -> String {
    if n.test {
        return "  Nothing: this channel works.".to_owned();
    }
    if n.status == AlertStatus::Resolved {
        return "  Nothing: the audit no longer finds these changes.".to_owned();
    }
    let firing: Vec<&AlertItem> = n
        .alerts
        .iter()
        .filter(|a| a.status == AlertStatus::Firing)
        .collect();
    if !firing.is_empty() && firing.iter().all(|a| a.action.is_some()) {
        // One line per distinct action, naming every finding it is for.
        let mut actions: Vec<(Vec<&str>, &str)> = Vec::new();
        for a in &firing {
            let action = a.action.as_deref().unwrap_or_default();
            match actions.iter_mut().find(|(_, known)| *known == action) {
                Some((codes, _)) => codes.push(a.code.as_str()),
                None => actions.push((vec![a.code.as_str()], action)),
            }
        }
        let mut lines: Vec<String> = actions
            .iter()
            .map(|(codes, action)| {
                format!(
                    "  - {}: {}",
                    codes.join(", "),
                    crate::text::terminal(action)
                )
            })
            .collect();
        lines.push(format!(
            "  - Recent audits: `modelpin history --pin {}`.",
            n.pin
        ));
        return lines.join("\n");
    }
    let mut lines = vec![
        "  - Check the provider's model and deprecation notices for this model ID.".to_owned(),
        format!(
            "  - Inspect recent audits: `modelpin history --pin {}`.",
            n.pin
        ),
    ];
    if n.alerts.iter().any(|a| {
        matches!(
            a.code,
            AlertCode::Finding(Code::ModelNotFound | Code::RetiredStillServed)
        )
    }) {
        lines.push(
            "  - Move the pin to a supported model, then `modelpin lock --pin` it.".to_owned(),
        );
    } else {
        lines.push(format!(
            "  - If the change is expected, record a new baseline: `modelpin lock --pin {}`; otherwise pin a dated snapshot.",
            n.pin
        ));
    }
    lines.join("\n")
}

/// The channels a pin routes to: those it lists, or every channel when it lists none.
#[must_use]
pub fn channels_for<'a>(
    config: &'a crate::config::Config,
    pin: &str,
) -> Vec<&'a crate::config::AlertChannel> {
    let listed = config
        .pins
        .iter()
        .find(|p| p.id == pin)
        .map(|p| p.alerts.as_slice())
        .unwrap_or_default();
    config
        .alerts
        .iter()
        .filter(|c| listed.is_empty() || listed.contains(&c.name))
        .collect()
}

/// What `process` writes besides alert state and notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The daemon: the audit joins the history in the same transaction.
    Audit,
    /// `check --notify`: no history, only alerts.
    AlertsOnly,
}

/// Runs one audit through the state machine and commits the audit (for `Keep::Audit`), the new
/// alert state and the notifications in one transaction, flushed. With `weigh` (the daemon's
/// probe audits), the audit's behaviour is first weighed into the pin's accumulated evidence
/// (`lifetime::weigh`), which decides what the stored record says and is stored with the
/// alert state.
pub async fn process(
    store: &crate::store::Store,
    config: &crate::config::Config,
    record: &crate::store::AuditRecord,
    keep: Keep,
    weigh: Option<&lifetime::Lifetime>,
) -> Result<Processed, crate::store::StoreError> {
    let channels = channels_for(config, &record.pin.id);
    let subject = record.alert_subject();
    let before = store.alert_state(&subject).await?;
    let weighed = weigh.map(|life| lifetime::weigh(before.accumulated.as_ref(), record, life));
    let (record, accumulated) = match &weighed {
        Some(w) => (&w.record, w.accumulated.clone()),
        None => (record, before.accumulated.clone()),
    };
    let mut step = state::step(&before, record, &channels, chrono::Utc::now());
    step.state.accumulated = accumulated;
    for n in &mut step.notifications {
        n.url = config
            .settings
            .external_url
            .as_deref()
            .map(|base| pin_url(base, &n.pin));
    }
    let changed = step.state != before;
    let stored = weighed.as_ref().map(|w| w.record.clone());
    if !changed && step.notifications.is_empty() && keep == Keep::AlertsOnly {
        return Ok(Processed {
            queued: Vec::new(),
            record: stored,
        });
    }
    let commit = crate::store::Commit {
        audit: (keep == Keep::Audit).then_some(record),
        subject: &subject,
        state: changed.then_some(&step.state),
        notifications: &step.notifications,
    };
    outbox::commit(store, &commit).await?;
    Ok(Processed {
        queued: step.notifications.into_iter().map(|n| n.id).collect(),
        record: stored,
    })
}

/// What `process` stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Processed {
    /// The notifications queued.
    pub queued: Vec<String>,
    /// The record as weighed and stored, when it was weighed (`weigh` given).
    pub record: Option<crate::store::AuditRecord>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(code: &str, action: Option<&str>) -> AlertItem {
        AlertItem {
            fingerprint: code.into(),
            code: AlertCode::from(code),
            severity: Some(Severity::Error),
            status: AlertStatus::Firing,
            message: String::new(),
            evidence: serde_json::Value::Null,
            action: action.map(str::to_owned),
            starts_at: DateTime::from_timestamp(0, 0).unwrap(),
            ends_at: None,
        }
    }

    /// A firing notification of pin `bot` holding `alerts`, for the channel `mail`.
    pub(super) fn notification(alerts: Vec<AlertItem>) -> Notification {
        Notification {
            id: "ntf_1".into(),
            channel: "mail".into(),
            pin: "bot".into(),
            provider: "p".into(),
            model: "m".into(),
            status: AlertStatus::Firing,
            alerts,
            created_at: DateTime::from_timestamp(0, 0).unwrap(),
            test: false,
            audit_id: None,
            source: None,
            url: Some(pin_url("https://modelpin.example.com/", "bot/é")),
        }
    }

    #[test]
    fn what_to_do_is_each_finding_s_own_action_once_per_action_then_the_pin_page() {
        let same = "confirm with the provider; if wanted, run `modelpin lock --pin bot`";
        let n = notification(vec![
            alert("tokenizer_changed", Some(same)),
            alert("cost_changed", Some(same)),
            alert(
                "retired_still_served",
                Some("move the pin to gemini-3.8-flash"),
            ),
        ]);
        let text = n.text();
        let todo = text.split("What to do:\n").nth(1).unwrap();
        assert!(
            todo.starts_with(&format!(
                "  - tokenizer_changed, cost_changed: {same}\n  - retired_still_served: move the pin to gemini-3.8-flash\n  - Recent audits: `modelpin history --pin bot`.\n"
            )),
            "{text}"
        );
        assert!(!text.contains("pin a dated snapshot"), "{text}");
        assert!(
            text.contains("Pin page: https://modelpin.example.com/pins/bot%2F%C3%A9\n"),
            "{text}"
        );
    }

    #[test]
    fn alerts_stored_without_an_action_keep_the_general_advice() {
        let text = notification(vec![alert("served_model_mismatch", None)]).text();
        assert!(
            text.contains("If the change is expected, record a new baseline"),
            "{text}"
        );
    }
}
