//! The durable outbox: alert state and notifications committed together, flushed before sending.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sled::Transactional as _;

use crate::alert::Notification;
use crate::alert::state::PinAlerts;
use crate::store::{Store, StoreError};

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

fn state_key(pin: &str) -> Vec<u8> {
    format!("pin\0{pin}").into_bytes()
}

fn outbox_key(n: &Notification) -> Vec<u8> {
    let mut key = (n.created_at.timestamp_millis().max(0) as u64)
        .to_be_bytes()
        .to_vec();
    key.extend_from_slice(n.id.as_bytes());
    key
}

fn write_error(store: &Store, message: impl std::fmt::Display) -> StoreError {
    StoreError::Write {
        path: store.path().to_owned(),
        message: message.to_string(),
    }
}

/// The pin's alert state (empty when it never alerted).
pub fn load(store: &Store, pin: &str) -> Result<PinAlerts, StoreError> {
    let bytes = store
        .alerts
        .get(state_key(pin))
        .map_err(|e| write_error(store, e))?;
    Ok(bytes
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default())
}

/// Stores the pin's new alert state and its notifications in one transaction, then flushes:
/// once this returns, a crash neither loses the notifications nor sends them again.
pub async fn commit(
    store: &Store,
    pin: &str,
    state: &PinAlerts,
    notifications: &[Notification],
) -> Result<(), StoreError> {
    let state_bytes = serde_json::to_vec(state).map_err(|e| write_error(store, e))?;
    let entries: Vec<(Vec<u8>, Vec<u8>)> = notifications
        .iter()
        .map(|n| {
            let entry = Entry {
                notification: n.clone(),
                delivery: Delivery {
                    state: DeliveryState::Pending,
                    attempts: 0,
                    next_attempt_at: n.created_at,
                    last_error: None,
                    finished_at: None,
                },
            };
            (
                outbox_key(n),
                serde_json::to_vec(&entry).expect("entries serialise"),
            )
        })
        .collect();
    let key = state_key(pin);
    (&store.alerts, &store.outbox)
        .transaction(|(alerts, outbox)| {
            alerts.insert(key.as_slice(), state_bytes.as_slice())?;
            for (k, v) in &entries {
                outbox.insert(k.as_slice(), v.as_slice())?;
            }
            Ok(())
        })
        .map_err(|e: sled::transaction::TransactionError<()>| {
            write_error(store, format!("{e:?}"))
        })?;
    store.flush().await
}

/// Pending entries whose next attempt is due, oldest first, with their keys.
pub fn due(store: &Store, now: DateTime<Utc>) -> Result<Vec<(Vec<u8>, Entry)>, StoreError> {
    let mut out = Vec::new();
    for item in &store.outbox {
        let (key, bytes) = item.map_err(|e| write_error(store, e))?;
        let Ok(entry) = serde_json::from_slice::<Entry>(&bytes) else {
            continue;
        };
        if entry.delivery.state == DeliveryState::Pending && entry.delivery.next_attempt_at <= now {
            out.push((key.to_vec(), entry));
        }
    }
    Ok(out)
}

/// Every entry, oldest first (for tests and `check --notify`'s summary).
pub fn all(store: &Store) -> Result<Vec<Entry>, StoreError> {
    let mut out = Vec::new();
    for item in &store.outbox {
        let (_, bytes) = item.map_err(|e| write_error(store, e))?;
        if let Ok(entry) = serde_json::from_slice::<Entry>(&bytes) {
            out.push(entry);
        }
    }
    Ok(out)
}

/// Records an attempt's outcome and flushes.
pub async fn update(store: &Store, key: &[u8], entry: &Entry) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(entry).map_err(|e| write_error(store, e))?;
    store
        .outbox
        .insert(key, bytes)
        .map_err(|e| write_error(store, e))?;
    store.flush().await
}
