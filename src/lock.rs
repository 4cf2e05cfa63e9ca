//! `modelpin.lock`: the recorded baseline every check is judged against.
//!
//! Written by `modelpin lock`, read by `check`. The file is pretty JSON with sorted keys and no
//! timestamps, so the same observations give the same bytes and a diff of the lock reviews well.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const LOCK_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    pub lock_version: u32,
    pub modelpin_version: String,
    pub config_digest: String,
    pub pins: BTreeMap<String, LockedPin>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedPin {
    /// Provider table name and kind at lock time.
    pub provider: String,
    pub kind: String,
    /// The requested model ID.
    pub model: String,
    /// Served IDs with how many calls each answered.
    pub served_models: BTreeMap<String, u64>,
    /// OpenRouter upstream hosts with call counts.
    pub upstreams: BTreeMap<String, u64>,
    pub system_fingerprints: Vec<String>,
    /// USD per million tokens: fitted from the provider's reported costs where it reports them,
    /// else the pin's list price; `None` when neither is known.
    pub effective_price: Option<LockedPrice>,
    pub probes: BTreeMap<String, LockedProbe>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedPrice {
    pub input: f64,
    pub output: f64,
    /// `reported` (fitted from the provider's own cost figures) or `list` (the pin's price).
    pub source: PriceSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    Reported,
    List,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedProbe {
    pub digest: String,
    pub max_tokens: u32,
    pub temperature: f64,
    /// Distinct prompt token counts seen (one, for a deterministic tokenizer).
    pub prompt_tokens: Vec<u64>,
    /// Raw outputs in sample order.
    pub outputs: Vec<String>,
    pub completion_tokens: Vec<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("error: cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "error: {path} is not a valid modelpin.lock: {message}\n  = help: `modelpin lock` records a fresh baseline; it keeps the unreadable file as {path}.unreadable-<time>"
    )]
    Invalid { path: PathBuf, message: String },
    #[error("error: cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A lock read from disk, with the digest of its bytes.
#[derive(Debug, Clone)]
pub struct LoadedLock {
    pub lock: Lock,
    pub digest: String,
}

/// Reads the lock; `Ok(None)` when the file does not exist yet.
pub fn read(path: &Path) -> Result<Option<LoadedLock>, LockError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LockError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let lock: Lock = serde_json::from_slice(&bytes).map_err(|e| LockError::Invalid {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    if lock.lock_version != LOCK_VERSION {
        return Err(LockError::Invalid {
            path: path.to_owned(),
            message: format!(
                "lock_version {} is not supported (this modelpin writes {LOCK_VERSION})",
                lock.lock_version
            ),
        });
    }
    Ok(Some(LoadedLock {
        lock,
        digest: digest(&bytes),
    }))
}

/// Moves an unreadable lock aside (`<path>.unreadable-<unix time>`) so a new one can be
/// recorded without losing the old bytes; returns where it went.
pub fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".unreadable-{stamp}"));
    let aside = PathBuf::from(aside);
    std::fs::rename(path, &aside)?;
    Ok(aside)
}

/// The exact bytes `write` puts on disk.
#[must_use]
pub fn encode(lock: &Lock) -> Vec<u8> {
    // Struct fields serialise in declaration order and maps are BTreeMaps: stable bytes.
    let text = serde_json::to_string_pretty(lock).expect("lock types always serialise");
    let mut bytes = crate::text::json_inert(text).into_bytes();
    bytes.push(b'\n');
    bytes
}

/// Writes atomically so an interrupted lock never leaves half a file: the bytes go to a new
/// temporary file created exclusively (a random name, never an existing file or a symlink to one)
/// in the lock's own directory, are synced, and the file is renamed over `path`. A symlink at
/// `path` is replaced, not followed.
pub fn write(path: &Path, lock: &Lock) -> Result<String, LockError> {
    use std::io::Write as _;
    let bytes = encode(lock);
    let fail = |source| LockError::Write {
        path: path.to_owned(),
        source,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".modelpin.lock.")
        .suffix(".tmp")
        .tempfile_in(directory_of(path))
        .map_err(fail)?;
    tmp.write_all(&bytes).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(digest(&bytes))
}

/// The directory a file named by `path` lives in (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Held by one `modelpin lock` from reading the previous lock to writing the new one, so two
/// runs at once take turns instead of one overwriting the other's baselines. An OS file lock on
/// `<lock>.guard` (released by the OS if the process dies); the guard file itself stays empty.
#[derive(Debug)]
pub struct WriterGuard {
    _file: std::fs::File,
}

impl WriterGuard {
    /// Takes the guard for `path`, calling `waiting` first when another process holds it.
    pub fn acquire(path: &Path, waiting: impl FnOnce(&Path)) -> Result<WriterGuard, LockError> {
        let guard = guard_path(path);
        let fail = |source| LockError::Write {
            path: guard.clone(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&guard)
            .map_err(fail)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                waiting(&guard);
                file.lock().map_err(fail)?;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(fail(e)),
        }
        Ok(WriterGuard { _file: file })
    }
}

/// `modelpin.lock` → `modelpin.lock.guard`.
#[must_use]
pub fn guard_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".guard");
    path.with_file_name(name)
}

#[must_use]
pub fn digest(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut text = String::from("sha256:");
    for byte in Sha256::digest(bytes) {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Lock {
        let probe = LockedProbe {
            digest: "sha256:ab".into(),
            max_tokens: 8,
            temperature: 1.0,
            prompt_tokens: vec![21],
            outputs: vec!["391".into(), "391".into()],
            completion_tokens: vec![1, 1],
        };
        let pin = LockedPin {
            provider: "openai".into(),
            kind: "openai".into(),
            model: "gpt-4o-2024-08-06".into(),
            served_models: BTreeMap::from([("gpt-4o-2024-08-06".into(), 2)]),
            upstreams: BTreeMap::new(),
            system_fingerprints: vec!["fp_1".into()],
            effective_price: Some(LockedPrice {
                input: 2.5,
                output: 10.0,
                source: PriceSource::List,
            }),
            probes: BTreeMap::from([("arith".into(), probe)]),
        };
        Lock {
            lock_version: LOCK_VERSION,
            modelpin_version: "0.1.0".into(),
            config_digest: "sha256:cd".into(),
            pins: BTreeMap::from([("b".into(), pin.clone()), ("a".into(), pin)]),
        }
    }

    #[test]
    fn round_trips_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("modelpin.lock");
        let written = write(&path, &sample()).unwrap();
        let loaded = read(&path).unwrap().unwrap();
        assert_eq!(loaded.lock, sample());
        assert_eq!(loaded.digest, written);
        assert_eq!(encode(&loaded.lock), std::fs::read(&path).unwrap());
        let text = String::from_utf8(encode(&sample())).unwrap();
        assert!(
            text.find("\"a\"").unwrap() < text.find("\"b\"").unwrap(),
            "pins sorted"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_temporary_or_the_lock_path_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let path = dir.path().join("modelpin.lock");
        std::os::unix::fs::symlink(&victim, dir.path().join("modelpin.lock.tmp")).unwrap();
        write(&path, &sample()).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!path.symlink_metadata().unwrap().is_symlink());
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        write(&path, &sample()).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!path.symlink_metadata().unwrap().is_symlink());
    }

    #[test]
    fn a_second_writer_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("modelpin.lock");
        let first = WriterGuard::acquire(&path, |_| panic!("nobody holds it")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let second = std::thread::spawn(move || {
            let _guard = WriterGuard::acquire(&path, |_| tx.send(()).unwrap()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .expect("the second writer says it waits");
        assert!(!second.is_finished());
        drop(first);
        second.join().unwrap();
    }

    #[test]
    fn missing_is_none_and_garbage_is_an_error_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(&dir.path().join("none.lock")).unwrap().is_none());
        let path = dir.path().join("bad.lock");
        std::fs::write(&path, "{ not json").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.contains("is not a valid modelpin.lock") && err.contains("modelpin lock"),
            "{err}"
        );
    }
}
