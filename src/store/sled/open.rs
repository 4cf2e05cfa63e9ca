//! Opening the sled database, and mapping sled's errors to the store's advice (`StoreError`):
//! locked, full, read-only, corrupt, or another I/O failure. sled allows one process per store;
//! whoever holds it leaves its name in `holder`, so a refusal says who.

use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::store::sled::Trees;
use crate::store::{Holder, SCHEMA_VERSION, StoreError};

const HOLDER_FILE: &str = "holder";

/// Records who holds the store; best effort (a full disk must not stop the open).
pub(super) fn leave_name(path: &Path, holder: Holder) {
    let text = format!("{} (pid {})\n", holder.as_str(), std::process::id());
    let _ = std::fs::write(path.join(HOLDER_FILE), text);
}

fn holder_of(path: &Path) -> String {
    std::fs::read_to_string(path.join(HOLDER_FILE)).map_or_else(
        |_| "another modelpin process".to_owned(),
        |t| t.trim().to_owned(),
    )
}

/// Opens the database and its trees and checks the schema version.
pub(super) fn trees(path: &Path) -> Result<Trees, StoreError> {
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
    check_schema(path, &db)?;
    Ok(trees)
}

fn check_schema(path: &Path, db: &sled::Db) -> Result<(), StoreError> {
    let key = b"schema_version";
    match db.get(key).map_err(|e| classify(path, &e))? {
        None => {
            db.insert(key, &SCHEMA_VERSION.to_be_bytes())
                .map_err(|e| classify(path, &e))?;
            db.flush().map_err(|e| classify(path, &e))?;
            Ok(())
        }
        Some(bytes) if bytes.as_ref() == SCHEMA_VERSION.to_be_bytes() => Ok(()),
        Some(bytes) => Err(StoreError::Newer {
            path: path.to_owned(),
            found: bytes.to_vec(),
        }),
    }
}

/// The remedy follows the cause: locked, full, read-only, corrupt, or another I/O failure.
fn classify(path: &Path, e: &sled::Error) -> StoreError {
    let path = path.to_owned();
    let message = e.to_string();
    let sled::Error::Io(io) = e else {
        return StoreError::Corrupt { path, message };
    };
    let locked = io.kind() == std::io::ErrorKind::WouldBlock
        || message.contains("could not acquire lock")
        || message.contains("Resource temporarily unavailable");
    if locked {
        let holder = holder_of(&path);
        return StoreError::InUse { path, holder };
    }
    match io.kind() {
        std::io::ErrorKind::StorageFull => StoreError::Full { path, message },
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
            StoreError::ReadOnly { path, message }
        }
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
            StoreError::Corrupt { path, message }
        }
        _ => StoreError::Io { path, message },
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
            .to_string();
        assert!(
            err.contains("cannot be opened") && err.contains("--reset-store"),
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
            (ErrorKind::InvalidData, "cannot be opened", true),
            (ErrorKind::NotFound, "cannot be opened", false),
        ];
        for (kind, says, reset) in cases {
            let text = classify(path, &sled::Error::Io(Error::new(kind, "x"))).to_string();
            assert!(text.contains(says), "{kind:?}: {text}");
            assert_eq!(text.contains("--reset-store"), reset, "{kind:?}: {text}");
        }
        let corrupt = sled::Error::Corruption { at: None, bt: () };
        assert!(
            classify(path, &corrupt)
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
        assert!(aside.to_string_lossy().contains(".broken-"));
    }
}
