//! What every backend of `Store` must do, written against the interface only: every case runs
//! on sled (a test each) and on a real PostgreSQL server (one test, one database per case, on a
//! cluster of its own; skipped with a notice where PostgreSQL is not installed, unless `CI`).

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::DateTime;

use crate::store::alerts::{AlertCode, PinAlerts};
use crate::store::alerts::{AlertItem, AlertStatus, Notification};
use crate::store::postgres::Target;
use crate::store::tests::record;
use crate::store::{
    AuditRecord, Commit, Cursor, DeliveryState, Entry, Holder, Location, Order, RecordSource,
    Replace, Store, StoreError,
};

use crate::store::test_server as server;

/// One backend under test: where its store lives, so it can be opened again as after a restart.
enum Backend {
    Sled(tempfile::TempDir),
    Postgres(Location),
}

impl Backend {
    fn sled() -> Backend {
        Backend::Sled(tempfile::tempdir().unwrap())
    }

    /// A new database `name` on `server`.
    fn postgres(server: &server::Postgres, name: &str) -> Backend {
        server.create_database(name);
        let target = Target::parse(&server.url(name), None).unwrap();
        Backend::Postgres(Location::Postgres(target))
    }

    async fn open(&self) -> Store {
        match self {
            Backend::Postgres(location) => Store::open_at(location, Holder::Daemon).await.unwrap(),
            Backend::Sled(dir) => {
                // sled releases its file lock from a background thread shortly after the last
                // handle drops: an open right after a close can find it still held.
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                loop {
                    match Store::open(&dir.path().join("store"), Holder::Daemon).await {
                        Err(StoreError::InUse { .. }) if std::time::Instant::now() < deadline => {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        other => return other.unwrap(),
                    }
                }
            }
        }
    }
}

/// Each case a test of its own on sled, and all of them in one test on PostgreSQL (one server
/// started for all, a database per case).
macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        mod on_sled {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(&super::Backend::sled()).await;
                }
            )*
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn every_case_on_postgres() {
            let Some(server) = server::Postgres::start() else {
                return;
            };
            let mut n = 0;
            $(
                n += 1;
                let backend = Backend::postgres(&server, &format!("case{n}"));
                $case(&backend).await;
            )*
        }
    };
}

contract!(
    history_is_time_ordered_filterable_and_survives_reopening,
    recent_audits_come_newest_first_and_the_latest_key_names_its_start,
    pages_follow_their_cursor_to_the_last_one,
    newest_first_pages_hold_every_record_once_within_since_and_pin,
    the_last_audit_looks_past_traffic_verdicts_the_latest_key_does_not,
    one_commit_holds_the_record_the_state_and_the_notifications,
    each_channel_queue_keeps_creation_order_per_pin,
    a_rewrite_of_an_entry_that_changed_since_it_was_read_writes_nothing,
    an_entry_with_nothing_left_to_send_leaves_the_queue_and_a_stale_update_is_ignored,
    a_delivered_or_failed_entry_leaves_the_queue_with_its_last_error,
    a_refused_write_shows_as_failing_until_a_write_succeeds,
    finished_entries_past_the_retention_are_pruned_pending_ones_kept,
);

fn ids(records: Vec<AuditRecord>) -> Vec<String> {
    records.into_iter().map(|r| r.audit_id).collect()
}

fn notification(id: &str, pin: &str, at: i64, fingerprint: &str) -> Notification {
    let t = DateTime::from_timestamp(at, 0).unwrap();
    Notification {
        id: id.into(),
        channel: "hook".into(),
        pin: pin.into(),
        provider: "p".into(),
        model: "m".into(),
        status: AlertStatus::Firing,
        alerts: vec![AlertItem {
            fingerprint: fingerprint.into(),
            code: AlertCode::Test,
            severity: None,
            status: AlertStatus::Firing,
            message: String::new(),
            evidence: serde_json::Value::Null,
            action: None,
            starts_at: t,
            ends_at: None,
        }],
        created_at: t,
        test: false,
        audit_id: None,
        source: None,
        url: None,
    }
}

async fn queue(store: &Store, notifications: &[Notification]) {
    let commit = Commit {
        audit: None,
        subject: "bot",
        state: None,
        notifications,
    };
    store.commit(&commit, &[]).await.unwrap();
}

/// The ids waiting in channel `hook`, grouped by pin.
async fn waiting_ids(store: &Store) -> Vec<Vec<String>> {
    store
        .queued("hook")
        .await
        .unwrap()
        .into_iter()
        .map(|pin| pin.into_iter().map(|q| q.entry.notification.id).collect())
        .collect()
}

async fn history_is_time_ordered_filterable_and_survives_reopening(backend: &Backend) {
    {
        let store = backend.open().await;
        store.append(&record("b", 200, "2")).await.unwrap();
        store.append(&record("a", 100, "1")).await.unwrap();
        store.append(&record("a", 300, "3")).await.unwrap();
        // A pin whose id is a prefix of another must not see the other's history.
        store.append(&record("a-long", 150, "4")).await.unwrap();
    }
    let store = backend.open().await;
    let history = |pin, since| {
        let store = store.clone();
        async move { ids(store.history(pin, since).await.unwrap()) }
    };
    assert_eq!(history(None, None).await, ["1", "4", "2", "3"]);
    assert_eq!(history(Some("a"), None).await, ["1", "3"]);
    let since = DateTime::from_timestamp(150, 0);
    assert_eq!(history(None, since).await, ["4", "2", "3"]);
    assert_eq!(store.last_audit("a").await.unwrap().unwrap().audit_id, "3");
    assert!(store.last_audit("zzz").await.unwrap().is_none());
    let cutoff = DateTime::from_timestamp(250, 0).unwrap();
    assert_eq!(store.prune(cutoff).await.unwrap(), 3);
    assert_eq!(history(None, None).await, ["3"]);
}

async fn recent_audits_come_newest_first_and_the_latest_key_names_its_start(backend: &Backend) {
    let store = backend.open().await;
    let a = ["a".to_owned()];
    assert_eq!(store.latest_keys(&a).await.unwrap(), [None]);
    assert!(store.recent(&a, 5).await.unwrap()[0].is_empty());
    for (pin, at, id) in [
        ("a", 100, "1"),
        ("a", 300, "3"),
        ("a", 200, "2"),
        ("ab", 400, "4"),
    ] {
        store.append(&record(pin, at, id)).await.unwrap();
    }
    let recent = store.recent(&a, 2).await.unwrap().remove(0);
    let recent: Vec<String> = recent
        .iter()
        .map(|raw| raw.decode().unwrap().audit_id)
        .collect();
    assert_eq!(
        recent,
        ["3", "2"],
        "newest first, another pin's prefix excluded"
    );
    let latest = store.latest_keys(&a).await.unwrap().remove(0).unwrap();
    assert_eq!(latest.started_millis, 300_000);
    assert_eq!(latest.audit_id, "3");
}

async fn pages_follow_their_cursor_to_the_last_one(backend: &Backend) {
    let store = backend.open().await;
    for i in 1..=5 {
        store
            .append(&record("a", 100 * i, &i.to_string()))
            .await
            .unwrap();
    }
    store.append(&record("b", 250, "b")).await.unwrap();
    let mut cursor: Option<Cursor> = None;
    let mut pages = Vec::new();
    loop {
        let page = store
            .history_page(Some("a"), None, cursor.as_ref(), Order::Asc, 2)
            .await
            .unwrap();
        pages.push(ids(page.records));
        // The cursor travels in a URL.
        match page.next {
            Some(next) => cursor = Cursor::from_hex(&next.to_hex()),
            None => break,
        }
    }
    assert_eq!(pages, [vec!["1", "2"], vec!["3", "4"], vec!["5"]]);
    let since = DateTime::from_timestamp(250, 0);
    let page = store
        .history_page(None, since, None, Order::Asc, 10)
        .await
        .unwrap();
    assert_eq!(ids(page.records), ["b", "3", "4", "5"]);
    assert!(page.next.is_none());
}

/// Every page of `pin`'s history from `since` in `order`, `limit` at a time, following the
/// cursors as a client does (through their hex); the ids of each page.
async fn walk(
    store: &Store,
    pin: Option<&str>,
    since: Option<DateTime<chrono::Utc>>,
    order: Order,
    limit: usize,
) -> Vec<Vec<String>> {
    let mut cursor: Option<Cursor> = None;
    let mut pages = Vec::new();
    loop {
        let page = store
            .history_page(pin, since, cursor.as_ref(), order, limit)
            .await
            .unwrap();
        pages.push(ids(page.records));
        match page.next {
            Some(next) => cursor = Cursor::from_hex(&next.to_hex()),
            None => return pages,
        }
        assert!(pages.len() < 100, "the cursors go round: {pages:?}");
    }
}

async fn newest_first_pages_hold_every_record_once_within_since_and_pin(backend: &Backend) {
    let store = backend.open().await;
    // Two records share a start (ordered by pin, then id), and `a-long` shares `a`'s prefix.
    for (pin, at, id) in [
        ("a", 100, "1"),
        ("a", 200, "2"),
        ("b", 200, "b2"),
        ("a-long", 250, "l"),
        ("a", 300, "3"),
        ("a", 300, "3x"),
        ("b", 400, "b4"),
        ("a", 500, "5"),
    ] {
        store.append(&record(pin, at, id)).await.unwrap();
    }
    let all = ["5", "b4", "3x", "3", "l", "b2", "2", "1"];
    for limit in 1..=9 {
        let pages = walk(&store, None, None, Order::Desc, limit).await;
        assert!(pages.iter().all(|p| p.len() <= limit), "{limit}: {pages:?}");
        assert_eq!(pages.concat(), all, "limit {limit}");
        let asc = walk(&store, None, None, Order::Asc, limit).await.concat();
        assert_eq!(asc, all.iter().rev().copied().collect::<Vec<_>>());
    }
    let a = walk(&store, Some("a"), None, Order::Desc, 2).await;
    assert_eq!(a, [vec!["5", "3x"], vec!["3", "2"], vec!["1"]]);
    let since = DateTime::from_timestamp(200, 0);
    let recent = walk(&store, None, since, Order::Desc, 3).await;
    assert_eq!(
        recent,
        [vec!["5", "b4", "3x"], vec!["3", "l", "b2"], vec!["2"]]
    );
    let recent_a = walk(&store, Some("a"), since, Order::Desc, 10).await;
    assert_eq!(recent_a, [vec!["5", "3x", "3", "2"]]);
    let future = DateTime::from_timestamp(600, 0);
    assert_eq!(
        walk(&store, None, future, Order::Desc, 5).await,
        [Vec::<String>::new()]
    );
    assert_eq!(
        walk(&store, Some("zzz"), None, Order::Desc, 5).await,
        [Vec::<String>::new()]
    );
    // A cursor from before `since` has passed everything newest first.
    let first = store
        .history_page(None, None, None, Order::Asc, 1)
        .await
        .unwrap();
    let old = first.next.unwrap();
    let page = store
        .history_page(None, since, Some(&old), Order::Desc, 5)
        .await
        .unwrap();
    assert!(page.records.is_empty() && page.next.is_none());
}

async fn the_last_audit_looks_past_traffic_verdicts_the_latest_key_does_not(backend: &Backend) {
    let store = backend.open().await;
    store.append(&record("a", 100, "probe")).await.unwrap();
    let mut verdict = record("a", 200, "traffic");
    verdict.source = Some(RecordSource::Traffic);
    store.append(&verdict).await.unwrap();
    assert_eq!(
        store.last_audit("a").await.unwrap().unwrap().audit_id,
        "probe"
    );
    let latest = store.latest_keys(&["a".to_owned()]).await.unwrap();
    assert_eq!(latest[0].as_ref().unwrap().audit_id, "traffic");
}

async fn one_commit_holds_the_record_the_state_and_the_notifications(backend: &Backend) {
    let store = backend.open().await;
    let mut audit = record("bot", 100, "a1");
    let at = chrono::DateTime::from_timestamp(100, 0).unwrap();
    let alarm = crate::report::Alarm {
        at,
        cause: crate::report::AlarmCause::LaterAudit,
        audit_id: "a1".into(),
        audits: 40,
        look: Some(1.4e-5),
    };
    audit.pin.lifetime = Some(crate::report::LifetimeEvidence {
        audits: 40,
        smallest_p: Some(0.004),
        look: Some(1.25e-4),
        conformal_p: Some(0.012),
        e_value: Some(3.9),
        statistic: 9.1e5,
        threshold: 8.76e5,
        since: Some(at),
        years_to_false_alarm: 100.0,
        held_back: false,
        alarm: Some(alarm.clone()),
        next_behaviour: Some(at + chrono::Duration::hours(25)),
    });
    // The accumulated evidence travels with the alert state, whatever the backend.
    let state = PinAlerts {
        inconclusive_streak: 2,
        accumulated: Some(crate::store::alerts::Accumulated {
            basis: "sha256:pin".into(),
            seen: [(0, 30), (22, 9), (255, 1)].into(),
            statistic: 9.1e5,
            since: Some(at),
            alarm: Some(alarm),
            family: "answers:capital".into(),
            unlike: 1,
            last: Some(crate::store::alerts::LastAudit {
                audit_id: "a1".into(),
                evidence: audit.pin.lifetime.clone().unwrap(),
            }),
            behaviour_at: Some(at - chrono::Duration::hours(3)),
        }),
        ..PinAlerts::default()
    };
    let n = notification("n1", "bot", 1, "x");
    let commit = Commit {
        audit: Some(&audit),
        subject: "bot",
        state: Some(&state),
        notifications: std::slice::from_ref(&n),
    };
    store.commit(&commit, &[]).await.unwrap();
    assert_eq!(
        store.history(Some("bot"), None).await.unwrap(),
        [audit.clone()]
    );
    assert_eq!(store.alert_state("bot").await.unwrap(), state);
    assert_eq!(
        store.alert_state("bot\0traffic").await.unwrap(),
        PinAlerts::default()
    );
    assert_eq!(waiting_ids(&store).await, [["n1"]]);
    assert_eq!(
        store.channels_waiting().await.unwrap(),
        BTreeSet::from(["hook".to_owned()])
    );
    // A copy (`modelpin store copy`) and a restart keep the evidence as it was.
    let elsewhere = Backend::sled();
    let copy = elsewhere.open().await;
    copy.import(&store.export().await.unwrap()).await.unwrap();
    assert_eq!(copy.alert_state("bot").await.unwrap(), state);
    assert_eq!(copy.history(Some("bot"), None).await.unwrap(), [audit]);
    store.close().await.unwrap();
    drop(store);
    let reopened = backend.open().await;
    assert_eq!(reopened.alert_state("bot").await.unwrap(), state);
}

async fn each_channel_queue_keeps_creation_order_per_pin(backend: &Backend) {
    let store = backend.open().await;
    queue(&store, &[notification("b1", "b", 1, "x")]).await;
    queue(&store, &[notification("a2", "a", 3, "x")]).await;
    queue(&store, &[notification("a1", "a", 2, "y")]).await;
    assert_eq!(waiting_ids(&store).await, [vec!["a1", "a2"], vec!["b1"]]);
    let a: Vec<String> = store
        .waiting("hook", "a")
        .await
        .unwrap()
        .into_iter()
        .map(|q| q.entry.notification.id)
        .collect();
    assert_eq!(a, ["a1", "a2"]);
    assert!(store.waiting("other", "a").await.unwrap().is_empty());
}

async fn a_rewrite_of_an_entry_that_changed_since_it_was_read_writes_nothing(backend: &Backend) {
    let store = backend.open().await;
    queue(&store, &[notification("n1", "bot", 1, "x")]).await;
    let read = store.waiting("hook", "bot").await.unwrap().remove(0);
    let mut delivered = read.entry.clone();
    delivered.delivery.state = DeliveryState::Delivered;
    store.update_delivery(&read, &delivered).await.unwrap();
    let mut superseded = read.entry.clone();
    superseded.delivery.state = DeliveryState::Superseded;
    let audit = record("bot", 100, "a1");
    let n2 = notification("n2", "bot", 2, "x");
    let commit = Commit {
        audit: Some(&audit),
        subject: "bot",
        state: None,
        notifications: std::slice::from_ref(&n2),
    };
    let stale = Replace {
        queued: read,
        entry: superseded,
    };
    let refused = store.commit(&commit, &[stale]).await;
    assert!(
        matches!(refused, Err(StoreError::Conflict { .. })),
        "{refused:?}"
    );
    assert!(store.history(None, None).await.unwrap().is_empty());
    assert!(waiting_ids(&store).await.is_empty());
    assert!(
        store.failing().is_none(),
        "a conflict is not a failing store"
    );
}

async fn an_entry_with_nothing_left_to_send_leaves_the_queue_and_a_stale_update_is_ignored(
    backend: &Backend,
) {
    let store = backend.open().await;
    queue(&store, &[notification("n1", "bot", 1, "x")]).await;
    let read = store.waiting("hook", "bot").await.unwrap().remove(0);
    let mut superseded: Entry = read.entry.clone();
    superseded.delivery.state = DeliveryState::Superseded;
    let n2 = notification("n2", "bot", 2, "x");
    let commit = Commit {
        audit: None,
        subject: "bot",
        state: None,
        notifications: std::slice::from_ref(&n2),
    };
    let replace = Replace {
        queued: read.clone(),
        entry: superseded,
    };
    store.commit(&commit, &[replace]).await.unwrap();
    assert_eq!(waiting_ids(&store).await, [["n2"]]);
    // The attempt that read n1 before it was superseded finishes late.
    let mut retried = read.entry.clone();
    retried.delivery.attempts = 1;
    retried.delivery.last_error = Some("timeout".into());
    store.update_delivery(&read, &retried).await.unwrap();
    let states: Vec<(String, DeliveryState)> = store
        .outbox_all()
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.notification.id, e.delivery.state))
        .collect();
    assert_eq!(
        states,
        [
            ("n1".to_owned(), DeliveryState::Superseded),
            ("n2".to_owned(), DeliveryState::Pending)
        ]
    );
}

async fn a_delivered_or_failed_entry_leaves_the_queue_with_its_last_error(backend: &Backend) {
    let store = backend.open().await;
    queue(
        &store,
        &[
            notification("n1", "a", 1, "x"),
            notification("n2", "b", 2, "x"),
        ],
    )
    .await;
    let mut queue = store.queued("hook").await.unwrap().into_iter().flatten();
    let (first, second) = (queue.next().unwrap(), queue.next().unwrap());
    let mut delivered = first.entry.clone();
    delivered.delivery.state = DeliveryState::Delivered;
    delivered.delivery.attempts = 1;
    store.update_delivery(&first, &delivered).await.unwrap();
    let mut failed = second.entry.clone();
    failed.delivery.state = DeliveryState::Failed;
    failed.delivery.last_error = Some("HTTP 410".into());
    store.update_delivery(&second, &failed).await.unwrap();
    assert!(waiting_ids(&store).await.is_empty());
    assert!(store.channels_waiting().await.unwrap().is_empty());
    assert_eq!(store.outbox_all().await.unwrap(), [delivered, failed]);
}

async fn finished_entries_past_the_retention_are_pruned_pending_ones_kept(backend: &Backend) {
    let store = backend.open().await;
    queue(
        &store,
        &[
            notification("old-done", "a", 1, "x"),
            notification("old-waiting", "b", 2, "x"),
            notification("new-done", "c", 100, "x"),
        ],
    )
    .await;
    for queued in store.queued("hook").await.unwrap().into_iter().flatten() {
        if queued.entry.notification.id.ends_with("done") {
            let mut done = queued.entry.clone();
            done.delivery.state = DeliveryState::Delivered;
            store.update_delivery(&queued, &done).await.unwrap();
        }
    }
    let cutoff = DateTime::from_timestamp(50, 0).unwrap();
    assert_eq!(store.prune_outbox(cutoff).await.unwrap(), 1);
    let left: Vec<String> = store
        .outbox_all()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.notification.id)
        .collect();
    assert_eq!(left, ["old-waiting", "new-done"]);
    assert_eq!(waiting_ids(&store).await, [["old-waiting"]]);
    assert_eq!(store.prune_outbox(cutoff).await.unwrap(), 0);
}

async fn a_refused_write_shows_as_failing_until_a_write_succeeds(backend: &Backend) {
    let store = backend.open().await;
    let generation = store.generation();
    store.refuse_writes(1);
    assert!(store.append(&record("a", 100, "1")).await.is_err());
    let failing = store.failing().expect("failing after a refused write");
    assert!(failing.reason.contains("store write failed"), "{failing:?}");
    store.recover(generation).await.unwrap();
    store.append(&record("a", 100, "1")).await.unwrap();
    assert!(store.failing().is_none());
    assert_eq!(ids(store.history(None, None).await.unwrap()), ["1"]);
}
