//! The durable outbox: an audit, its alert state and its notifications committed together,
//! flushed before sending; one queue per channel in which the latest truth wins.
//!
//! Per channel and pin, notifications are sent in the order they were created, and a newer one
//! takes its alerts out of older undelivered ones (a resolve cancels a queued firing, a newer
//! firing replaces an older one); an older notification left with no alerts is `Superseded` and
//! never sent. So after any outage, what a receiver hears last is what the latest audit found.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sled::Transactional as _;
use sled::transaction::{ConflictableTransactionResult, TransactionError, TransactionalTree};

use crate::alert::state::PinAlerts;
use crate::alert::{AlertStatus, Notification};
use crate::store::{AuditRecord, Store, StoreError};

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
    fn pending(n: &Notification) -> Entry {
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

    /// Drops the alerts a newer notification speaks for; `true` when nothing is left to send.
    fn supersede(&mut self, newer: &BTreeSet<&str>, now: DateTime<Utc>) -> bool {
        let n = &mut self.notification;
        n.alerts.retain(|a| !newer.contains(a.fingerprint.as_str()));
        if n.alerts.iter().all(|a| a.status == AlertStatus::Resolved) {
            n.status = AlertStatus::Resolved;
        }
        if n.alerts.is_empty() {
            self.delivery.state = DeliveryState::Superseded;
            self.delivery.finished_at = Some(now);
            return true;
        }
        false
    }
}

/// One entry of a channel's queue: its outbox key, its bytes as read, and the entry.
#[derive(Debug, Clone)]
pub struct Queued {
    pub key: Vec<u8>,
    pub bytes: Vec<u8>,
    pub entry: Entry,
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

fn queue_prefix(channel: &str, pin: Option<&str>) -> Vec<u8> {
    let mut key = format!("{channel}\0").into_bytes();
    if let Some(pin) = pin {
        key.extend_from_slice(pin.as_bytes());
        key.push(0);
    }
    key
}

fn queue_key(n: &Notification) -> Vec<u8> {
    let mut key = queue_prefix(&n.channel, Some(&n.pin));
    key.extend_from_slice(&outbox_key(n));
    key
}

/// The pin's alert state (empty when it never alerted).
pub fn load(store: &Store, pin: &str) -> Result<PinAlerts, StoreError> {
    let trees = store.trees()?;
    let bytes = trees
        .alerts
        .get(state_key(pin))
        .map_err(|e| store.write_error(e))?;
    Ok(bytes
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default())
}

/// What one audit writes.
pub struct Commit<'a> {
    /// The audit itself (the daemon); `None` for `check --notify`, which keeps no history.
    pub audit: Option<&'a AuditRecord>,
    pub pin: &'a str,
    /// The new alert state, when it changed.
    pub state: Option<&'a PinAlerts>,
    pub notifications: &'a [Notification],
}

/// Writes the audit, the pin's new alert state and its notifications (superseding older queued
/// ones) in one transaction, then flushes: once this returns `Ok`, all of it survives a crash,
/// and a crash before that leaves none of it.
pub async fn commit(store: &Store, c: &Commit<'_>) -> Result<(), StoreError> {
    let row = c.audit.map(|r| store.audit_row(r)).transpose()?;
    let state = c
        .state
        .map(|s| serde_json::to_vec(s).map_err(|e| store.write_error(e)))
        .transpose()?;
    let older = older_queued(store, c.notifications)?;
    crate::fault::at(crate::fault::Point::BeforeCommit);
    let now = Utc::now();
    store
        .write(|t| {
            let trees = (&t.audits, &t.by_time, &t.alerts, &t.outbox, &t.pending);
            trees
                .transaction(|(audits, by_time, alerts, outbox, pending)| {
                    if let Some(row) = &row {
                        row.insert(audits, by_time)?;
                    }
                    if let Some(state) = &state {
                        alerts.insert(state_key(c.pin), state.as_slice())?;
                    }
                    for (n, older) in c.notifications.iter().zip(&older) {
                        supersede(outbox, pending, n, older, now)?;
                        queue(outbox, pending, n)?;
                    }
                    Ok(())
                })
                .map_err(|e: TransactionError<()>| format!("{e:?}"))?;
            crate::fault::at(crate::fault::Point::AfterCommitBeforeFlush);
            Ok(())
        })
        .await
}

/// For each notification, the outbox keys queued before it for the same channel and pin.
fn older_queued(
    store: &Store,
    notifications: &[Notification],
) -> Result<Vec<Vec<Vec<u8>>>, StoreError> {
    let trees = store.trees()?;
    notifications
        .iter()
        .map(|n| {
            trees
                .pending
                .scan_prefix(queue_prefix(&n.channel, Some(&n.pin)))
                .values()
                .map(|v| v.map(|k| k.to_vec()).map_err(|e| store.write_error(e)))
                .collect()
        })
        .collect()
}

fn queue(
    outbox: &TransactionalTree,
    pending: &TransactionalTree,
    n: &Notification,
) -> ConflictableTransactionResult<(), ()> {
    let bytes = serde_json::to_vec(&Entry::pending(n)).expect("entries serialise");
    let key = outbox_key(n);
    outbox.insert(key.as_slice(), bytes)?;
    pending.insert(queue_key(n), key)?;
    Ok(())
}

/// Takes `n`'s alerts out of the older queued notifications `keys`.
fn supersede(
    outbox: &TransactionalTree,
    pending: &TransactionalTree,
    n: &Notification,
    keys: &[Vec<u8>],
    now: DateTime<Utc>,
) -> ConflictableTransactionResult<(), ()> {
    let newer: BTreeSet<&str> = n.alerts.iter().map(|a| a.fingerprint.as_str()).collect();
    for key in keys {
        let Some(bytes) = outbox.get(key)? else {
            continue;
        };
        let Ok(mut entry) = serde_json::from_slice::<Entry>(&bytes) else {
            continue;
        };
        if entry.delivery.state != DeliveryState::Pending {
            continue;
        }
        if entry.supersede(&newer, now) {
            pending.remove(queue_key(&entry.notification))?;
        }
        outbox.insert(
            key.as_slice(),
            serde_json::to_vec(&entry).expect("entries serialise"),
        )?;
    }
    Ok(())
}

/// A channel's queue: pending entries grouped by pin, each pin's in creation order.
pub fn queued(store: &Store, channel: &str) -> Result<Vec<Vec<Queued>>, StoreError> {
    let trees = store.trees()?;
    let mut pins: Vec<Vec<Queued>> = Vec::new();
    let mut last_pin = String::new();
    for item in trees.pending.scan_prefix(queue_prefix(channel, None)) {
        let (_, key) = item.map_err(|e| store.write_error(e))?;
        let Some(bytes) = trees.outbox.get(&key).map_err(|e| store.write_error(e))? else {
            continue;
        };
        let Ok(entry) = serde_json::from_slice::<Entry>(&bytes) else {
            continue;
        };
        if entry.notification.pin != last_pin || pins.is_empty() {
            last_pin.clone_from(&entry.notification.pin);
            pins.push(Vec::new());
        }
        pins.last_mut().expect("a group").push(Queued {
            key: key.to_vec(),
            bytes: bytes.to_vec(),
            entry,
        });
    }
    Ok(pins)
}

/// Channels with notifications waiting.
pub fn channels_waiting(store: &Store) -> Result<BTreeSet<String>, StoreError> {
    let trees = store.trees()?;
    let mut out = BTreeSet::new();
    for item in trees.pending.iter().keys() {
        let key = item.map_err(|e| store.write_error(e))?;
        if let Some(channel) = key.split(|b| *b == 0).next() {
            out.insert(String::from_utf8_lossy(channel).into_owned());
        }
    }
    Ok(out)
}

/// Indexes pending entries written before channel queues existed (a store from an older
/// modelpin), so they are still sent.
pub async fn index_older_entries(store: &Store) -> Result<(), StoreError> {
    const DONE: &[u8] = b"outbox_indexed";
    let trees = store.trees()?;
    if trees
        .alerts
        .contains_key(DONE)
        .map_err(|e| store.write_error(e))?
    {
        return Ok(());
    }
    let mut missing = Vec::new();
    for item in &trees.outbox {
        let (key, bytes) = item.map_err(|e| store.write_error(e))?;
        if let Ok(entry) = serde_json::from_slice::<Entry>(&bytes)
            && entry.delivery.state == DeliveryState::Pending
        {
            missing.push((queue_key(&entry.notification), key.to_vec()));
        }
    }
    store
        .write(|t| {
            for (index, key) in missing {
                t.pending.insert(index, key).map_err(|e| e.to_string())?;
            }
            t.alerts.insert(DONE, &[]).map_err(|e| e.to_string())?;
            Ok(())
        })
        .await
}

/// Every entry, oldest first (for tests and `check --notify`'s summary).
pub fn all(store: &Store) -> Result<Vec<Entry>, StoreError> {
    let trees = store.trees()?;
    let mut out = Vec::new();
    for item in &trees.outbox {
        let (_, bytes) = item.map_err(|e| store.write_error(e))?;
        if let Ok(entry) = serde_json::from_slice::<Entry>(&bytes) {
            out.push(entry);
        }
    }
    Ok(out)
}

/// Records an attempt's outcome and flushes, unless the entry changed while it was being sent
/// (a newer notification superseded it): then the newer state stands.
pub async fn update(store: &Store, queued: &Queued, entry: &Entry) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(entry).map_err(|e| store.write_error(e))?;
    let done = entry.delivery.state != DeliveryState::Pending;
    let index = queue_key(&entry.notification);
    store
        .write(|t| {
            (&t.outbox, &t.pending)
                .transaction(|(outbox, pending)| {
                    let current = outbox.get(&queued.key)?;
                    if current.as_deref() != Some(queued.bytes.as_slice()) {
                        return Ok(());
                    }
                    outbox.insert(queued.key.as_slice(), bytes.as_slice())?;
                    if done {
                        pending.remove(index.as_slice())?;
                    }
                    Ok(())
                })
                .map_err(|e: TransactionError<()>| format!("{e:?}"))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::AlertItem;
    use crate::store::Holder;

    fn item(fingerprint: &str, status: AlertStatus) -> AlertItem {
        AlertItem {
            fingerprint: fingerprint.into(),
            code: fingerprint.into(),
            severity: None,
            status,
            message: String::new(),
            evidence: serde_json::Value::Null,
            starts_at: DateTime::from_timestamp(0, 0).unwrap(),
            ends_at: None,
        }
    }

    fn notification(id: &str, at: i64, alerts: &[(&str, AlertStatus)]) -> Notification {
        let alerts: Vec<AlertItem> = alerts.iter().map(|(f, s)| item(f, *s)).collect();
        let firing = alerts.iter().any(|a| a.status == AlertStatus::Firing);
        Notification {
            id: id.into(),
            channel: "hook".into(),
            pin: "bot".into(),
            provider: "p".into(),
            model: "m".into(),
            status: if firing {
                AlertStatus::Firing
            } else {
                AlertStatus::Resolved
            },
            alerts,
            created_at: DateTime::from_timestamp(at, 0).unwrap(),
            test: false,
            audit_id: None,
            source: None,
        }
    }

    async fn queue_one(store: &Store, n: Notification) {
        let commit = Commit {
            audit: None,
            pin: "bot",
            state: None,
            notifications: &[n],
        };
        commit_ok(store, &commit).await;
    }

    async fn commit_ok(store: &Store, c: &Commit<'_>) {
        commit(store, c).await.unwrap();
    }

    /// What the channel would send now: (id, fingerprints) in order.
    fn waiting(store: &Store) -> Vec<(String, Vec<String>)> {
        queued(store, "hook")
            .unwrap()
            .into_iter()
            .flatten()
            .map(|q| {
                let n = q.entry.notification;
                (n.id, n.alerts.into_iter().map(|a| a.fingerprint).collect())
            })
            .collect()
    }

    /// A notification committed, and what the channel waits to send afterwards.
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, AlertStatus)],
        &'a [(&'a str, &'a [&'a str])],
    );

    #[tokio::test]
    async fn a_newer_notification_takes_its_alerts_out_of_older_waiting_ones() {
        use AlertStatus::{Firing, Resolved};
        let cases: &[Case] = &[
            (
                "n1",
                &[("a", Firing), ("b", Firing)],
                &[("n1", &["a", "b"])],
            ),
            // A newer firing of `a` replaces it in n1; n1 keeps `b`.
            ("n2", &[("a", Firing)], &[("n1", &["b"]), ("n2", &["a"])]),
            // A resolve of both cancels every queued firing.
            (
                "n3",
                &[("a", Resolved), ("b", Resolved)],
                &[("n3", &["a", "b"])],
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s"), Holder::Daemon).unwrap();
        for (at, (id, alerts, want)) in (0..).zip(cases) {
            queue_one(&store, notification(id, at, alerts)).await;
            let want: Vec<(String, Vec<String>)> = want
                .iter()
                .map(|(id, f)| {
                    (
                        (*id).to_owned(),
                        f.iter().map(|s| (*s).to_owned()).collect(),
                    )
                })
                .collect();
            assert_eq!(waiting(&store), want, "after {id}");
        }
        let superseded = all(&store)
            .unwrap()
            .into_iter()
            .filter(|e| e.delivery.state == DeliveryState::Superseded)
            .count();
        assert_eq!(superseded, 2);
    }

    #[tokio::test]
    async fn an_attempt_finishing_after_its_entry_was_superseded_does_not_revive_it() {
        use AlertStatus::{Firing, Resolved};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s"), Holder::Daemon).unwrap();
        queue_one(&store, notification("n1", 1, &[("a", Firing)])).await;
        let in_flight = queued(&store, "hook").unwrap().remove(0).remove(0);
        queue_one(&store, notification("n2", 2, &[("a", Resolved)])).await;
        let mut retried = in_flight.entry.clone();
        retried.delivery.attempts = 1;
        update(&store, &in_flight, &retried).await.unwrap();
        let ids: Vec<String> = waiting(&store).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["n2"]);
    }

    #[tokio::test]
    async fn one_commit_holds_the_audit_the_state_and_the_notifications() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s"), Holder::Daemon).unwrap();
        let record = crate::store::tests::record("bot", 100, "a1");
        let state = PinAlerts {
            inconclusive_streak: 2,
            ..PinAlerts::default()
        };
        let n = notification("n1", 1, &[("a", AlertStatus::Firing)]);
        let commit = Commit {
            audit: Some(&record),
            pin: "bot",
            state: Some(&state),
            notifications: std::slice::from_ref(&n),
        };
        commit_ok(&store, &commit).await;
        assert_eq!(store.history(Some("bot"), None).unwrap(), [record]);
        assert_eq!(load(&store, "bot").unwrap(), state);
        assert_eq!(waiting(&store).len(), 1);
    }
}
