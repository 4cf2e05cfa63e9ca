//! Delivery: one attempt per channel kind, classified by the same rules as provider calls, and
//! the passes that drain each channel's queue (the daemon runs one worker per channel, so a dead
//! receiver costs only its own queue).
//!
//! Every notification is a write with an idempotency key (its id), so an attempt whose outcome is
//! unknown — a timeout, a dropped connection — is repeated with the same id; a refusal that will
//! not change (Slack's 404/410 for a deleted hook, any other 4xx, a permanent SMTP error) stops at
//! once. Undeliverable notifications are retried with capped backoff for `MAX_AGE`, then expire.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::alert::email::{self, EmailChannel, SmtpOutcome};
use crate::alert::{AlertStatus, Notification, sign};
use crate::closed::closed_set;
use crate::config::{AlertChannel, AlertKind};
use crate::retry::{self, Decision, Operation, RetryPolicy, Signal};
use crate::store::{Delivery, DeliveryState, Entry, Queued, Store};
use crate::transport::Transport;

/// How long an undeliverable notification keeps being retried.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// One attempt's conclusion.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempted {
    Delivered,
    Retry {
        min_wait: Option<Duration>,
        reason: String,
    },
    Failed(String),
}

/// Sends notifications to the configured channels.
#[derive(Clone)]
pub struct Deliverer {
    pub transport: Transport,
    pub channels: Vec<AlertChannel>,
    /// Deadline for one attempt.
    pub timeout: Duration,
}

impl Deliverer {
    /// One attempt to deliver `n` to its channel; its error text (an SMTP server's reply, a
    /// client error quoting the Slack URL) has every configured secret masked.
    pub async fn attempt(&self, n: &Notification) -> Attempted {
        let redactor = self.transport.redactor();
        match self.attempt_unscrubbed(n).await {
            Attempted::Delivered => Attempted::Delivered,
            Attempted::Retry { min_wait, reason } => Attempted::Retry {
                min_wait,
                reason: redactor.scrub_owned(reason),
            },
            Attempted::Failed(why) => Attempted::Failed(redactor.scrub_owned(why)),
        }
    }

    async fn attempt_unscrubbed(&self, n: &Notification) -> Attempted {
        let Some(channel) = self.channels.iter().find(|c| c.name == n.channel) else {
            return Attempted::Failed(format!(
                "no alert channel `{}` in the config any more",
                n.channel
            ));
        };
        match &channel.kind {
            AlertKind::Webhook {
                url,
                secret_env,
                signing_key,
            } => {
                let body = inert_json(&webhook_payload(n));
                let mut headers = id_headers(n);
                let ts = Utc::now().timestamp();
                headers.push(("webhook-timestamp".into(), ts.to_string()));
                match (secret_env, signing_key) {
                    (_, Some(key)) => {
                        headers.push((
                            "webhook-signature".into(),
                            sign::sign(key, &n.id, ts, &body),
                        ));
                    }
                    // Fail closed: a channel configured to sign never sends unsigned.
                    (Some(var), None) => {
                        return Attempted::Failed(format!(
                            "environment variable `{var}` (the webhook signing secret) is not set"
                        ));
                    }
                    (None, None) => {}
                }
                self.post(url, headers, body, &n.id).await
            }
            AlertKind::Slack { url_env, url } => {
                let Some(url) = url else {
                    return Attempted::Failed(format!(
                        "environment variable `{url_env}` (the Slack webhook URL) is not set"
                    ));
                };
                let body = inert_json(
                    &json!({ "text": format!("*{}*\n{}", slack_escape(&n.headline()), slack_escape(&n.text())) }),
                );
                self.post(url.expose(), id_headers(n), body, &n.id).await
            }
            AlertKind::Alertmanager { url } => {
                let body = inert_json(&alertmanager_payload(n));
                let endpoint = format!("{}/api/v2/alerts", url.trim_end_matches('/'));
                self.post(&endpoint, id_headers(n), body, &n.id).await
            }
            AlertKind::Email {
                smtp,
                from,
                to,
                username,
                password,
                ..
            } => {
                let channel = EmailChannel {
                    smtp,
                    from,
                    to,
                    username: username.as_ref().map(|s| s.expose().to_owned()),
                    password: password.as_ref().map(|s| s.expose().to_owned()),
                };
                match email::send(&channel, n, self.timeout).await {
                    SmtpOutcome::Sent => Attempted::Delivered,
                    SmtpOutcome::Permanent(e) => Attempted::Failed(e),
                    SmtpOutcome::Transient(e) | SmtpOutcome::Unknown(e) => Attempted::Retry {
                        min_wait: None,
                        reason: e,
                    },
                }
            }
        }
    }

    async fn post(
        &self,
        url: &str,
        mut headers: Vec<(String, String)>,
        body: Vec<u8>,
        id: &str,
    ) -> Attempted {
        headers.push(("content-type".into(), "application/json".into()));
        let until = tokio::time::Instant::now() + self.timeout;
        let op = Operation::Write {
            idempotency_key: Some(id.to_owned()),
        };
        match self
            .transport
            .post_bytes("", url, &headers, body, Some(until))
            .await
        {
            Ok(d) => {
                let r = &d.response;
                let signal = Signal {
                    status: Some(r.status),
                    headers: &r.headers,
                    ..Signal::default()
                };
                let preview = || {
                    String::from_utf8_lossy(&r.body)
                        .chars()
                        .take(200)
                        .collect::<String>()
                };
                match retry::classify(&signal, &op, SystemTime::now()) {
                    Decision::Done => Attempted::Delivered,
                    Decision::Retry { min_wait, reason } => Attempted::Retry {
                        min_wait,
                        reason: format!("{reason}: {}", preview()),
                    },
                    Decision::Stop { reason, .. } => {
                        Attempted::Failed(format!("HTTP {}: {reason}: {}", r.status, preview()))
                    }
                }
            }
            Err(f) => {
                let signal = Signal {
                    transport: Some(f.kind),
                    ..Signal::default()
                };
                match retry::classify(&signal, &op, SystemTime::now()) {
                    Decision::Retry { min_wait, .. } => Attempted::Retry {
                        min_wait,
                        reason: f.message,
                    },
                    Decision::Done | Decision::Stop { .. } => Attempted::Failed(f.message),
                }
            }
        }
    }
}

/// Slack reads `<…>` in message text as links and mentions (`<!channel>`), so a served model ID
/// could ping a whole channel; its formatting rules ask for `&`, `<` and `>` as entities.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn id_headers(n: &Notification) -> Vec<(String, String)> {
    vec![
        ("webhook-id".into(), n.id.clone()),
        ("idempotency-key".into(), n.id.clone()),
    ]
}

/// modelpin's own webhook JSON.
#[must_use]
pub fn webhook_payload(n: &Notification) -> Value {
    let starts = n.alerts.iter().map(|a| a.starts_at).min();
    let ends = if n.status == AlertStatus::Resolved {
        n.alerts.iter().filter_map(|a| a.ends_at).max()
    } else {
        None
    };
    let mut body = json!({
        "id": n.id,
        "type": "modelpin.alert",
        "status": n.status.as_str(),
        "test": n.test,
        "pin": n.pin,
        "provider": n.provider,
        "model": n.model,
        "startsAt": starts,
        "endsAt": ends,
        "createdAt": n.created_at,
        "auditId": n.audit_id,
        "findings": n.alerts,
    });
    if let Some(source) = n.source {
        body["source"] = json!(source);
    }
    if let Some(url) = &n.url {
        body["url"] = json!(url);
    }
    body
}

/// Alertmanager's `POST /api/v2/alerts` body: one alert per finding.
#[must_use]
pub fn alertmanager_payload(n: &Notification) -> Value {
    let alerts: Vec<Value> = n
        .alerts
        .iter()
        .map(|a| {
            let mut alert = json!({
                "labels": {
                    "alertname": "ModelpinFinding",
                    "pin": n.pin,
                    "provider": n.provider,
                    "model": n.model,
                    "code": a.code,
                    "severity": a.severity.map_or("none", crate::finding::Severity::as_str),
                },
                "annotations": {
                    "summary": format!("{}: {}", n.pin, a.code),
                    "description": a.message,
                    "notification_id": n.id,
                },
                "startsAt": a.starts_at,
            });
            // Traffic and probe alerts of one pin and code are separate alerts, as in modelpin.
            if let Some(source) = n.source {
                alert["labels"]["source"] = json!(source);
            }
            if let Some(ends) = a.ends_at {
                alert["endsAt"] = json!(ends);
            }
            // Alertmanager's templates show these: what to do, and the pin's page.
            if let Some(action) = &a.action {
                alert["annotations"]["action"] = json!(action);
            }
            if let Some(url) = &n.url {
                alert["generatorURL"] = json!(url);
                alert["annotations"]["url"] = json!(url);
            }
            alert
        })
        .collect();
    Value::Array(alerts)
}

/// A payload as JSON with the report's escaping: a bidi override or C1 control in a served model
/// name arrives as `\u202e`, not raw, in whatever the receiver shows.
fn inert_json(payload: &impl serde::Serialize) -> Vec<u8> {
    let text = serde_json::to_string(payload).expect("payload serialises");
    crate::text::json_inert(text).into_bytes()
}

/// One delivery attempt's result, for whoever counts them (the daemon's metrics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub channel: String,
    pub result: DeliveryResult,
}

closed_set! {
    /// How one attempt left a notification.
    pub enum DeliveryResult {
        Delivered => "delivered",
        /// Refused for good (a permanent error): not tried again.
        Failed => "failed",
        /// Not delivered yet; will be tried again later.
        Retried => "retried",
        /// Given up after `MAX_AGE`.
        Expired => "expired",
    }
}

/// Notifications of one channel in flight at once (each for a different pin): a backlog drains
/// at the receiver's speed without opening a connection per queued notification.
pub const PER_CHANNEL: usize = 4;

/// Tries every due notification of every channel once; returns each attempt's outcome.
pub async fn run_due(store: &Store, deliverer: &Deliverer) -> Vec<Outcome> {
    let Ok(channels) = store.channels_waiting().await else {
        return Vec::new();
    };
    let runs = channels
        .iter()
        .map(|channel| run_channel(store, deliverer, channel));
    futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Tries one channel's due notifications: pins in parallel (up to `PER_CHANNEL`), each pin's in
/// order, stopping at the first that is not due or not delivered so none overtakes an older one.
pub async fn run_channel(store: &Store, deliverer: &Deliverer, channel: &str) -> Vec<Outcome> {
    let Ok(pins) = store.queued(channel).await else {
        return Vec::new();
    };
    futures::stream::iter(pins)
        .map(|queue| run_pin(store, deliverer, queue))
        .buffer_unordered(PER_CHANNEL)
        .concat()
        .await
}

/// When the channel's next waiting notification is due: the earliest `next_attempt_at` at the
/// head of its pins' queues (each queue is sent in order), or `None` when nothing waits.
pub async fn next_due(store: &Store, channel: &str) -> Option<DateTime<Utc>> {
    let pins = store.queued(channel).await.ok()?;
    pins.iter()
        .filter_map(|queue| queue.first())
        .map(|head| head.entry.delivery.next_attempt_at)
        .min()
}

async fn run_pin(store: &Store, deliverer: &Deliverer, queue: Vec<Queued>) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for queued in queue {
        if queued.entry.delivery.next_attempt_at > Utc::now() {
            break;
        }
        let mut entry = queued.entry.clone();
        let attempted = deliverer.attempt(&entry.notification).await;
        let result = record(
            &mut entry.delivery,
            &attempted,
            entry.notification.created_at,
        );
        log(&entry, &attempted);
        outcomes.push(Outcome {
            channel: entry.notification.channel.clone(),
            result,
        });
        if let Err(e) = store.update_delivery(&queued, &entry).await {
            tracing::error!(error = %e, help = crate::problem::Explain::help(&e).as_deref(), notification = %entry.notification.id, "outbox update failed");
            break;
        }
        if result == DeliveryResult::Retried {
            break;
        }
    }
    outcomes
}

/// Applies an attempt's outcome to the delivery record.
fn record(d: &mut Delivery, outcome: &Attempted, created: DateTime<Utc>) -> DeliveryResult {
    let now = Utc::now();
    d.attempts += 1;
    match outcome {
        Attempted::Delivered => {
            d.state = DeliveryState::Delivered;
            d.finished_at = Some(now);
            DeliveryResult::Delivered
        }
        Attempted::Failed(why) => {
            d.state = DeliveryState::Failed;
            d.last_error = Some(why.clone());
            d.finished_at = Some(now);
            DeliveryResult::Failed
        }
        Attempted::Retry { min_wait, reason } => {
            d.last_error = Some(reason.clone());
            if (now - created).to_std().unwrap_or_default() >= MAX_AGE {
                d.state = DeliveryState::Expired;
                d.finished_at = Some(now);
                return DeliveryResult::Expired;
            }
            let policy = RetryPolicy {
                max_attempts: u32::MAX,
                ..RetryPolicy::default()
            };
            let wait = policy
                .backoff(d.attempts, retry::jitter_source()())
                .max(min_wait.unwrap_or_default());
            d.next_attempt_at = now + chrono::Duration::from_std(wait).unwrap_or_default();
            DeliveryResult::Retried
        }
    }
}

fn log(entry: &Entry, outcome: &Attempted) {
    let n = &entry.notification;
    match outcome {
        Attempted::Delivered => {
            tracing::info!(pin = %n.pin, channel = %n.channel, notification = %n.id, attempts = entry.delivery.attempts, "notification delivered");
        }
        Attempted::Failed(why) => {
            tracing::error!(pin = %n.pin, channel = %n.channel, notification = %n.id, reason = %why, "notification failed for good");
        }
        Attempted::Retry { reason, .. } => {
            tracing::warn!(pin = %n.pin, channel = %n.channel, notification = %n.id, attempts = entry.delivery.attempts, reason = %reason, "notification not delivered yet; will retry");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::slack_escape;

    #[test]
    fn slack_text_cannot_mention_or_link() {
        assert_eq!(
            slack_escape("<!channel> & <https://x|y>"),
            "&lt;!channel&gt; &amp; &lt;https://x|y&gt;"
        );
    }
}
