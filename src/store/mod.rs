//! The daemon's durable memory: audit history, alert state and the alert outbox, behind one
//! interface (`Store`) whatever keeps them.
//!
//! A monitor that runs for months must survive restarts, crashes and full disks without losing
//! what it reported: an audit, the alert state it steps and the notifications it creates are one
//! transaction (`commit`), on disk before it is acknowledged, so "stored" in the log means a
//! crash at any point leaves all of it or none of it. Every operation that a networked backend
//! would wait on is `async`; the embedded backend (sled, `sled`) does its blocking work on the
//! blocking pool. The set of backends is closed, so `Store` is an enum and each operation one
//! `match` (`each!`): a second backend is one file and one arm there. Which notification
//! replaces which is alerting's rule (`alert::outbox`); the store keeps what it is given and
//! refuses to rewrite an entry that changed since it was read.

pub mod alerts;
mod error;
mod outbox;
pub mod postgres;
mod record;
mod sled;

#[cfg(test)]
mod contract;
pub mod copy;

/// A real PostgreSQL server for the unit tests: the CLI tests' own.
#[cfg(test)]
#[path = "../../tests/cli/support/postgres.rs"]
pub(crate) mod test_server;

use std::collections::BTreeSet;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::store::alerts::PinAlerts;

pub use crate::config::location::Location;
pub use error::{Holder, StoreError};
pub(crate) use outbox::Token;
pub use outbox::{Commit, Delivery, DeliveryState, Entry, Queued, Replace};
pub use postgres::inbox::{Offered, TAKE as INBOX_TAKE};
pub use postgres::{Lead, PgStore};
pub use record::{AuditRecord, Cursor, LatestKey, Order, Page, RawRecord, RecordSource};
pub use sled::{HEADER_FORMAT, SledStore, reset};

/// The layout version of the store: a store written by a newer layout is refused, not misread.
pub const SCHEMA_VERSION: u32 = 1;

/// Why writes fail now, and since when: the daemon's health.
#[derive(Debug, Clone, PartialEq)]
pub struct Failing {
    pub since: DateTime<Utc>,
    pub reason: String,
}

impl Failing {
    /// Notes a write's outcome in `failing`, the health check's state: a success clears it, a
    /// failure keeps the first failure's time and the latest reason.
    pub(crate) fn note(
        failing: &std::sync::Mutex<Option<Failing>>,
        outcome: Result<(), &StoreError>,
    ) {
        let mut failing = failing.lock().expect("failing lock");
        match (outcome, failing.as_mut()) {
            (Ok(()), _) => *failing = None,
            (Err(e), Some(f)) => f.reason = e.to_string(),
            (Err(e), None) => {
                *failing = Some(Failing {
                    since: Utc::now(),
                    reason: e.to_string(),
                });
            }
        }
    }
}

/// The store, whichever backend holds it; clones share it.
#[derive(Debug, Clone)]
pub enum Store {
    Sled(SledStore),
    Postgres(PgStore),
}

/// The one place each operation meets each backend.
macro_rules! each {
    ($store:expr, $backend:ident => $call:expr) => {
        match $store {
            Store::Sled($backend) => $call,
            Store::Postgres($backend) => $call,
        }
    };
}

impl Store {
    /// Opens (or creates) the store at `path` for `holder`, refusing one that is damaged
    /// (`StoreError::Corrupt`, left as it is) or from a newer modelpin.
    pub async fn open(path: &Path, holder: Holder) -> Result<Store, StoreError> {
        let at = path.to_owned();
        tokio::task::spawn_blocking(move || SledStore::open(&at, holder))
            .await
            .map_err(|e| StoreError::Io {
                path: path.to_owned(),
                message: e.to_string(),
                help: None,
            })?
            .map(Store::Sled)
    }

    /// Opens the store wherever `location` says.
    pub async fn open_at(location: &Location, holder: Holder) -> Result<Store, StoreError> {
        match location {
            Location::Sled(path) => Store::open(path, holder).await,
            Location::Postgres(target) => PgStore::open(target, holder).await.map(Store::Postgres),
        }
    }

    /// Whether other processes share this store (a fleet on PostgreSQL): then one of them leads.
    #[must_use]
    pub fn is_shared(&self) -> bool {
        self.shared().is_some()
    }

    /// The PostgreSQL store a fleet shares, when this is one.
    #[must_use]
    pub(crate) fn shared(&self) -> Option<&PgStore> {
        match self {
            Store::Postgres(store) => Some(store),
            Store::Sled(_) => None,
        }
    }

    /// Writes one batch of spans `member` accepted (encoded by the caller) into a fleet's inbox,
    /// where the leader takes them to judge, unless the inbox is full. `None` on a store of one
    /// daemon's own, which has no inbox: that daemon judges what it accepts itself.
    pub async fn offer_spans(
        &self,
        member: &str,
        batch: &[u8],
    ) -> Result<Option<Offered>, StoreError> {
        match self.shared() {
            Some(store) => store.offer_spans(member, batch).await.map(Some),
            None => Ok(None),
        }
    }

    /// Takes up to `INBOX_TAKE` batches from a fleet's inbox, oldest first; none from a store
    /// without one.
    pub async fn take_spans(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        match self.shared() {
            Some(store) => store.take_spans().await,
            None => Ok(Vec::new()),
        }
    }

    /// Opens the store at `location` for a daemon. While another process holds a sled store,
    /// waits up to 5 s (a `modelpin history` run holds it for a moment), then refuses, naming
    /// the holder. With `reset`, a sled store refused as damaged (or from a newer modelpin) is
    /// moved aside, byte for byte, and a new one started, said at ERROR with where it went; an
    /// intact store is opened as it is, so the flag never throws a healthy history away. A
    /// PostgreSQL store is never reset.
    pub async fn open_for_daemon(location: &Location, reset: bool) -> Result<Store, StoreError> {
        let path = match location {
            Location::Sled(path) => path,
            Location::Postgres(_) => {
                if reset {
                    tracing::info!(store = %location, "--reset-store does not apply to a PostgreSQL store; it is opened as it is");
                }
                return Store::open_at(location, Holder::Daemon).await;
            }
        };
        let existed = path.exists();
        if reset && !existed {
            tracing::info!(store = %path.display(), "no store to reset");
        }
        match Store::open_waiting(path).await {
            Err(e) if reset && e.wants_reset() => {
                let aside = match sled::reset(path) {
                    Ok(Some(aside)) => aside,
                    Ok(None) => return Err(e),
                    Err(io) => {
                        return Err(StoreError::Io {
                            path: path.clone(),
                            message: format!("cannot move the store aside: {io}"),
                            help: None,
                        });
                    }
                };
                let cause = e.to_string();
                let cause = cause.lines().next().unwrap_or_default();
                tracing::error!(store = %path.display(), moved_to = %aside.display(), cause, "--reset-store: the store was moved aside, byte for byte, and a new, empty store is started; its history and alert state stay in the moved copy");
                Store::open_waiting(path).await
            }
            Ok(store) if reset && existed => {
                tracing::info!(store = %path.display(), "--reset-store: the store is intact and was kept");
                Ok(store)
            }
            outcome => outcome,
        }
    }

    /// `open` for a daemon, waiting up to 5 s for another process to let go of the store.
    async fn open_waiting(path: &Path) -> Result<Store, StoreError> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut said = false;
        loop {
            match Store::open(path, Holder::Daemon).await {
                Err(StoreError::InUse { .. }) if tokio::time::Instant::now() < deadline => {
                    if !said {
                        tracing::warn!(store = %path.display(), "the store is in use by another modelpin process; waiting up to 5s for it");
                        said = true;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
                outcome => return outcome,
            }
        }
    }

    /// Holds (takes or renews) the fleet's lease as `holder` for `lease`, or says who leads; a
    /// store nobody shares is always led by its one process.
    /// `digests` says what this process runs (pins.toml and lock), written with the lease.
    pub async fn lead(
        &self,
        holder: &str,
        lease: std::time::Duration,
        digests: &str,
    ) -> Result<Lead, StoreError> {
        match self {
            Store::Sled(_) => Ok(Lead {
                leader: true,
                term: 0,
                digests: digests.to_owned(),
            }),
            Store::Postgres(pg) => pg.lead(holder, lease, digests).await,
        }
    }

    /// Joins the fleet on a shared store: from now on writes only while holding the lease.
    pub fn join_fleet(&self) {
        if let Store::Postgres(pg) = self {
            pg.join_fleet();
        }
    }

    /// Stops writing until the lease is held again.
    pub fn step_down(&self) {
        if let Store::Postgres(pg) = self {
            pg.step_down();
        }
    }

    /// Closes the store once every operation on it finished (up to 10 s): the header then
    /// records what it holds, so damage before the next open is found. Every later operation on
    /// any clone fails; a store never closed is opened again as after a crash.
    pub async fn close(&self) -> Result<(), StoreError> {
        each!(self, s => s.close().await)
    }

    /// Why writes fail now (`None` while they succeed).
    #[must_use]
    pub fn failing(&self) -> Option<Failing> {
        each!(self, s => s.failing())
    }

    /// How many records read so far did not decode (each also logged as an error).
    #[must_use]
    pub fn undecodable(&self) -> u64 {
        each!(self, s => s.undecodable())
    }

    /// The current generation, to pass to `recover` after a write on it failed.
    #[must_use]
    pub fn generation(&self) -> u64 {
        each!(self, s => s.generation())
    }

    /// Gets the store writable again after a write on generation `failed` failed (sled: reopens
    /// it, when sled itself failed); does nothing when another writer already did.
    pub async fn recover(&self, failed: u64) -> Result<(), StoreError> {
        each!(self, s => s.recover(failed).await)
    }

    /// Everything written so far on disk.
    pub async fn flush(&self) -> Result<(), StoreError> {
        each!(self, s => s.flush().await)
    }

    /// Writes `commit`, with the older waiting entries `superseded` rewrites, in one transaction;
    /// once this returns `Ok`, all of it survives a crash, and a crash before leaves none of it.
    /// `StoreError::Conflict` when one of those entries changed since it was read.
    pub async fn commit(
        &self,
        commit: &Commit<'_>,
        superseded: &[Replace],
    ) -> Result<(), StoreError> {
        each!(self, s => s.commit(commit, superseded).await)
    }

    /// Appends one record to history, alone.
    pub async fn append(&self, record: &AuditRecord) -> Result<(), StoreError> {
        let commit = Commit {
            audit: Some(record),
            subject: "",
            state: None,
            notifications: &[],
        };
        self.commit(&commit, &[]).await
    }

    /// The alert state of `subject` (`AuditRecord::alert_subject`); empty when it never alerted.
    pub async fn alert_state(&self, subject: &str) -> Result<PinAlerts, StoreError> {
        each!(self, s => s.alert_state(subject).await)
    }

    /// The pending entries of one channel for one pin, oldest first.
    pub async fn waiting(&self, channel: &str, pin: &str) -> Result<Vec<Queued>, StoreError> {
        each!(self, s => s.waiting(channel, pin).await)
    }

    /// A channel's queue: pending entries grouped by pin, each pin's oldest first.
    pub async fn queued(&self, channel: &str) -> Result<Vec<Vec<Queued>>, StoreError> {
        each!(self, s => s.queued(channel).await)
    }

    /// Channels with notifications waiting.
    pub async fn channels_waiting(&self) -> Result<BTreeSet<String>, StoreError> {
        each!(self, s => s.channels_waiting().await)
    }

    /// Every outbox entry, oldest first (`check --notify`'s summary, tests).
    pub async fn outbox_all(&self) -> Result<Vec<Entry>, StoreError> {
        each!(self, s => s.outbox_all().await)
    }

    /// Records a delivery attempt's outcome (delivered, failed with its last error, a retry),
    /// unless the entry changed since `queued` was read: then the newer state stands.
    pub async fn update_delivery(&self, queued: &Queued, entry: &Entry) -> Result<(), StoreError> {
        each!(self, s => s.update_delivery(queued, entry).await)
    }

    /// Brings entries written by an older modelpin into the channel queues, once.
    pub async fn index_older_entries(&self) -> Result<(), StoreError> {
        each!(self, s => s.index_older_entries().await)
    }

    /// Records since `since` (all when `None`), for one pin or all, oldest first.
    pub async fn history(
        &self,
        pin: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        each!(self, s => s.history(pin, since).await)
    }

    /// At most `limit` records from `since` on, in `order`, with the next page's cursor when
    /// there is one. `cursor` (an earlier page's `next`, read in the same order) is where the
    /// page starts: after it oldest first, before it (and not before `since`) newest first.
    pub async fn history_page(
        &self,
        pin: Option<&str>,
        since: Option<DateTime<Utc>>,
        cursor: Option<&Cursor>,
        order: Order,
        limit: usize,
    ) -> Result<Page, StoreError> {
        each!(self, s => s.history_page(pin, since, cursor, order, limit).await)
    }

    /// A pin's latest probe audit, looking past its traffic verdicts.
    pub async fn last_audit(&self, pin: &str) -> Result<Option<AuditRecord>, StoreError> {
        each!(self, s => s.last_audit(pin).await)
    }

    /// The key of each pin's latest record (probe audit or traffic verdict), in `pins` order.
    pub async fn latest_keys(&self, pins: &[String]) -> Result<Vec<Option<LatestKey>>, StoreError> {
        each!(self, s => s.latest_keys(pins).await)
    }

    /// Each pin's latest `limit` records as stored, newest first, in `pins` order.
    pub async fn recent(
        &self,
        pins: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<RawRecord>>, StoreError> {
        each!(self, s => s.recent(pins, limit).await)
    }

    /// Removes records that started before `cutoff`; returns how many.
    pub async fn prune(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        each!(self, s => s.prune(cutoff).await)
    }

    /// Removes outbox entries created before `cutoff` whose delivery is over (delivered,
    /// superseded, failed, expired); pending ones and any that do not decode are kept. Returns
    /// how many went.
    pub async fn prune_outbox(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        each!(self, s => s.prune_outbox(cutoff).await)
    }

    /// Everything the store holds (`modelpin store copy`).
    pub async fn export(&self) -> Result<copy::Contents, StoreError> {
        each!(self, s => s.export().await)
    }

    /// Writes `contents` in (`modelpin store copy`).
    pub async fn import(&self, contents: &copy::Contents) -> Result<(), StoreError> {
        each!(self, s => s.import(contents).await)
    }

    /// Makes the next `writes` writes fail, as a full disk would.
    #[cfg(test)]
    pub(crate) fn refuse_writes(&self, writes: u32) {
        each!(self, s => s.refuse_writes(writes));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use chrono::DateTime;

    use crate::finding::PinStatus;
    use crate::report::{Calls, PinReport, Tokens};
    use crate::store::AuditRecord;

    pub(crate) fn record(pin: &str, at: i64, id: &str) -> AuditRecord {
        let t = DateTime::from_timestamp(at, 0).unwrap();
        AuditRecord {
            audit_id: id.into(),
            started_at: t,
            finished_at: t,
            config_digest: "sha256:c".into(),
            lock_digest: None,
            source: None,
            pin: PinReport {
                id: pin.into(),
                provider: "p".into(),
                model: "m".into(),
                status: PinStatus::Ok,
                served_models: std::collections::BTreeMap::new(),
                upstreams: std::collections::BTreeMap::new(),
                calls: Calls::default(),
                tokens: Tokens::default(),
                cost_usd: None,
                lifecycle: None,
                behaviour: Vec::new(),
                findings: Vec::new(),
                capped: std::collections::BTreeMap::new(),
                lifetime: None,
            },
        }
    }
}
