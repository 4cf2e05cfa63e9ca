//! The daemon's durable memory (sled): audit history, alert state and the alert outbox.
//!
//! A monitor that runs for months must survive restarts and crashes without losing what it
//! reported. Every write here is followed by an explicit flush before it is acknowledged — sled's
//! background flush alone can lose the last half second — so "stored" in the log means on disk.
//! Audits are keyed `pin \0 millis` (one pin's history in time order) with a `millis \0 pin` index
//! for time-range queries and pruning. A schema version key guards against reading a future
//! layout. sled allows one process per store; a second daemon is refused with a clear message.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::report::PinReport;

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
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "error: the store at {path} is in use by another modelpin process (a daemon is already running on it)\n  = help: stop the other daemon, or give this one its own `store` in [settings]"
    )]
    InUse { path: PathBuf },
    #[error(
        "error: the store at {path} cannot be opened: {message}\n  = help: run `modelpin daemon --reset-store` to move it aside (kept as {path}.broken-<time>) and start a new one"
    )]
    Unusable { path: PathBuf, message: String },
    #[error("error: store write failed at {path}: {message}")]
    Write { path: PathBuf, message: String },
}

#[derive(Clone)]
pub struct Store {
    path: PathBuf,
    db: sled::Db,
    audits: sled::Tree,
    by_time: sled::Tree,
    pub alerts: sled::Tree,
    pub outbox: sled::Tree,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (or creates) the store. A small page cache keeps the daemon's memory flat.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(4 * 1024 * 1024)
            .open()
            .map_err(|e| open_error(path, &e))?;
        let unusable = |e: sled::Error| StoreError::Unusable {
            path: path.to_owned(),
            message: e.to_string(),
        };
        let store = Store {
            path: path.to_owned(),
            audits: db.open_tree("audits").map_err(unusable)?,
            by_time: db.open_tree("audits_by_time").map_err(unusable)?,
            alerts: db.open_tree("alerts").map_err(unusable)?,
            outbox: db.open_tree("outbox").map_err(unusable)?,
            db,
        };
        store.check_schema()?;
        Ok(store)
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_schema(&self) -> Result<(), StoreError> {
        let key = b"schema_version";
        let found = self.db.get(key).map_err(|e| self.unusable(&e))?;
        match found {
            None => {
                self.db
                    .insert(key, &SCHEMA_VERSION.to_be_bytes())
                    .map_err(|e| self.unusable(&e))?;
                self.db.flush().map_err(|e| self.unusable(&e))?;
                Ok(())
            }
            Some(bytes) if bytes.as_ref() == SCHEMA_VERSION.to_be_bytes() => Ok(()),
            Some(bytes) => Err(StoreError::Unusable {
                path: self.path.clone(),
                message: format!(
                    "schema version {:?} is not {SCHEMA_VERSION}, the one this modelpin reads",
                    bytes.as_ref()
                ),
            }),
        }
    }

    fn unusable(&self, e: &sled::Error) -> StoreError {
        StoreError::Unusable {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn write_error(&self, message: impl std::fmt::Display) -> StoreError {
        StoreError::Write {
            path: self.path.clone(),
            message: message.to_string(),
        }
    }

    /// Appends one audit and flushes; when this returns `Ok`, the audit survives a crash.
    pub async fn append(&self, record: &AuditRecord) -> Result<(), StoreError> {
        let millis = record.started_at.timestamp_millis().max(0) as u64;
        let value = serde_json::to_vec(record).map_err(|e| self.write_error(e))?;
        let key = audit_key(&record.pin.id, millis, &record.audit_id);
        let index = time_key(millis, &record.pin.id, &record.audit_id);
        (&self.audits, &self.by_time)
            .transaction(|(audits, by_time)| {
                audits.insert(key.as_slice(), value.as_slice())?;
                by_time.insert(index.as_slice(), key.as_slice())?;
                Ok(())
            })
            .map_err(|e: sled::transaction::TransactionError<()>| {
                self.write_error(format!("{e:?}"))
            })?;
        self.flush().await
    }

    /// Flushes everything written so far to disk.
    ///
    /// sled 0.34's `flush_async` never wakes when several flushes run at once (spacejam/sled#1308,
    /// seen here with 100 pins audited together), so the blocking flush runs on the blocking pool.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let db = self.db.clone();
        match tokio::task::spawn_blocking(move || db.flush()).await {
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
        let from = since
            .map_or(0, |t| t.timestamp_millis().max(0) as u64)
            .to_be_bytes();
        let mut records = Vec::new();
        for entry in self.by_time.range(from.as_slice()..) {
            let (_, key) = entry.map_err(|e| self.unusable(&e))?;
            if pin.is_some_and(|p| !key.starts_with(&pin_prefix(p))) {
                continue;
            }
            if let Some(bytes) = self.audits.get(&key).map_err(|e| self.unusable(&e))?
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
        let mut page = Page::default();
        for entry in self.by_time.range::<Vec<u8>, _>(range) {
            let (index, key) = entry.map_err(|e| self.unusable(&e))?;
            if pin.is_some_and(|p| !key.starts_with(&pin_prefix(p))) {
                continue;
            }
            if page.records.len() == limit {
                page.next = page.last.take();
                break;
            }
            if let Some(bytes) = self.audits.get(&key).map_err(|e| self.unusable(&e))?
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
        let last = self.audits.scan_prefix(pin_prefix(pin)).next_back();
        match last {
            None => Ok(None),
            Some(entry) => {
                let (_, bytes) = entry.map_err(|e| self.unusable(&e))?;
                Ok(serde_json::from_slice(&bytes).ok())
            }
        }
    }

    /// Removes audits that started before `cutoff`; returns how many.
    pub async fn prune(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let end = (cutoff.timestamp_millis().max(0) as u64).to_be_bytes();
        let mut removed = 0;
        for entry in self.by_time.range(..end.as_slice()) {
            let (index, key) = entry.map_err(|e| self.unusable(&e))?;
            self.audits.remove(&key).map_err(|e| self.write_error(e))?;
            self.by_time
                .remove(&index)
                .map_err(|e| self.write_error(e))?;
            removed += 1;
        }
        if removed > 0 {
            self.flush().await?;
        }
        Ok(removed)
    }
}

use sled::Transactional as _;

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

fn open_error(path: &Path, e: &sled::Error) -> StoreError {
    let text = e.to_string();
    let locked = matches!(e, sled::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock)
        || text.contains("could not acquire lock")
        || text.contains("Resource temporarily unavailable");
    if locked {
        StoreError::InUse {
            path: path.to_owned(),
        }
    } else {
        StoreError::Unusable {
            path: path.to_owned(),
            message: text,
        }
    }
}

/// Moves a store aside (`<path>.broken-<unix seconds>`) so a fresh one can start; returns where.
pub fn reset(path: &Path) -> std::io::Result<Option<PathBuf>> {
    if !path.exists() {
        return Ok(None);
    }
    let stamp = Utc::now().timestamp();
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".broken-{stamp}"));
    let aside = PathBuf::from(aside);
    std::fs::rename(path, &aside)?;
    Ok(Some(aside))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::PinStatus;
    use crate::report::{Calls, Tokens};

    fn record(pin: &str, at: i64, id: &str) -> AuditRecord {
        let t = DateTime::from_timestamp(at, 0).unwrap();
        AuditRecord {
            audit_id: id.into(),
            started_at: t,
            finished_at: t,
            config_digest: "sha256:c".into(),
            lock_digest: None,
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
        let store = Store::open(&dir.path().join("store")).unwrap();
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
    async fn history_is_time_ordered_filterable_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        {
            let store = Store::open(&path).unwrap();
            store.append(&record("b", 200, "2")).await.unwrap();
            store.append(&record("a", 100, "1")).await.unwrap();
            store.append(&record("a", 300, "3")).await.unwrap();
            // A pin whose id is a prefix of another must not see the other's history.
            store.append(&record("a-long", 150, "4")).await.unwrap();
        }
        let store = Store::open(&path).unwrap();
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

    #[test]
    /// A second process on the same store is refused; that needs two processes and is tested at
    /// the CLI (`a_second_daemon_on_the_same_store_is_refused`). Here: an unreadable store.
    fn a_corrupt_store_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage");
        std::fs::create_dir(&garbage).unwrap();
        std::fs::write(garbage.join("conf"), b"\x00\x01 not a sled config").unwrap();
        std::fs::write(garbage.join("db"), b"\xff\xfe not a sled database").unwrap();
        let err = Store::open(&garbage).unwrap_err().to_string();
        assert!(
            err.contains("cannot be opened") && err.contains("--reset-store"),
            "{err}"
        );
    }

    #[test]
    fn reset_moves_the_store_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        assert_eq!(reset(&path).unwrap(), None);
        std::fs::create_dir(&path).unwrap();
        let aside = reset(&path).unwrap().unwrap();
        assert!(aside.exists() && !path.exists());
        assert!(aside.to_string_lossy().contains(".broken-"));
    }
}
