//! The durable outbox as alerting sees it: an audit, its alert state and its notifications
//! committed together, flushed before sending; one queue per channel in which the latest truth
//! wins.
//!
//! Per channel and pin, notifications are sent in the order they were created, and a newer one
//! takes its alerts out of older undelivered ones (a resolve cancels a queued firing, a newer
//! firing replaces an older one); an older notification left with no alerts is `Superseded` and
//! never sent. So after any outage, what a receiver hears last is what the latest audit found.
//! The rule is here; the store keeps the entries and applies a rewrite only over what was read.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::alert::{AlertStatus, Notification};
use crate::store::{Commit, DeliveryState, Entry, Replace, Store, StoreError};

/// Times a commit is prepared again after an entry it rewrites changed under it (a delivery
/// finishing meanwhile); more would mean something keeps rewriting the queue.
const CONFLICT_RETRIES: usize = 5;

/// Drops the alerts a newer notification speaks for; `true` when nothing is left to send.
fn take_alerts(entry: &mut Entry, newer: &BTreeSet<&str>, now: DateTime<Utc>) -> bool {
    let n = &mut entry.notification;
    n.alerts.retain(|a| !newer.contains(a.fingerprint.as_str()));
    if n.alerts.iter().all(|a| a.status == AlertStatus::Resolved) {
        n.status = AlertStatus::Resolved;
    }
    if n.alerts.is_empty() {
        entry.delivery.state = DeliveryState::Superseded;
        entry.delivery.finished_at = Some(now);
        return true;
    }
    false
}

/// Writes the audit, the pin's new alert state and its notifications (superseding older queued
/// ones) in one transaction, then flushes: once this returns `Ok`, all of it survives a crash,
/// and a crash before that leaves none of it.
pub async fn commit(store: &Store, c: &Commit<'_>) -> Result<(), StoreError> {
    let mut conflicts = 0;
    loop {
        let superseded = superseded_by(store, c.notifications, Utc::now()).await?;
        crate::fault::at(crate::fault::Point::BeforeCommit);
        match store.commit(c, &superseded).await {
            Err(StoreError::Conflict { .. }) if conflicts < CONFLICT_RETRIES => conflicts += 1,
            done => return done,
        }
    }
}

/// The older waiting entries `notifications` take alerts out of, as rewritten.
async fn superseded_by(
    store: &Store,
    notifications: &[Notification],
    now: DateTime<Utc>,
) -> Result<Vec<Replace>, StoreError> {
    let mut out = Vec::new();
    for n in notifications {
        let newer: BTreeSet<&str> = n.alerts.iter().map(|a| a.fingerprint.as_str()).collect();
        for queued in store.waiting(&n.channel, &n.pin).await? {
            if queued.entry.delivery.state != DeliveryState::Pending {
                continue;
            }
            let mut entry = queued.entry.clone();
            take_alerts(&mut entry, &newer, now);
            if entry != queued.entry {
                out.push(Replace { queued, entry });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::AlertItem;
    use crate::alert::state::PinAlerts;
    use crate::store::Holder;

    fn item(fingerprint: &str, status: AlertStatus) -> AlertItem {
        AlertItem {
            fingerprint: fingerprint.into(),
            code: crate::alert::AlertCode::Test,
            severity: None,
            status,
            message: String::new(),
            evidence: serde_json::Value::Null,
            action: None,
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
            url: None,
        }
    }

    async fn queue_one(store: &Store, n: Notification) {
        let commit = Commit {
            audit: None,
            subject: "bot",
            state: None,
            notifications: &[n],
        };
        commit_ok(store, &commit).await;
    }

    async fn commit_ok(store: &Store, c: &Commit<'_>) {
        commit(store, c).await.unwrap();
    }

    /// What the channel would send now: (id, fingerprints) in order.
    async fn waiting(store: &Store) -> Vec<(String, Vec<String>)> {
        store
            .queued("hook")
            .await
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
        let store = Store::open(&dir.path().join("s"), Holder::Daemon)
            .await
            .unwrap();
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
            assert_eq!(waiting(&store).await, want, "after {id}");
        }
        let superseded = store
            .outbox_all()
            .await
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
        let store = Store::open(&dir.path().join("s"), Holder::Daemon)
            .await
            .unwrap();
        queue_one(&store, notification("n1", 1, &[("a", Firing)])).await;
        let in_flight = store.queued("hook").await.unwrap().remove(0).remove(0);
        queue_one(&store, notification("n2", 2, &[("a", Resolved)])).await;
        let mut retried = in_flight.entry.clone();
        retried.delivery.attempts = 1;
        store.update_delivery(&in_flight, &retried).await.unwrap();
        let ids: Vec<String> = waiting(&store)
            .await
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["n2"]);
    }

    #[tokio::test]
    async fn one_commit_holds_the_audit_the_state_and_the_notifications() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s"), Holder::Daemon)
            .await
            .unwrap();
        let record = crate::store::tests::record("bot", 100, "a1");
        let state = PinAlerts {
            inconclusive_streak: 2,
            ..PinAlerts::default()
        };
        let n = notification("n1", 1, &[("a", AlertStatus::Firing)]);
        let commit = Commit {
            audit: Some(&record),
            subject: "bot",
            state: Some(&state),
            notifications: std::slice::from_ref(&n),
        };
        commit_ok(&store, &commit).await;
        assert_eq!(store.history(Some("bot"), None).await.unwrap(), [record]);
        assert_eq!(store.alert_state("bot").await.unwrap(), state);
        assert_eq!(waiting(&store).await.len(), 1);
    }
}
