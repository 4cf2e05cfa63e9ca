//! The daemon's durable memory (sled): audit history, alert state and the alert outbox.
//!
//! A monitor that runs for months must survive restarts, crashes and full disks without losing
//! what it reported. Every write here is followed by an explicit flush before it is acknowledged —
//! sled's background flush alone can lose the last half second — so "stored" in the log means on
//! disk. Audits are keyed `pin \0 millis` (one pin's history in time order) with a `millis \0 pin`
//! index for time-range queries and pruning. A schema version key guards against reading a future
//! layout. sled allows one process per store; whoever holds it leaves its name in `holder`, so a
//! refusal says who.
//!
//! After one failed write sled refuses every later one (its error is sticky), so a store that hit
//! a full disk is closed and reopened (`recover`) rather than used on: that is how the daemon heals
//! when space comes back, without a restart.

mod open;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sled::Transactional as _;

use crate::report::PinReport;

pub use open::{Holder, StoreError, reset};

pub const SCHEMA_VERSION: u32 = 1;

/// One pin's audit as kept in history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditRecord {
    pub audit_id: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub config_digest: String,
    pub lock_digest: Option<String>,
    pub pin: PinReport,
    /// Where the verdict came from; absent for a probe audit (and every older record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RecordSource>,
}

/// A verdict that was not a probe audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordSource {
    /// Judged from the application's own calls, as OpenTelemetry GenAI spans.
    Traffic,
}

impl AuditRecord {
    /// The key of the alert state this record steps: probe audits and traffic verdicts keep
    /// separate states, so a verdict from one never resolves an alert the other raised.
    #[must_use]
    pub fn alert_subject(&self) -> String {
        match self.source {
            None => self.pin.id.clone(),
            Some(RecordSource::Traffic) => format!("{}\0traffic", self.pin.id),
        }
    }
}

/// The open sled database and its trees; replaced whole when the store is reopened.
pub struct Trees {
    db: sled::Db,
    pub(crate) audits: sled::Tree,
    pub(crate) by_time: sled::Tree,
    pub alerts: sled::Tree,
    pub outbox: sled::Tree,
    /// `channel \0 pin \0 outbox key` of every pending notification: each channel's queue, in
    /// order per pin, without reading delivered history.
    pub pending: sled::Tree,
}

/// Why writes fail now, and since when: the daemon's health.
#[derive(Debug, Clone, PartialEq)]
pub struct Failing {
    pub since: DateTime<Utc>,
    pub reason: String,
}

#[derive(Clone)]
pub struct Store {
    path: PathBuf,
    holder: Holder,
    /// `None` while the store is being reopened.
    trees: Arc<RwLock<Option<Arc<Trees>>>>,
    failing: Arc<Mutex<Option<Failing>>>,
    /// One reopen at a time: two would fight over sled's file lock.
    reopening: Arc<tokio::sync::Mutex<()>>,
    /// How many times the store was reopened: a writer that failed on an older generation
    /// need not reopen again.
    generation: Arc<AtomicU64>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The key, time-index key and bytes of one audit, ready to be written in a transaction.
pub struct AuditRow {
    key: Vec<u8>,
    index: Vec<u8>,
    value: Vec<u8>,
}

impl AuditRow {
    /// Writes the row inside a transaction over (audits, `by_time`).
    pub fn insert(
        &self,
        audits: &sled::transaction::TransactionalTree,
        by_time: &sled::transaction::TransactionalTree,
    ) -> sled::transaction::ConflictableTransactionResult<(), ()> {
        audits.insert(self.key.as_slice(), self.value.as_slice())?;
        by_time.insert(self.index.as_slice(), self.key.as_slice())?;
        Ok(())
    }
}

impl Store {
    /// Opens (or creates) the store for `holder`. A small page cache keeps memory flat.
    pub fn open(path: &Path, holder: Holder) -> Result<Store, StoreError> {
        let trees = open::trees(path)?;
        open::leave_name(path, holder);
        Ok(Store {
            path: path.to_owned(),
            holder,
            trees: Arc::new(RwLock::new(Some(Arc::new(trees)))),
            failing: Arc::default(),
            reopening: Arc::default(),
            generation: Arc::default(),
        })
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open trees, or an error while the store is being reopened.
    pub fn trees(&self) -> Result<Arc<Trees>, StoreError> {
        self.trees
            .read()
            .expect("store lock")
            .clone()
            .ok_or_else(|| self.write_error("the store is being reopened after a failed write"))
    }

    /// Why writes fail now (`None` while they succeed).
    #[must_use]
    pub fn failing(&self) -> Option<Failing> {
        self.failing.lock().expect("failing lock").clone()
    }

    /// Notes a write's outcome for the health check.
    fn note(&self, outcome: &Result<(), StoreError>) {
        let mut failing = self.failing.lock().expect("failing lock");
        match outcome {
            Ok(()) => *failing = None,
            Err(e) => {
                let reason = e.to_string();
                match failing.as_mut() {
                    Some(f) => f.reason = reason,
                    None => {
                        *failing = Some(Failing {
                            since: Utc::now(),
                            reason,
                        });
                    }
                }
            }
        }
    }

    /// The current generation, to pass to `recover` after a write on it failed.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Closes and reopens the database after a write on `failed` (a generation) failed: sled's
    /// error is sticky, so this is the only way back once the disk has room again. Does nothing
    /// when another writer reopened it since. Waits (up to 10 s) for operations still holding
    /// the old database, since sled's file lock is released only when it is dropped.
    pub async fn recover(&self, failed: u64) -> Result<(), StoreError> {
        let _one = self.reopening.lock().await;
        if self.generation() != failed {
            return Ok(());
        }
        let old = self.trees.write().expect("store lock").take();
        if let Some(old) = old {
            let weak = Arc::downgrade(&old);
            drop(old);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while weak.strong_count() > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let path = self.path.clone();
        let opened = tokio::task::spawn_blocking(move || open::trees(&path))
            .await
            .map_err(|e| self.write_error(e))?;
        match opened {
            Ok(trees) => {
                *self.trees.write().expect("store lock") = Some(Arc::new(trees));
                self.generation.fetch_add(1, Ordering::AcqRel);
                open::leave_name(&self.path, self.holder);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) fn write_error(&self, message: impl std::fmt::Display) -> StoreError {
        StoreError::Write {
            path: self.path.clone(),
            message: message.to_string(),
        }
    }

    fn read_error(&self, e: &sled::Error) -> StoreError {
        StoreError::Write {
            path: self.path.clone(),
            message: format!("read failed: {e}"),
        }
    }

    /// One audit's row for a transaction.
    pub fn audit_row(&self, record: &AuditRecord) -> Result<AuditRow, StoreError> {
        let millis = record.started_at.timestamp_millis().max(0) as u64;
        Ok(AuditRow {
            key: audit_key(&record.pin.id, millis, &record.audit_id),
            index: time_key(millis, &record.pin.id, &record.audit_id),
            value: serde_json::to_vec(record).map_err(|e| self.write_error(e))?,
        })
    }

    /// Appends one audit and flushes; when this returns `Ok`, the audit survives a crash.
    pub async fn append(&self, record: &AuditRecord) -> Result<(), StoreError> {
        let row = self.audit_row(record)?;
        self.write(|t| {
            (&t.audits, &t.by_time)
                .transaction(|(audits, by_time)| row.insert(audits, by_time))
                .map_err(|e: sled::transaction::TransactionError<()>| format!("{e:?}"))
        })
        .await
    }

    /// Runs `write` on the current trees and flushes, noting the outcome for the health check:
    /// `Ok` means on disk.
    pub async fn write<F>(&self, write: F) -> Result<(), StoreError>
    where
        F: FnOnce(&Trees) -> Result<(), String>,
    {
        let outcome = match self.trees() {
            Ok(trees) => match write(&trees) {
                Ok(()) => self.flush_trees(trees).await,
                Err(e) => Err(self.write_error(e)),
            },
            Err(e) => Err(e),
        };
        self.note(&outcome);
        outcome
    }

    /// Flushes everything written so far to disk.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let outcome = match self.trees() {
            Ok(trees) => self.flush_trees(trees).await,
            Err(e) => Err(e),
        };
        self.note(&outcome);
        outcome
    }

    /// sled 0.34's `flush_async` never wakes when several flushes run at once (spacejam/sled#1308,
    /// seen here with 100 pins audited together), so the blocking flush runs on the blocking pool.
    async fn flush_trees(&self, trees: Arc<Trees>) -> Result<(), StoreError> {
        match tokio::task::spawn_blocking(move || trees.db.flush()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(self.write_error(e)),
            Err(e) => Err(self.write_error(e)),
        }
    }

    /// Audits since `since` (all when `None`), for one pin or all, oldest first.
    pub fn history(
        &self,
        pin: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let t = self.trees()?;
        let from = since
            .map_or(0, |t| t.timestamp_millis().max(0) as u64)
            .to_be_bytes();
        let mut records = Vec::new();
        for entry in t.by_time.range(from.as_slice()..) {
            let (_, key) = entry.map_err(|e| self.read_error(&e))?;
            if pin.is_some_and(|p| !key.starts_with(&pin_prefix(p))) {
                continue;
            }
            if let Some(bytes) = t.audits.get(&key).map_err(|e| self.read_error(&e))?
                && let Ok(record) = serde_json::from_slice::<AuditRecord>(&bytes)
            {
                records.push(record);
            }
        }
        Ok(records)
    }

    /// At most `limit` audits from `since` (or after `cursor`, the `next` of an earlier page),
    /// oldest first, with the cursor of the next page when there is one. Reads one page of
    /// records, never the whole history.
    pub fn history_page(
        &self,
        pin: Option<&str>,
        since: Option<DateTime<Utc>>,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let from = since
            .map_or(0, |t| t.timestamp_millis().max(0) as u64)
            .to_be_bytes()
            .to_vec();
        let range = match cursor {
            Some(after) if after.0 >= from => (
                std::ops::Bound::Excluded(after.0.clone()),
                std::ops::Bound::Unbounded,
            ),
            _ => (std::ops::Bound::Included(from), std::ops::Bound::Unbounded),
        };
        let t = self.trees()?;
        let mut page = Page::default();
        for entry in t.by_time.range::<Vec<u8>, _>(range) {
            let (index, key) = entry.map_err(|e| self.read_error(&e))?;
            if pin.is_some_and(|p| !key.starts_with(&pin_prefix(p))) {
                continue;
            }
            if page.records.len() == limit {
                page.next = page.last.take();
                break;
            }
            if let Some(bytes) = t.audits.get(&key).map_err(|e| self.read_error(&e))?
                && let Ok(record) = serde_json::from_slice::<AuditRecord>(&bytes)
            {
                page.records.push(record);
            }
            page.last = Some(Cursor(index.to_vec()));
        }
        page.last = None;
        Ok(page)
    }

    /// The latest audit of a pin.
    pub fn last_audit(&self, pin: &str) -> Result<Option<AuditRecord>, StoreError> {
        // Only their `source` is read on the way past: a pin with much traffic has many.
        #[derive(Deserialize)]
        struct Source {
            #[serde(default)]
            source: Option<RecordSource>,
        }
        let t = self.trees()?;
        // Traffic verdicts are history too, but not audits: the schedule looks past them.
        for entry in t.audits.scan_prefix(pin_prefix(pin)).rev() {
            let (_, bytes) = entry.map_err(|e| self.read_error(&e))?;
            if serde_json::from_slice::<Source>(&bytes).is_ok_and(|s| s.source.is_some()) {
                continue;
            }
            return Ok(serde_json::from_slice::<AuditRecord>(&bytes).ok());
        }
        Ok(None)
    }

    /// The key of a pin's latest audit (`pin \0 millis audit_id`), read without decoding the
    /// record: enough to tell whether anything changed since a page was rendered.
    pub fn latest_key(&self, pin: &str) -> Result<Option<sled::IVec>, StoreError> {
        let t = self.trees()?;
        match t.audits.scan_prefix(pin_prefix(pin)).keys().next_back() {
            None => Ok(None),
            Some(key) => key.map(Some).map_err(|e| self.read_error(&e)),
        }
    }

    /// A pin's latest `limit` audits as stored bytes, newest first: a caller that needs a few
    /// fields of each decodes only those.
    pub fn recent_raw(&self, pin: &str, limit: usize) -> Result<Vec<sled::IVec>, StoreError> {
        let t = self.trees()?;
        t.audits
            .scan_prefix(pin_prefix(pin))
            .values()
            .rev()
            .take(limit)
            .map(|v| v.map_err(|e| self.read_error(&e)))
            .collect()
    }

    /// Removes audits that started before `cutoff`; returns how many.
    pub async fn prune(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let end = (cutoff.timestamp_millis().max(0) as u64).to_be_bytes();
        let mut removed = 0;
        self.write(|t| {
            for entry in t.by_time.range(..end.as_slice()) {
                let (index, key) = entry.map_err(|e| e.to_string())?;
                t.audits.remove(&key).map_err(|e| e.to_string())?;
                t.by_time.remove(&index).map_err(|e| e.to_string())?;
                removed += 1;
            }
            Ok(())
        })
        .await?;
        Ok(removed)
    }
}

/// Milliseconds since the epoch at which the audit keyed `key` (of `pin`) started.
#[must_use]
pub fn key_millis(pin: &str, key: &[u8]) -> Option<u64> {
    let at = key.get(pin.len() + 1..pin.len() + 9)?;
    Some(u64::from_be_bytes(at.try_into().ok()?))
}

fn pin_prefix(pin: &str) -> Vec<u8> {
    let mut key = pin.as_bytes().to_vec();
    key.push(0);
    key
}

fn audit_key(pin: &str, millis: u64, audit_id: &str) -> Vec<u8> {
    let mut key = pin_prefix(pin);
    key.extend_from_slice(&millis.to_be_bytes());
    key.extend_from_slice(audit_id.as_bytes());
    key
}

/// Where a page of history ended: the time index key of its last record, written as hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor(Vec<u8>);

impl Cursor {
    /// The cursor as it travels in a URL.
    #[must_use]
    pub fn to_hex(&self) -> String {
        use std::fmt::Write as _;
        self.0.iter().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    }

    /// `None` unless `text` is hex of a plausible index key.
    #[must_use]
    pub fn from_hex(text: &str) -> Option<Cursor> {
        if !text.len().is_multiple_of(2) || text.len() > 2048 {
            return None;
        }
        let bytes: Option<Vec<u8>> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
            .collect();
        bytes.filter(|b| b.len() >= 8).map(Cursor)
    }
}

/// One page of history.
#[derive(Debug, Default)]
pub struct Page {
    pub records: Vec<AuditRecord>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
    last: Option<Cursor>,
}

fn time_key(millis: u64, pin: &str, audit_id: &str) -> Vec<u8> {
    let mut key = millis.to_be_bytes().to_vec();
    key.extend_from_slice(pin.as_bytes());
    key.push(0);
    key.extend_from_slice(audit_id.as_bytes());
    key
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::finding::PinStatus;
    use crate::report::{Calls, Tokens};

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
            },
        }
    }

    /// Regression: 100 audits stored at once hung on sled's `flush_async` (spacejam/sled#1308).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_concurrent_appends_all_complete() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store"), Holder::Daemon).unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..100 {
            let store = store.clone();
            tasks.spawn(async move {
                store
                    .append(&record(&format!("pin-{i}"), 100 + i, &i.to_string()))
                    .await
            });
        }
        let all = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while let Some(done) = tasks.join_next().await {
                done.unwrap().unwrap();
            }
        });
        all.await.expect("every append finishes");
        assert_eq!(store.history(None, None).unwrap().len(), 100);
    }

    #[tokio::test]
    async fn recent_audits_come_newest_first_and_the_latest_key_names_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store"), Holder::Daemon).unwrap();
        assert!(store.latest_key("a").unwrap().is_none());
        assert!(store.recent_raw("a", 5).unwrap().is_empty());
        for (pin, at, id) in [
            ("a", 100, "1"),
            ("a", 300, "3"),
            ("a", 200, "2"),
            ("ab", 400, "4"),
        ] {
            store.append(&record(pin, at, id)).await.unwrap();
        }
        let ids: Vec<String> = store
            .recent_raw("a", 2)
            .unwrap()
            .iter()
            .map(|b| serde_json::from_slice::<AuditRecord>(b).unwrap().audit_id)
            .collect();
        assert_eq!(
            ids,
            ["3", "2"],
            "newest first, another pin's prefix excluded"
        );
        let key = store.latest_key("a").unwrap().unwrap();
        assert_eq!(key_millis("a", &key), Some(300_000));
        assert_eq!(key_millis("a", b"a\0short"), None);
    }

    /// sled releases its file lock from a background thread shortly after the last handle drops:
    /// a reopen right away can find it still held, as a second process would.
    fn reopen(path: &Path) -> Store {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match Store::open(path, Holder::Daemon) {
                Err(StoreError::InUse { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other.unwrap(),
            }
        }
    }

    #[tokio::test]
    async fn history_is_time_ordered_filterable_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        {
            let store = Store::open(&path, Holder::Daemon).unwrap();
            store.append(&record("b", 200, "2")).await.unwrap();
            store.append(&record("a", 100, "1")).await.unwrap();
            store.append(&record("a", 300, "3")).await.unwrap();
            // A pin whose id is a prefix of another must not see the other's history.
            store.append(&record("a-long", 150, "4")).await.unwrap();
        }
        let store = reopen(&path);
        let ids = |v: Vec<AuditRecord>| v.into_iter().map(|r| r.audit_id).collect::<Vec<_>>();
        assert_eq!(
            ids(store.history(None, None).unwrap()),
            ["1", "4", "2", "3"]
        );
        assert_eq!(ids(store.history(Some("a"), None).unwrap()), ["1", "3"]);
        let since = DateTime::from_timestamp(150, 0);
        assert_eq!(ids(store.history(None, since).unwrap()), ["4", "2", "3"]);
        assert_eq!(store.last_audit("a").unwrap().unwrap().audit_id, "3");
        assert!(store.last_audit("zzz").unwrap().is_none());
        assert_eq!(
            store
                .prune(DateTime::from_timestamp(250, 0).unwrap())
                .await
                .unwrap(),
            3
        );
        assert_eq!(ids(store.history(None, None).unwrap()), ["3"]);
    }
}
