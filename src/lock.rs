//! `modelpin.lock`: the recorded baseline every check is judged against.
//!
//! Written by `modelpin lock`, read by `check`. The file is pretty JSON (fields in a fixed order,
//! map keys sorted) with no timestamps, so the same observations give the same bytes. Since
//! version 3 it holds the
//! contract first (served IDs, fingerprints, price, probe digests and prompt token counts, the
//! tiers) and the raw samples apart, compressed one line per probe (see `disk`): a re-lock
//! reviews as a short diff, and a one-probe change as a few lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Version 3 keeps the contract apart from the compressed samples; version 2 adds each pin's
/// first-token tier; version 1 locks are read as pins without it. Older versions are read and
/// written anew as version 3 by the next `modelpin lock`.
pub const LOCK_VERSION: u32 = 3;

/// Lock versions this modelpin reads.
const READS: [u32; 3] = [1, 2, 3];

mod disk;
mod recover;
pub use recover::{conflict_marker, recover};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(clippy::struct_field_names)] // `lock_version` is the file's own key
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
    /// The first-token tier's inputs and baseline; `None` when the pin has none (`tiers_missing`
    /// says why) or the lock predates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_tokens: Option<LockedFirstTokens>,
    /// Why a tier is missing for this pin, by tier (`first_tokens`, `logprobs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers_missing: BTreeMap<String, String>,
}

/// Border inputs found for a pin and what their first output token was at the lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedFirstTokens {
    /// The provider reported logprobs at the lock: audits ask for `top_logprobs` of this many
    /// tokens and run the logprob and sampling tests; 0 when it did not.
    pub top_logprobs: u8,
    /// What finding the inputs cost: candidates tried and one-token calls made.
    pub discovery: Discovery,
    /// By tier probe id (`first-token:<digest prefix>`).
    pub inputs: BTreeMap<String, LockedInput>,
    /// Tests of the tier switched off for this pin by the lock's own check, by test name
    /// (`first_tokens`, `logprobs`, `sampling`), with the reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub off: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Discovery {
    pub candidates: u32,
    pub calls: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedInput {
    pub system: Option<String>,
    pub prompt: String,
    /// The tier probe's digest (system, prompt, one token, temperature 1).
    pub digest: String,
    /// Distinct prompt token counts seen.
    pub prompt_tokens: Vec<u64>,
    /// The first token of each call, in call order.
    pub tokens: Vec<String>,
    /// Each call's reported top tokens with their logprobs, most probable first; empty lists
    /// where the provider gave none.
    pub top: Vec<Vec<(String, f64)>>,
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
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid modelpin.lock: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(
        "{path} has merge conflict markers at line {line}: resolve them (or run `modelpin lock` to record afresh)"
    )]
    Conflict { path: PathBuf, line: usize },
    #[error("{path} is not read: {why}")]
    Refused { path: PathBuf, why: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl crate::problem::Explain for LockError {
    fn help(&self) -> Option<String> {
        match self {
            LockError::Invalid { path, .. } => Some(format!(
                "`modelpin lock` records a fresh baseline; it keeps the unreadable file as {}.unreadable-<time>",
                path.display()
            )),
            LockError::Conflict { .. } => Some(
                "keep one side of each conflict (`<<<<<<<` … `=======` … `>>>>>>>`), or run `modelpin lock --pin ID` for the pins the two sides disagree on; other pins' baselines are kept".to_owned(),
            ),
            LockError::Refused { .. } => Some(
                "the lock must be a regular file; a symlink may not lead out of its directory"
                    .to_owned(),
            ),
            LockError::Read { .. } | LockError::Write { .. } => None,
        }
    }
}

/// A lock read from disk, with the digest of its bytes.
#[derive(Debug, Clone)]
pub struct LoadedLock {
    pub lock: Lock,
    pub digest: String,
}

/// Largest `modelpin.lock` read. A lock holds per probe at most `MAX_SAMPLES` answers of at most
/// `text::MAX_ANSWER_CHARS` characters; real ones are kilobytes to a few megabytes (short
/// answers to short probes). A larger file was not written by modelpin, and reading it whole
/// would cost several times its size in memory.
pub const MAX_LOCK_BYTES: u64 = 128 * 1024 * 1024;

/// Reads the lock; `Ok(None)` when the file does not exist yet. A file no modelpin could have
/// written (larger than `MAX_LOCK_BYTES`, more answers per probe than `samples` allows, answers
/// longer than the answer bound, counts past any context window) is `Invalid`, never read into
/// memory whole and never an abort.
pub fn read(path: &Path) -> Result<Option<LoadedLock>, LockError> {
    let Some(bytes) = read_bounded(path)? else {
        return Ok(None);
    };
    let invalid = |message: String| LockError::Invalid {
        path: path.to_owned(),
        message,
    };
    if let Some(line) = conflict_marker(&bytes) {
        return Err(LockError::Conflict {
            path: path.to_owned(),
            line,
        });
    }
    let lock = decode(&bytes).map_err(invalid)?;
    for (id, pin) in &lock.pins {
        within_bounds(pin).map_err(|why| invalid(format!("pin `{id}`: {why}")))?;
    }
    Ok(Some(LoadedLock {
        lock,
        digest: digest(&bytes),
    }))
}

/// The file's bytes, read under `files::read`'s rules with the lock's own directory as its
/// project (a symlinked lock may not lead out of it) and `MAX_LOCK_BYTES` as the bound.
pub(crate) fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>, LockError> {
    use crate::files::Refusal;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    match crate::files::read(path, dir, MAX_LOCK_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Refusal::Missing) => Ok(None),
        Err(Refusal::TooLarge { size, .. }) => Err(LockError::Invalid {
            path: path.to_owned(),
            message: format!(
                "it is {}more than any lock modelpin writes ({} MiB); it was not written by modelpin or was damaged",
                size.map(|n| format!("{n} bytes, ")).unwrap_or_default(),
                MAX_LOCK_BYTES / (1024 * 1024)
            ),
        }),
        Err(Refusal::Io(source)) => Err(LockError::Read {
            path: path.to_owned(),
            source,
        }),
        Err(refusal) => Err(LockError::Refused {
            path: path.to_owned(),
            why: refusal.to_string(),
        }),
    }
}

/// The lock a file's bytes stand for, in whichever version it was written.
fn decode(bytes: &[u8]) -> Result<Lock, String> {
    #[derive(Deserialize)]
    struct Head {
        lock_version: u32,
    }
    let head: Head = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    // Before anything is decompressed: a version this modelpin does not write is named as such.
    check_version(head.lock_version)?;
    if head.lock_version < 3 {
        return serde_json::from_slice(bytes).map_err(|e| e.to_string());
    }
    let file: disk::File = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    disk::join(file)
}

fn check_version(version: u32) -> Result<(), String> {
    if READS.contains(&version) {
        return Ok(());
    }
    Err(format!(
        "lock_version {version} is not supported (this modelpin writes {LOCK_VERSION})"
    ))
}

/// What no lock of ours holds: more answers or token counts per probe than `samples` can ask
/// for, an answer longer than the answer bound, a count past any context window, more distinct
/// served models, upstreams or fingerprints than calls.
pub(crate) fn within_bounds(pin: &LockedPin) -> Result<(), String> {
    let most = crate::config::MAX_SAMPLES as usize;
    let calls = most.saturating_mul(pin.probes.len().max(1));
    for (name, n) in [
        ("served_models", pin.served_models.len()),
        ("upstreams", pin.upstreams.len()),
        ("system_fingerprints", pin.system_fingerprints.len()),
    ] {
        if n > calls {
            return Err(format!("{n} {name}, more than its calls could have named"));
        }
    }
    for (probe, locked) in &pin.probes {
        let lists = [
            ("outputs", locked.outputs.len()),
            ("completion_tokens", locked.completion_tokens.len()),
            ("prompt_tokens", locked.prompt_tokens.len()),
        ];
        if let Some((name, n)) = lists.iter().find(|(_, n)| *n > most) {
            return Err(format!(
                "probe `{probe}` holds {n} {name}, more than the {most} samples a probe may have"
            ));
        }
        if let Some(long) = locked
            .outputs
            .iter()
            .map(|o| o.chars().count())
            .find(|&n| n > crate::text::MAX_ANSWER_CHARS)
        {
            return Err(format!(
                "probe `{probe}` holds an answer of {long} characters, longer than the {} modelpin keeps",
                crate::text::MAX_ANSWER_CHARS
            ));
        }
        let counts = locked.prompt_tokens.iter().chain(&locked.completion_tokens);
        if let Some(n) = counts
            .clone()
            .copied()
            .find(|&n| n > crate::provider::MAX_TOKEN_COUNT)
        {
            return Err(format!(
                "probe `{probe}` holds a token count of {n}, more than any model's context window"
            ));
        }
    }
    if let Some(tier) = &pin.first_tokens {
        first_tokens_within_bounds(tier)?;
    }
    Ok(())
}

/// What no first-token tier of ours holds: more inputs than discovery keeps, more calls per
/// input than `samples` allows, more top tokens than providers list, longer tokens or prompts
/// than modelpin keeps, probabilities that are none.
fn first_tokens_within_bounds(tier: &LockedFirstTokens) -> Result<(), String> {
    let most = crate::config::MAX_SAMPLES as usize;
    if tier.inputs.len() > crate::config::FIRST_TOKEN_INPUTS {
        return Err(format!(
            "{} first-token inputs, more than the {} modelpin keeps",
            tier.inputs.len(),
            crate::config::FIRST_TOKEN_INPUTS
        ));
    }
    for (id, input) in &tier.inputs {
        if input.tokens.len() > most || input.top.len() > most || input.prompt_tokens.len() > most {
            return Err(format!(
                "first-token input `{id}` holds more than {most} calls"
            ));
        }
        let long_prompt = input.prompt.chars().count() > crate::text::MAX_ANSWER_CHARS
            || input
                .system
                .as_ref()
                .is_some_and(|s| s.chars().count() > crate::text::MAX_ANSWER_CHARS);
        let tokens = input
            .tokens
            .iter()
            .chain(input.top.iter().flatten().map(|(t, _)| t));
        let long_token = tokens
            .clone()
            .any(|t| t.chars().count() > crate::provider::MAX_TOKEN_CHARS);
        let wide = input
            .top
            .iter()
            .any(|t| t.len() > crate::provider::MAX_TOP_LOGPROBS);
        let bad_lp = input
            .top
            .iter()
            .flatten()
            .any(|(_, lp)| !lp.is_finite() || *lp > 0.0);
        let counts = input.prompt_tokens.iter();
        let why = if long_prompt {
            "a prompt longer than modelpin keeps"
        } else if long_token {
            "a token longer than any tokenizer's"
        } else if wide {
            "more top tokens than a provider lists"
        } else if bad_lp {
            "a logprob that is no log-probability"
        } else if counts
            .copied()
            .any(|n| n > crate::provider::MAX_TOKEN_COUNT)
        {
            "a token count past any context window"
        } else {
            continue;
        };
        return Err(format!("first-token input `{id}` holds {why}"));
    }
    Ok(())
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
    let file = disk::split(lock);
    let text = serde_json::to_string_pretty(&file).expect("lock types always serialise");
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
    let mut builder = tempfile::Builder::new();
    builder.prefix(".modelpin.lock.").suffix(".tmp");
    // A lock is committed and read by others (a CI job, a container's user): readable like any
    // file the user writes (0644 less the umask), not tempfile's owner-only 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let mut tmp = builder.tempfile_in(directory_of(path)).map_err(fail)?;
    tmp.write_all(&bytes).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(digest(&bytes))
}

/// Whether `write` could write `path`: a temporary file is made beside it and removed. Run
/// before any provider call, so a lock that cannot be written costs nothing.
pub fn check_writable(path: &Path) -> Result<(), LockError> {
    tempfile::Builder::new()
        .prefix(".modelpin.lock.")
        .suffix(".tmp")
        .tempfile_in(directory_of(path))
        .and_then(tempfile::NamedTempFile::close)
        .map_err(|source| LockError::Write {
            path: path.to_owned(),
            source,
        })
}

/// The directory a file named by `path` lives in (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Held by one `modelpin lock` from reading the previous lock to writing the new one, so two
/// runs at once take turns instead of one overwriting the other's baselines: an OS lock
/// (released by the OS if the process dies) on the directory that holds the lock file. No guard
/// file is created, so there is nothing to show in `git status` and nothing planted beside the
/// lock (a symlink named like an old guard file) is ever opened, let alone followed.
#[derive(Debug)]
pub struct WriterGuard {
    _dir: std::fs::File,
}

impl WriterGuard {
    /// Takes the guard for `path`, calling `waiting` first when another process holds it.
    pub fn acquire(path: &Path, waiting: impl FnOnce(&Path)) -> Result<WriterGuard, LockError> {
        let dir = directory_of(path);
        let fail = |source| LockError::Write {
            path: dir.to_owned(),
            source,
        };
        let file = open_directory(dir).map_err(fail)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                waiting(dir);
                file.lock().map_err(fail)?;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(fail(e)),
        }
        Ok(WriterGuard { _dir: file })
    }
}

/// The directory, opened for locking only. Refused when it is not a directory (a FIFO planted
/// in its place would block the open).
fn open_directory(dir: &Path) -> std::io::Result<std::fs::File> {
    if !std::fs::metadata(dir)?.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a directory",
        ));
    }
    std::fs::File::open(dir)
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
    use crate::problem::Explain as _;

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
            first_tokens: None,
            tiers_missing: BTreeMap::new(),
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
    fn the_lock_is_readable_by_others_like_any_file_the_user_writes() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("modelpin.lock");
        write(&path, &sample()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o600, 0o600, "{mode:o}");
        assert_eq!(mode & 0o044, 0o044 & !umask(), "{mode:o}");
    }

    /// The process's umask, as Linux reports it (`Umask:` in /proc/self/status); 022 elsewhere.
    #[cfg(unix)]
    fn umask() -> u32 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|l| l.starts_with("Umask:"))?;
                u32::from_str_radix(line.trim_start_matches("Umask:").trim(), 8).ok()
            })
            .unwrap_or(0o022)
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
        let err = read(&path).unwrap_err().problem().to_string();
        assert!(
            err.contains("is not a valid modelpin.lock") && err.contains("= help: `modelpin lock`"),
            "{err}"
        );
    }
}
