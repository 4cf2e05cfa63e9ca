//! The sled store's key layouts. Audits are keyed `pin \0 millis audit_id` (one pin's history in
//! time order, newest last) with a `millis pin \0 audit_id` index for time ranges and pruning;
//! alert state is `pin\0<subject>`; outbox entries are `millis id` (creation order), and each
//! pending one is indexed `channel \0 pin \0 <outbox key>`: a channel's queue, in order per pin,
//! without reading delivered history.

use crate::store::alerts::Notification;

pub(super) fn pin_prefix(pin: &str) -> Vec<u8> {
    let mut key = pin.as_bytes().to_vec();
    key.push(0);
    key
}

pub(super) fn audit_key(pin: &str, millis: u64, audit_id: &str) -> Vec<u8> {
    let mut key = pin_prefix(pin);
    key.extend_from_slice(&millis.to_be_bytes());
    key.extend_from_slice(audit_id.as_bytes());
    key
}

pub(super) fn time_key(millis: u64, pin: &str, audit_id: &str) -> Vec<u8> {
    crate::store::Cursor::index_key(millis, pin, audit_id).0
}

/// Milliseconds since the epoch at which the audit keyed `key` (of `pin`) started.
#[must_use]
pub(super) fn key_millis(pin: &str, key: &[u8]) -> Option<u64> {
    let at = key.get(pin.len() + 1..pin.len() + 9)?;
    Some(u64::from_be_bytes(at.try_into().ok()?))
}

/// The audit id in `key` (of `pin`), after its start time.
pub(super) fn key_audit_id(pin: &str, key: &[u8]) -> String {
    key.get(pin.len() + 9..)
        .map(|id| String::from_utf8_lossy(id).into_owned())
        .unwrap_or_default()
}

pub(super) fn state_key(subject: &str) -> Vec<u8> {
    format!("pin\0{subject}").into_bytes()
}

pub(super) fn outbox_key(n: &Notification) -> Vec<u8> {
    let mut key = (n.created_at.timestamp_millis().max(0) as u64)
        .to_be_bytes()
        .to_vec();
    key.extend_from_slice(n.id.as_bytes());
    key
}

pub(super) fn queue_prefix(channel: &str, pin: Option<&str>) -> Vec<u8> {
    let mut key = format!("{channel}\0").into_bytes();
    if let Some(pin) = pin {
        key.extend_from_slice(pin.as_bytes());
        key.push(0);
    }
    key
}

pub(super) fn queue_key(n: &Notification) -> Vec<u8> {
    let mut key = queue_prefix(&n.channel, Some(&n.pin));
    key.extend_from_slice(&outbox_key(n));
    key
}

/// The start of an audit in milliseconds, as keys hold it (before the epoch counts as 0).
pub(super) fn millis(at: chrono::DateTime<chrono::Utc>) -> u64 {
    at.timestamp_millis().max(0) as u64
}
