//! Opening the sled database (checked against its header first), closing it (the header then
//! records what it held), and mapping sled's errors to the store's advice (`StoreError`):
//! locked, full, read-only, damaged, newer, or another I/O failure. One process holds a store at
//! a time (a lock on its `holder` file, then sled's own on `db`); whoever holds it leaves its
//! name in `holder`, so a refusal says who.

use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::store::sled::header::{self, Found, Header, Refusal};
use crate::store::sled::{Trees, unwind};
use crate::store::{Holder, SCHEMA_VERSION, StoreError};

const HOLDER_FILE: &str = "holder";

/// Records who holds the store; best effort (a full disk must not stop the open).
pub(super) fn leave_name(path: &Path, holder: Holder) {
    let text = format!("{} (pid {})\n", holder.as_str(), std::process::id());
    let _ = std::fs::write(path.join(HOLDER_FILE), text);
}

/// Claims the store for this process: an exclusive lock on its `holder` file, held from before
/// the header is read until after it is written at close, so no other process reads or writes
/// the header in between (sled's own lock on `db` is taken later and released earlier). A
/// `holder` file created here is removed again when the store is refused.
pub(super) fn claim(path: &Path) -> Result<Claim, StoreError> {
    let io = |e: std::io::Error| classify_io(path, &e);
    let file_path = path.join(HOLDER_FILE);
    let created = !file_path.exists();
    std::fs::create_dir_all(path).map_err(io)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&file_path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(Claim {
            _file: file,
            created: created.then_some(file_path),
        }),
        Err(std::fs::TryLockError::WouldBlock) => Err(in_use(path.to_owned())),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

/// This process's claim on a store; released when dropped.
pub(super) struct Claim {
    /// Held for its lock.
    _file: std::fs::File,
    /// The `holder` file, when this claim created it.
    created: Option<PathBuf>,
}

impl Claim {
    /// Gives the claim up on a store that was refused: a `holder` file it created goes too.
    pub(super) fn refused(self) {
        let created = self.created.clone();
        drop(self);
        if let Some(file) = created {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// The store is locked: by whom, as its holder file says.
fn in_use(path: PathBuf) -> StoreError {
    let holder = std::fs::read_to_string(path.join(HOLDER_FILE)).map_or_else(
        |_| "another modelpin process".to_owned(),
        |t| t.trim().to_owned(),
    );
    StoreError::InUse {
        by: Holder::named_in(&holder),
        path,
        holder,
    }
}

/// Opens the store at start: the header compared with sled's files before sled touches them
/// (sled's recovery rewrites a damaged log), then sled, then what it holds against the header.
/// A store found damaged is refused and left as it was; the header says "open" from here on.
pub(super) fn verified(path: &Path) -> Result<Trees, StoreError> {
    let found = header::inspect(path).map_err(|r| refused(path, r))?;
    if !matches!(found, Found::Unheaded) {
        mark_open(path)?;
    }
    let trees = trees(path, !matches!(found, Found::Unheaded))?;
    match found {
        Found::Headed(Header {
            closed: Some(closed),
            ..
        }) => {
            let audits = count(path, &trees)?;
            if audits != closed.audits {
                return Err(damaged(
                    path,
                    format!(
                        "it holds {audits} audits, and held {} when it was closed",
                        closed.audits
                    ),
                ));
            }
        }
        // A store from before headers: sled's recovery is all there is to go on.
        Found::Unheaded => mark_open(path)?,
        Found::Fresh | Found::Headed(_) => {}
    }
    Ok(trees)
}

/// Opens the database and its trees (sled's panics caught) and checks the schema version,
/// writing it into a store that has none when `create`.
pub(super) fn trees(path: &Path, create: bool) -> Result<Trees, StoreError> {
    let opened = unwind::caught(|| {
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(4 * 1024 * 1024)
            .open()
            .map_err(|e| classify(path, &e))?;
        let tree = |name: &str| db.open_tree(name).map_err(|e| classify(path, &e));
        let trees = Trees {
            audits: tree("audits")?,
            by_time: tree("audits_by_time")?,
            alerts: tree("alerts")?,
            outbox: tree("outbox")?,
            pending: tree("outbox_pending")?,
            db: db.clone(),
        };
        check_schema(path, &db, create)?;
        Ok(trees)
    });
    opened.map_err(|panic| damaged(path, panic))?
}

/// How many audits the store holds (sled counts by reading every key).
fn count(path: &Path, trees: &Trees) -> Result<u64, StoreError> {
    unwind::caught(|| trees.audits.len() as u64).map_err(|panic| damaged(path, panic))
}

/// Closes the store: flushed, sled's files released, then the header records what it held.
pub(super) fn close(path: &Path, trees: Trees) -> Result<(), StoreError> {
    let audits = count(path, &trees)?;
    unwind::caught(|| trees.db.flush())
        .map_err(|panic| damaged(path, panic))?
        .map_err(|e| classify(path, &e))?;
    drop(trees);
    let io = |e: std::io::Error| classify_io(path, &e);
    let files = header::digest(path).map_err(io)?;
    let closed = header::Closed {
        at: Utc::now(),
        audits,
        files,
    };
    header::write(
        path,
        &Header {
            format: header::HEADER_FORMAT,
            closed: Some(closed),
        },
    )
    .map_err(io)
}

fn mark_open(path: &Path) -> Result<(), StoreError> {
    header::write(path, &header::open()).map_err(|e| classify_io(path, &e))
}

fn damaged(path: &Path, message: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_owned(),
        message,
    }
}

fn refused(path: &Path, refusal: Refusal) -> StoreError {
    match refusal {
        Refusal::Newer(format) => StoreError::Newer {
            path: path.to_owned(),
            found: format!("header format {format}"),
        },
        Refusal::Damaged(why) => damaged(path, why),
        Refusal::Io(e) => classify_io(path, &e),
    }
}

fn check_schema(path: &Path, db: &sled::Db, create: bool) -> Result<(), StoreError> {
    let key = b"schema_version";
    match db.get(key).map_err(|e| classify(path, &e))? {
        None if create => {
            db.insert(key, &SCHEMA_VERSION.to_be_bytes())
                .map_err(|e| classify(path, &e))?;
            db.flush().map_err(|e| classify(path, &e))?;
            Ok(())
        }
        None => Err(damaged(
            path,
            "it holds a database without a header or a schema version: not a store modelpin wrote, or one that lost its contents".to_owned(),
        )),
        Some(bytes) if bytes.as_ref() == SCHEMA_VERSION.to_be_bytes() => Ok(()),
        Some(bytes) => Err(StoreError::Newer {
            path: path.to_owned(),
            found: format!("schema version {:?}", bytes.as_ref()),
        }),
    }
}

/// The remedy follows the cause: locked, full, read-only, corrupt, or another I/O failure.
fn classify(path: &Path, e: &sled::Error) -> StoreError {
    let sled::Error::Io(io) = e else {
        return damaged(path, e.to_string());
    };
    classify_io(path, io)
}

/// An I/O failure's remedy, as for sled's own.
fn classify_io(path: &Path, io: &std::io::Error) -> StoreError {
    let path = path.to_owned();
    let message = io.to_string();
    let locked = io.kind() == std::io::ErrorKind::WouldBlock
        || message.contains("could not acquire lock")
        || message.contains("Resource temporarily unavailable");
    if locked {
        return in_use(path);
    }
    match io.kind() {
        std::io::ErrorKind::StorageFull => StoreError::Full { path, message },
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
            StoreError::ReadOnly { path, message }
        }
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
            StoreError::Corrupt { path, message }
        }
        _ => StoreError::Io {
            path,
            message,
            help: None,
        },
    }
}

/// Moves a store aside, byte for byte, to `<path>.damaged-<UTC time>` (never deleted) so a new
/// one can start; returns where, `None` when there is no store.
pub fn reset(path: &Path) -> std::io::Result<Option<PathBuf>> {
    if !path.exists() {
        return Ok(None);
    }
    let stamp = Utc::now().format("%Y%m%dT%H%M%SZ");
    let named = |n: u32| {
        let mut aside = path.as_os_str().to_owned();
        aside.push(format!(".damaged-{stamp}"));
        if n > 1 {
            aside.push(format!("-{n}"));
        }
        PathBuf::from(aside)
    };
    let aside = (1..=100).map(named).find(|p| !p.exists()).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "100 stores were moved aside this second already",
        )
    })?;
    std::fs::rename(path, &aside)?;
    Ok(Some(aside))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Explain as _;
    use crate::store::sled::SledStore;

    #[test]
    /// A second process on the same store is refused; that needs two processes and is tested at
    /// the CLI. Here: an unreadable store is the one case that offers `--reset-store`.
    fn a_corrupt_store_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage");
        std::fs::create_dir(&garbage).unwrap();
        std::fs::write(garbage.join("conf"), b"\x00\x01 not a sled config").unwrap();
        std::fs::write(garbage.join("db"), b"\xff\xfe not a sled database").unwrap();
        let err = SledStore::open(&garbage, Holder::Daemon)
            .unwrap_err()
            .problem()
            .to_string();
        assert!(
            err.contains("is damaged") && err.contains("--reset-store"),
            "{err}"
        );
    }

    #[test]
    fn each_cause_gets_its_own_advice_and_only_corruption_offers_a_reset() {
        use std::io::{Error, ErrorKind};
        let path = Path::new("/s");
        let cases = [
            (ErrorKind::StorageFull, "disk is full", false),
            (ErrorKind::ReadOnlyFilesystem, "read-only", false),
            (ErrorKind::PermissionDenied, "read-only", false),
            (ErrorKind::InvalidData, "is damaged", true),
            (ErrorKind::NotFound, "cannot be opened", false),
        ];
        for (kind, says, reset) in cases {
            let text = classify(path, &sled::Error::Io(Error::new(kind, "x")))
                .problem()
                .to_string();
            assert!(text.contains(says), "{kind:?}: {text}");
            assert_eq!(text.contains("--reset-store"), reset, "{kind:?}: {text}");
        }
        let corrupt = sled::Error::Corruption { at: None, bt: () };
        assert!(
            classify(path, &corrupt)
                .problem()
                .to_string()
                .contains("--reset-store")
        );
    }

    #[test]
    fn a_store_held_by_check_notify_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let _held = SledStore::open(&path, Holder::CheckNotify).unwrap();
        let lock = std::io::Error::new(std::io::ErrorKind::WouldBlock, "x");
        let text = classify(&path, &sled::Error::Io(lock)).to_string();
        assert!(
            text.contains("in use by `modelpin check --notify` (pid "),
            "{text}"
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
        assert!(aside.to_string_lossy().contains(".damaged-"));
        std::fs::create_dir(&path).unwrap();
        let second = reset(&path).unwrap().unwrap();
        assert!(second.exists() && aside.exists() && second != aside);
    }
}
