//! The embedded backend (sled), and every sled call of the store: its trees, transactions and
//! flushes, all run on the blocking pool, off the workers that run the audits.
//!
//! Every write is followed by an explicit flush before it is acknowledged — sled's background
//! flush alone can lose the last half second — so "stored" in the log means on disk. sled 0.34's
//! `flush_async` never wakes when several flushes run at once (spacejam/sled#1308, seen with 100
//! pins audited together), so the blocking flush is used, on the blocking pool. After one failed
//! write sled refuses every later one (its error is sticky), so a store that hit a full disk is
//! closed and reopened (`recover`) rather than used on: that is how the daemon heals when space
//! comes back, without a restart.

mod commit;
mod copy;
mod header;
mod history;
mod keys;
mod open;
mod outbox;
mod unwind;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use sled::transaction::TransactionError;

use crate::store::{Failing, Holder, StoreError};

pub use header::HEADER_FORMAT;
pub use open::reset;

/// The open sled database and its trees; replaced whole when the store is reopened.
pub(crate) struct Trees {
    db: sled::Db,
    audits: sled::Tree,
    by_time: sled::Tree,
    alerts: sled::Tree,
    outbox: sled::Tree,
    pending: sled::Tree,
}

/// The store on sled; clones share the database.
#[derive(Clone)]
pub struct SledStore {
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
    /// sled failed a write since the last (re)open: only then is reopening the way back, and a
    /// write that failed otherwise (cut short, say) leaves a healthy database open.
    broken: Arc<AtomicBool>,
    /// This process's claim on the store, given up once it is closed.
    claim: Arc<Mutex<Option<open::Claim>>>,
    /// Records read that did not decode, so a reader can say how many it could not show.
    undecodable: Arc<AtomicU64>,
    /// Writes still to refuse, so tests can make the store fail on demand.
    #[cfg(test)]
    refuse: Arc<std::sync::atomic::AtomicU32>,
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why a write did not happen.
enum Refused {
    /// An entry to rewrite changed since it was read.
    Conflict,
    Failed(String),
}

impl SledStore {
    /// Opens (or creates) the store for `holder`. A small page cache keeps memory flat.
    pub fn open(path: &Path, holder: Holder) -> Result<SledStore, StoreError> {
        let claim = open::claim(path)?;
        let trees = match open::verified(path) {
            Ok(trees) => trees,
            Err(e) => {
                claim.refused();
                return Err(e);
            }
        };
        open::leave_name(path, holder);
        Ok(SledStore {
            path: path.to_owned(),
            holder,
            trees: Arc::new(RwLock::new(Some(Arc::new(trees)))),
            failing: Arc::default(),
            reopening: Arc::default(),
            generation: Arc::default(),
            broken: Arc::default(),
            claim: Arc::new(Mutex::new(Some(claim))),
            undecodable: Arc::default(),
            #[cfg(test)]
            refuse: Arc::default(),
        })
    }

    /// Closes the store once the operations holding it finished (up to 10 s), and records what
    /// it holds in its header. A store still held then is left "open": the next open treats it
    /// as after a crash.
    pub async fn close(&self) -> Result<(), StoreError> {
        let _one = self.reopening.lock().await;
        let Some(trees) = self.trees.write().expect("store lock").take() else {
            return Ok(());
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&trees) > 1 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let Ok(trees) = Arc::try_unwrap(trees) else {
            tracing::warn!(store = %self.path.display(), "the store is still in use after 10 s; closed without recording what it holds");
            return Ok(());
        };
        let path = self.path.clone();
        let closed = tokio::task::spawn_blocking(move || open::close(&path, trees))
            .await
            .map_err(|e| self.write_error(e))?;
        // Only now may another process read the header.
        self.claim.lock().expect("claim lock").take();
        closed
    }

    /// How many records read so far did not decode.
    #[must_use]
    pub fn undecodable(&self) -> u64 {
        self.undecodable.load(Ordering::Acquire)
    }

    /// Counts and logs records a read had to leave out because they do not decode.
    fn left_out(&self, records: usize) {
        if records > 0 {
            self.undecodable.fetch_add(records as u64, Ordering::AcqRel);
            tracing::error!(store = %self.path.display(), records, "records in the store do not decode and were left out of what was read: the store is damaged");
        }
    }

    /// Why writes fail now (`None` while they succeed).
    #[must_use]
    pub fn failing(&self) -> Option<Failing> {
        self.failing.lock().expect("failing lock").clone()
    }

    /// Notes a write's outcome for the health check.
    fn note(&self, outcome: &Result<(), StoreError>) {
        Failing::note(&self.failing, outcome.as_ref().copied());
    }

    /// The current generation, to pass to `recover` after a write on it failed.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Closes and reopens the database after a write on `failed` (a generation) failed: sled's
    /// error is sticky, so this is the only way back once the disk has room again. Does nothing
    /// when another writer reopened it since, or when sled never failed (the database is fine).
    /// Waits (up to 10 s) for operations still holding the old database, since sled's file lock
    /// is released only when it is dropped.
    pub async fn recover(&self, failed: u64) -> Result<(), StoreError> {
        let _one = self.reopening.lock().await;
        let closed = self.trees.read().expect("store lock").is_none();
        if self.generation() != failed || !(closed || self.broken.load(Ordering::Acquire)) {
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
        let trees = tokio::task::spawn_blocking(move || open::trees(&path, true))
            .await
            .map_err(|e| self.write_error(e))??;
        *self.trees.write().expect("store lock") = Some(Arc::new(trees));
        self.broken.store(false, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
        open::leave_name(&self.path, self.holder);
        Ok(())
    }

    /// The open trees, or an error while the store is being reopened.
    fn trees(&self) -> Result<Arc<Trees>, StoreError> {
        self.trees
            .read()
            .expect("store lock")
            .clone()
            .ok_or_else(|| self.write_error("the store is being reopened after a failed write"))
    }

    fn write_error(&self, message: impl std::fmt::Display) -> StoreError {
        StoreError::Write {
            path: self.path.clone(),
            message: message.to_string(),
        }
    }

    fn read_error(&self, e: &sled::Error) -> StoreError {
        self.write_error(format!("read failed: {e}"))
    }

    /// Runs `read` on the current trees, on the blocking pool.
    async fn read<T, F>(&self, read: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Trees) -> Result<T, sled::Error> + Send + 'static,
    {
        let trees = self.trees()?;
        match tokio::task::spawn_blocking(move || unwind::caught(|| read(&trees))).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(e))) => Err(self.read_error(&e)),
            Ok(Err(panic)) => Err(StoreError::Corrupt {
                path: self.path.clone(),
                message: format!("reading it failed: {panic}"),
            }),
            Err(e) => Err(self.write_error(e)),
        }
    }

    /// Runs `write` on the current trees and flushes, on the blocking pool, noting the outcome
    /// for the health check: `Ok` means on disk. A conflict wrote nothing and says nothing
    /// about the store's health.
    async fn write<F>(&self, write: F) -> Result<(), StoreError>
    where
        F: FnOnce(&Trees) -> Result<(), Refused> + Send + 'static,
    {
        #[cfg(test)]
        if self.refused_by_test() {
            let outcome = Err(self.write_error("refused by the test"));
            self.note(&outcome);
            return outcome;
        }
        let outcome = match self.trees() {
            Ok(trees) => self.written(trees, write).await,
            Err(e) => Err(e),
        };
        if !matches!(outcome, Err(StoreError::Conflict { .. })) {
            self.note(&outcome);
        }
        outcome
    }

    /// `write` and the flush on `trees`; any failure of sled's marks the database broken.
    async fn written<F>(&self, trees: Arc<Trees>, write: F) -> Result<(), StoreError>
    where
        F: FnOnce(&Trees) -> Result<(), Refused> + Send + 'static,
    {
        let done = tokio::task::spawn_blocking(move || {
            let written = unwind::caught(|| {
                write(&trees)?;
                trees
                    .db
                    .flush()
                    .map(|_| ())
                    .map_err(|e| Refused::Failed(e.to_string()))
            });
            written.unwrap_or_else(|panic| Err(Refused::Failed(panic)))
        })
        .await;
        let failed = match done {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(Refused::Conflict)) => {
                return Err(StoreError::Conflict {
                    path: self.path.clone(),
                });
            }
            Ok(Err(Refused::Failed(message))) => self.write_error(message),
            Err(e) => self.write_error(e),
        };
        self.broken.store(true, Ordering::Release);
        Err(failed)
    }

    #[cfg(test)]
    fn refused_by_test(&self) -> bool {
        self.refuse
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Makes the next `writes` writes fail as a full disk would.
    #[cfg(test)]
    pub(crate) fn refuse_writes(&self, writes: u32) {
        self.refuse.store(writes, Ordering::Release);
    }

    /// Flushes everything written so far to disk.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.write(|_| Ok(())).await
    }
}

fn transaction_refused(e: TransactionError<()>) -> Refused {
    match e {
        TransactionError::Abort(()) => Refused::Conflict,
        TransactionError::Storage(e) => Refused::Failed(format!("{e:?}")),
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::record;
    use crate::store::{Holder, Store};

    /// Regression: 100 audits stored at once hung on sled's `flush_async` (spacejam/sled#1308).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_concurrent_appends_all_complete() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store"), Holder::Daemon)
            .await
            .unwrap();
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
        assert_eq!(store.history(None, None).await.unwrap().len(), 100);
    }

    /// sled writes nothing after it is dropped: a store closed and opened again and again is
    /// never taken for damaged, and a truncated one is refused without a byte changed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_store_reopens_and_a_truncated_one_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        for i in 0..5u8 {
            let store = Store::open(&path, Holder::Daemon).await.unwrap();
            let held = store.history(None, None).await.unwrap().len();
            assert_eq!(held, usize::from(i));
            let at = 100 + i64::from(i);
            store
                .append(&record("a", at, &i.to_string()))
                .await
                .unwrap();
            store.close().await.unwrap();
            assert!(store.flush().await.is_err(), "closed");
        }
        let db = path.join("db");
        let bytes = std::fs::read(&db).unwrap();
        std::fs::write(&db, &bytes[..bytes.len() / 2]).unwrap();
        let err = Store::open(&path, Holder::History).await.unwrap_err();
        assert!(err.wants_reset(), "{err}");
        assert!(
            err.to_string().contains("its file `db` went from "),
            "{err}"
        );
        assert_eq!(std::fs::read(&db).unwrap(), &bytes[..bytes.len() / 2]);
    }

    /// A store on sled holding audits "1" and "2" of pin "a", in its temporary directory.
    async fn two_audits() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store"), Holder::Daemon)
            .await
            .unwrap();
        store.append(&record("a", 100, "1")).await.unwrap();
        store.append(&record("a", 200, "2")).await.unwrap();
        (dir, store)
    }

    /// A record whose bytes do not decode is left out of what is read, and counted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_record_that_does_not_decode_is_counted_not_dropped_silently() {
        let (_dir, store) = two_audits().await;
        let Store::Sled(sled) = &store else {
            unreachable!("opened on sled")
        };
        let trees = sled.trees().unwrap();
        let key = super::keys::audit_key("a", 100_000, "1");
        trees
            .audits
            .insert(key, b"{\"not\": \"a record\"".as_slice())
            .unwrap();
        drop(trees);
        assert_eq!(store.undecodable(), 0);
        let left = store.history(None, None).await.unwrap();
        assert_eq!(
            left.iter().map(|r| r.audit_id.as_str()).collect::<Vec<_>>(),
            ["2"]
        );
        assert_eq!(store.undecodable(), 1);
        let page = store
            .history_page(None, None, None, crate::store::Order::Asc, 10)
            .await
            .unwrap();
        assert_eq!(page.records.len(), 1);
        assert_eq!(store.undecodable(), 2);
    }

    /// What a copy reads out counts every row it had to leave out: audits, alert states and
    /// outbox entries alike.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_export_counts_the_rows_that_do_not_decode() {
        let (_dir, store) = two_audits().await;
        assert_eq!(store.export().await.unwrap().unreadable, 0);
        let Store::Sled(sled) = &store else {
            unreachable!("opened on sled")
        };
        let trees = sled.trees().unwrap();
        let key = super::keys::audit_key("a", 100_000, "1");
        trees.audits.insert(key, b"{".as_slice()).unwrap();
        trees.alerts.insert(b"pin\0a", b"[".as_slice()).unwrap();
        trees.outbox.insert(b"x", b"null".as_slice()).unwrap();
        drop(trees);
        let contents = store.export().await.unwrap();
        assert_eq!(contents.unreadable, 3);
        assert_eq!(contents.counts().audits, 1);
    }

    #[test]
    fn a_key_too_short_to_hold_a_time_has_none() {
        let key = super::keys::audit_key("a", 300_000, "3");
        assert_eq!(super::keys::key_millis("a", &key), Some(300_000));
        assert_eq!(super::keys::key_audit_id("a", &key), "3");
        assert_eq!(super::keys::key_millis("a", b"a\0short"), None);
    }
}
