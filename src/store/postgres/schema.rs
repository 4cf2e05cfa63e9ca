//! The PostgreSQL store's schema, versioned: each migration brings it one version up, applied at
//! open in one transaction under a transaction-level advisory lock, so daemons starting together
//! migrate once and never see half a schema. A database at a newer version than this modelpin
//! knows is refused, naming both versions, and left as it is.
//!
//! Version 2 adds `modelpin_spans`, the fleet's inbox of traffic spans (`inbox`); version 3 the
//! leader's config and lock digests on the lease row, so a member that runs another pins.toml
//! can tell.
//!
//! Tables are prefixed `modelpin_` so the store can share a database. An alert state's subject
//! is bytes: a traffic verdict's holds a NUL (`AuditRecord::alert_subject`), which text cannot. Text keys compare
//! byte-wise (`COLLATE "C"`), the order the sled store keeps: one pin's history by start time,
//! each channel's queue by pin, then creation.

use tokio_postgres::Client;

/// The newest schema version this modelpin writes.
pub const VERSION: i32 = 3;

/// Key of the advisory lock migrations take (`pg_advisory_xact_lock`): "modelpin" in ASCII.
const MIGRATION_LOCK: i64 = 0x6d6f_6465_6c70_696e;

/// Migration `n` (1-based) brings the schema from version `n - 1` to `n`.
const MIGRATIONS: [&str; VERSION as usize] = [
    r#"
CREATE TABLE modelpin_audits (
    pin text COLLATE "C" NOT NULL,
    started_millis bigint NOT NULL,
    audit_id text COLLATE "C" NOT NULL,
    probe boolean NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (pin, started_millis, audit_id)
);
CREATE INDEX modelpin_audits_by_time ON modelpin_audits (started_millis, pin, audit_id);
CREATE TABLE modelpin_alert_state (
    subject bytea PRIMARY KEY,
    state bytea NOT NULL
);
CREATE TABLE modelpin_outbox (
    created_millis bigint NOT NULL,
    id text COLLATE "C" NOT NULL,
    channel text COLLATE "C" NOT NULL,
    pin text COLLATE "C" NOT NULL,
    pending boolean NOT NULL,
    entry bytea NOT NULL,
    PRIMARY KEY (created_millis, id)
);
CREATE INDEX modelpin_outbox_queue ON modelpin_outbox (channel, pin, created_millis, id)
    WHERE pending;
CREATE TABLE modelpin_lease (
    name text PRIMARY KEY,
    holder text NOT NULL,
    term bigint NOT NULL,
    expires_at timestamptz NOT NULL
);
INSERT INTO modelpin_lease VALUES ('leader', '', 0, '-infinity');
"#,
    r"
CREATE TABLE modelpin_spans (
    id bigserial PRIMARY KEY,
    member text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    spans bytea NOT NULL
);
",
    r"
ALTER TABLE modelpin_lease ADD COLUMN IF NOT EXISTS digests text NOT NULL DEFAULT '';
",
];

/// Why the schema could not be brought up to date.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The database is at this newer version.
    Newer(i32),
    Failed(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for Refused {
    fn from(e: tokio_postgres::Error) -> Refused {
        Refused::Failed(e)
    }
}

/// The schema's version as it is, without writing anything (`history` under a read-only
/// role); 0 when the database holds no modelpin store.
pub(crate) async fn version(client: &Client) -> Result<i32, Refused> {
    let exists = client
        .query_one("SELECT to_regclass('modelpin_schema') IS NOT NULL", &[])
        .await?
        .get::<_, bool>(0);
    if !exists {
        return Ok(0);
    }
    let found = client
        .query_opt("SELECT version FROM modelpin_schema", &[])
        .await?
        .map_or(0, |row| row.get(0));
    if found > VERSION {
        return Err(Refused::Newer(found));
    }
    Ok(found)
}

/// Brings the schema to `VERSION`, or refuses a newer one; returns the version found.
pub(crate) async fn migrate(client: &mut Client) -> Result<i32, Refused> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS modelpin_schema (
            one boolean PRIMARY KEY DEFAULT true CHECK (one),
            version integer NOT NULL
        )",
    )
    .await?;
    let found: i32 = tx
        .query_opt("SELECT version FROM modelpin_schema", &[])
        .await?
        .map_or(0, |row| row.get(0));
    if found > VERSION {
        return Err(Refused::Newer(found));
    }
    for (n, migration) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.batch_execute(migration).await?;
        let version = i32::try_from(n + 1).expect("a handful of migrations");
        tx.execute(
            "INSERT INTO modelpin_schema (version) VALUES ($1)
             ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version",
            &[&version],
        )
        .await?;
        tracing::info!(version, "store schema migrated");
    }
    tx.commit().await?;
    Ok(found)
}
