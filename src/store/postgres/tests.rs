//! What only the PostgreSQL store does: its schema versions, and writes fenced by the lease.

use std::time::Duration;

use crate::store::postgres::Target;
use crate::store::test_server::Postgres;
use crate::store::tests::record;
use crate::store::{Holder, Location, Store, StoreError};

fn location(server: &Postgres, db: &str) -> Location {
    server.create_database(db);
    Location::Postgres(Target::parse(&server.url(db), None).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemons_opening_together_migrate_once_and_a_newer_schema_is_refused_naming_both() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let at = location(&server, "schema");
    let (a, b) = tokio::join!(
        Store::open_at(&at, Holder::Daemon),
        Store::open_at(&at, Holder::Daemon)
    );
    a.unwrap();
    b.unwrap();
    assert_eq!(
        server.sql("schema", "SELECT version FROM modelpin_schema"),
        "3"
    );
    // A store at version 1 (before the fleet's inbox of spans) is brought up to 2.
    server.sql(
        "schema",
        "DROP TABLE modelpin_spans; UPDATE modelpin_schema SET version = 1",
    );
    Store::open_at(&at, Holder::Daemon).await.unwrap();
    assert_eq!(
        server.sql("schema", "SELECT version FROM modelpin_schema"),
        "3"
    );
    assert_eq!(
        server.sql("schema", "SELECT count(*) FROM modelpin_spans"),
        "0"
    );
    server.sql("schema", "UPDATE modelpin_schema SET version = 7");
    let refused = Store::open_at(&at, Holder::History).await.unwrap_err();
    assert!(matches!(
        refused,
        StoreError::NewerSchema {
            found: 7,
            known: 3,
            ..
        }
    ));
    let text = refused.to_string();
    assert!(
        text.contains("schema version 7") && text.contains("up to schema version 3"),
        "{text}"
    );
    assert_eq!(
        server.sql("schema", "SELECT version FROM modelpin_schema"),
        "7",
        "left as it is"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_writes_and_a_deposed_leader_is_refused_in_its_transaction() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let at = location(&server, "fleet");
    let lease = Duration::from_millis(600);
    let a = Store::open_at(&at, Holder::Daemon).await.unwrap();
    let b = Store::open_at(&at, Holder::Daemon).await.unwrap();
    a.join_fleet();
    b.join_fleet();
    let first = a.lead("a", lease, "").await.unwrap();
    assert!(first.leader);
    let standby = b.lead("b", lease, "").await.unwrap();
    assert!(!standby.leader);
    assert_eq!(standby.term, first.term);
    a.append(&record("p", 100, "by-a")).await.unwrap();
    let refused = b.append(&record("p", 200, "by-b")).await;
    assert!(
        matches!(refused, Err(StoreError::Deposed { .. })),
        "{refused:?}"
    );
    assert!(
        b.failing().is_none(),
        "a standby's refusal is not a failing store"
    );
    // a stops renewing (as when it hangs); b takes over once the lease ran out on the server.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let second = loop {
        let lead = b.lead("b", lease, "").await.unwrap();
        if lead.leader {
            break lead;
        }
        assert!(tokio::time::Instant::now() < deadline, "b never led");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(second.term, first.term + 1);
    // a still believes it leads with the old term: the server refuses it.
    let late = a.append(&record("p", 300, "late-a")).await;
    assert!(matches!(late, Err(StoreError::Deposed { .. })), "{late:?}");
    b.append(&record("p", 400, "by-b")).await.unwrap();
    let ids: Vec<String> = b
        .history(None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.audit_id)
        .collect();
    assert_eq!(ids, ["by-a", "by-b"]);
    // Renewing fails for a, which is told it no longer leads.
    assert!(!a.lead("a", lease, "").await.unwrap().leader);
    // A clean stop gives the lease up at once.
    b.close().await.unwrap();
    assert!(a.lead("a", lease, "").await.unwrap().leader);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_member_offers_spans_the_leader_alone_takes_them_in_order_and_a_full_inbox_refuses() {
    use crate::store::postgres::inbox::{MAX_BYTES, Offered, TAKE};

    let Some(server) = Postgres::start() else {
        return;
    };
    let at = location(&server, "inbox");
    let lease = Duration::from_secs(30);
    let a = Store::open_at(&at, Holder::Daemon).await.unwrap();
    let b = Store::open_at(&at, Holder::Daemon).await.unwrap();
    a.join_fleet();
    b.join_fleet();
    assert!(a.lead("a", lease, "").await.unwrap().leader);
    assert!(!b.lead("b", lease, "").await.unwrap().leader);
    let (leader, standby) = (a.shared().unwrap(), b.shared().unwrap());
    for n in 0..3u8 {
        let by = if n % 2 == 0 { standby } else { leader };
        assert_eq!(by.offer_spans("m", &[n]).await.unwrap(), Offered::Accepted);
    }
    let refused = standby.take_spans().await;
    assert!(
        matches!(refused, Err(StoreError::Deposed { .. })),
        "a standby takes nothing: {refused:?}"
    );
    assert_eq!(leader.take_spans().await.unwrap(), [[0], [1], [2]]);
    assert!(leader.take_spans().await.unwrap().is_empty(), "taken once");

    // More than one take's worth waits for the next.
    for n in 0..TAKE + 3 {
        let byte = u8::try_from(n % 200).unwrap();
        standby.offer_spans("m", &[byte]).await.unwrap();
    }
    assert_eq!(leader.take_spans().await.unwrap().len(), TAKE as usize);
    assert_eq!(leader.take_spans().await.unwrap().len(), 3);

    // Full at MAX_BYTES: refused until the leader takes.
    let big = vec![7u8; usize::try_from(MAX_BYTES / 4).unwrap()];
    for _ in 0..4 {
        assert_eq!(
            standby.offer_spans("m", &big).await.unwrap(),
            Offered::Accepted
        );
    }
    assert_eq!(standby.offer_spans("m", &[1]).await.unwrap(), Offered::Full);
    assert_eq!(leader.take_spans().await.unwrap().len(), 4);
    assert_eq!(
        standby.offer_spans("m", &[1]).await.unwrap(),
        Offered::Accepted
    );
}

/// A leader whose audit writes fail (a full disk) stays failing while its lease renewals get
/// through; a write that is taken clears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_lease_does_not_hide_writes_that_fail() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let at = location(&server, "health");
    let lease = Duration::from_secs(15);
    let a = Store::open_at(&at, Holder::Daemon).await.unwrap();
    a.join_fleet();
    assert!(a.lead("a", lease, "").await.unwrap().leader);
    a.refuse_writes(1);
    assert!(a.append(&record("p", 100, "refused")).await.is_err());
    assert!(a.lead("a", lease, "").await.unwrap().leader);
    let failing = a.failing().expect("still failing after a renewal");
    assert!(
        failing.reason.contains("refused by the test"),
        "{failing:?}"
    );
    a.append(&record("p", 200, "taken")).await.unwrap();
    assert!(a.failing().is_none());
}

/// `history` under a role that may only read: nothing is written, the records come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_opens_under_a_read_only_role() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let at = location(&server, "readonly");
    let owner = Store::open_at(&at, Holder::Daemon).await.unwrap();
    owner.append(&record("p", 100, "stored")).await.unwrap();
    server.sql(
        "readonly",
        "CREATE ROLE reader LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader",
    );
    let url = server
        .url("readonly")
        .replacen("://modelpin@", "://reader@", 1);
    let reader = Location::Postgres(Target::parse(&url, None).unwrap());
    let refused = Store::open_at(&reader, Holder::Daemon).await;
    assert!(refused.is_err(), "a daemon needs to write");
    let store = Store::open_at(&reader, Holder::History).await.unwrap();
    let ids: Vec<String> = store
        .history(None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.audit_id)
        .collect();
    assert_eq!(ids, ["stored"]);
    // An empty database holds no store yet: said, not created.
    server.create_database("empty");
    let empty = Location::Postgres(Target::parse(&server.url("empty"), None).unwrap());
    let err = Store::open_at(&empty, Holder::History).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("no modelpin store in this database yet"),
        "{err}"
    );
}
