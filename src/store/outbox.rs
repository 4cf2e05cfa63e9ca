//! What the outbox holds: each notification with where its delivery stands, and what a commit
//! writes. Which notification replaces which is decided by alerting (`alert::outbox`); the store
//! keeps the entries, each channel's queue in order, and applies a rewrite only to an entry that
//! still holds what was read (`Queued`'s token), so two writers never undo each other.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::store::AuditRecord;
use crate::store::alerts::Notification;
use crate::store::alerts::PinAlerts;

/// Where a notification's delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    Pending,
    Delivered,
    /// The receiver refused it for good (404, 410, a 4xx, a permanent SMTP error).
    Failed,
    /// Still undeliverable after `MAX_AGE`.
    Expired,
    /// Every alert in it was overtaken by a newer notification before it could be sent.
    Superseded,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    pub state: DeliveryState,
    pub attempts: u32,
    pub next_attempt_at: DateTime<Utc>,
    pub last_error: Option<String>,
    pub finished_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub notification: Notification,
    pub delivery: Delivery,
}

impl Entry {
    /// A new notification, waiting for its first attempt.
    #[must_use]
    pub fn pending(n: &Notification) -> Entry {
        Entry {
            notification: n.clone(),
            delivery: Delivery {
                state: DeliveryState::Pending,
                attempts: 0,
                next_attempt_at: n.created_at,
                last_error: None,
                finished_at: None,
            },
        }
    }
}

/// One entry of a channel's queue as read, with what a later write checks it against.
#[derive(Debug, Clone)]
pub struct Queued {
    pub entry: Entry,
    pub(crate) token: Token,
}

/// Where an entry is stored and the bytes it held when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) key: Vec<u8>,
    pub(crate) bytes: Vec<u8>,
}

/// What one audit (or traffic verdict) writes, in one transaction.
pub struct Commit<'a> {
    /// The record for history; `None` when only alerts change (`check --notify`, an unchanged
    /// traffic verdict).
    pub audit: Option<&'a AuditRecord>,
    /// The key of the alert state (`AuditRecord::alert_subject`).
    pub subject: &'a str,
    /// The new alert state, when it changed.
    pub state: Option<&'a PinAlerts>,
    /// New notifications, queued pending in this order.
    pub notifications: &'a [Notification],
}

/// An older waiting entry as rewritten by a newer notification.
#[derive(Debug, Clone)]
pub struct Replace {
    pub queued: Queued,
    pub entry: Entry,
}

/// A channel's queue (in queue order: by pin, then creation) cut into one run per pin.
pub(crate) fn by_pin(queue: Vec<Queued>) -> Vec<Vec<Queued>> {
    let mut pins: Vec<Vec<Queued>> = Vec::new();
    for queued in queue {
        match pins.last_mut() {
            Some(group) if group[0].entry.notification.pin == queued.entry.notification.pin => {
                group.push(queued);
            }
            _ => pins.push(vec![queued]),
        }
    }
    pins
}
