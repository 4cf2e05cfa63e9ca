//! Why the store cannot be used, in terms of what to do next, and who holds it.
//!
//! A full disk, a read-only mount, another process holding the store and a corrupt database need
//! different remedies; moving the store aside (`--reset-store`) helps only the last one (and a
//! store from a newer modelpin, for whoever would rather start over) and would throw a healthy
//! history away in the others.

use std::path::PathBuf;

use crate::store::{HEADER_FORMAT, SCHEMA_VERSION};

/// Who opened the store: left with it, so a refusal can name the holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    Daemon,
    CheckNotify,
    History,
    Copy,
}

impl Holder {
    const ALL: [Holder; 4] = [
        Holder::Daemon,
        Holder::CheckNotify,
        Holder::History,
        Holder::Copy,
    ];

    /// The holder a holder file names (`as_str`, then the pid), when it names one.
    #[must_use]
    pub(crate) fn named_in(text: &str) -> Option<Holder> {
        Holder::ALL
            .into_iter()
            .find(|holder| text.starts_with(holder.as_str()))
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Holder::Daemon => "a modelpin daemon",
            Holder::CheckNotify => "`modelpin check --notify`",
            Holder::History => "`modelpin history`",
            Holder::Copy => "`modelpin store copy`",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the store at {path} is in use by {holder}")]
    InUse {
        path: PathBuf,
        /// As the holder file says it (with the pid), or "another modelpin process".
        holder: String,
        by: Option<Holder>,
    },
    #[error("the store at {path} cannot be written: the disk is full ({message})")]
    Full { path: PathBuf, message: String },
    #[error("the store at {path} cannot be written: read-only or not permitted ({message})")]
    ReadOnly { path: PathBuf, message: String },
    #[error(
        "the store at {path} was written by a newer modelpin ({found}; this one reads schema version {SCHEMA_VERSION}, header format {HEADER_FORMAT}); it is left as it is"
    )]
    Newer { path: PathBuf, found: String },
    /// Damage found before or while the store was opened: its files changed since it was closed,
    /// its header or database file is missing, its counts disagree, or sled failed reading it.
    #[error("the store at {path} is damaged: {message}; it is left as it is")]
    Corrupt { path: PathBuf, message: String },
    /// A PostgreSQL store whose schema a newer modelpin wrote.
    #[error(
        "the store at {at} has schema version {found}, newer than this modelpin knows (it reads and migrates up to schema version {known}); it is left as it is"
    )]
    NewerSchema { at: String, found: i32, known: i32 },
    /// A write by a daemon that does not hold the fleet's lease (any more): refused in its own
    /// transaction, nothing written.
    #[error(
        "the store at {at} refused a write: this daemon does not hold the fleet's lease (another daemon leads)"
    )]
    Deposed { at: String },
    #[error("the store at {path} cannot be opened: {message}")]
    Io {
        path: PathBuf,
        message: String,
        /// What to do, when the kind of failure says so (PostgreSQL's, by SQLSTATE).
        help: Option<String>,
    },
    #[error("store write failed at {path}: {message}")]
    Write { path: PathBuf, message: String },
    /// An outbox entry changed between being read and being rewritten (a delivery finished, or
    /// another verdict of the same pin superseded it): the commit wrote nothing and is prepared
    /// again from what is stored now.
    #[error("the outbox at {path} changed while a commit was prepared")]
    Conflict { path: PathBuf },
}

impl StoreError {
    /// Whether `--reset-store` is the way out: a damaged store, or one from a newer modelpin.
    #[must_use]
    pub fn wants_reset(&self) -> bool {
        matches!(self, StoreError::Corrupt { .. } | StoreError::Newer { .. })
    }
}

impl crate::problem::Explain for StoreError {
    fn help(&self) -> Option<String> {
        let reset = |path: &PathBuf| {
            format!(
                "`modelpin daemon --reset-store` to move it aside (kept, byte for byte, as {}.damaged-<UTC time>) and start a new, empty one",
                path.display()
            )
        };
        Some(match self {
            StoreError::InUse { by, .. } => in_use_help(*by).to_owned(),
            StoreError::Full { .. } => {
                "free space on that filesystem; the store itself is intact".to_owned()
            }
            StoreError::ReadOnly { .. } => {
                "give this user write access, or point `store` in [settings] at a writable directory".to_owned()
            }
            StoreError::Newer { path, .. } => {
                format!("run the modelpin version that wrote it, or {}", reset(path))
            }
            StoreError::Corrupt { path, .. } => {
                format!("run {}, or restore the store from a backup", reset(path))
            }
            StoreError::NewerSchema { .. } => {
                "run the modelpin version that wrote it (every daemon of a fleet on the same version), or point `store` at another database".to_owned()
            }
            StoreError::Io { help, .. } => return help.clone(),
            StoreError::Deposed { .. } | StoreError::Write { .. } | StoreError::Conflict { .. } => {
                return None;
            }
        })
    }
}

fn in_use_help(by: Option<Holder>) -> &'static str {
    if by == Some(Holder::CheckNotify) {
        "it releases the store when its deliveries finish (at most 30 s); start the daemon after it, or give CI its own `store`"
    } else {
        "stop the other process, or give this one its own `store` in [settings]"
    }
}
