//! The one error type of the commands: the tool itself failed (as opposed to a model drifting,
//! which is a finding). `app` prints it (`render`) and maps it to the exit code; each command
//! only returns it.

use crate::problem::{Explain, Problem};

/// The tool itself failed (as opposed to a model drifting, which is a finding).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Lock(#[from] crate::lock::LockError),
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Audit(#[from] crate::audit::plan::AuditError),
    #[error("{0}")]
    Daemon(#[from] crate::daemon::DaemonError),
    /// A file, socket or signal the command needed failed; the OS error is its source.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// Something else the command needed failed, said in words.
    #[error("{0}")]
    Failed(String),
    /// Said with what is known about it and what to do.
    #[error("{}", .0.message)]
    Explained(Problem),
}

impl AppError {
    /// `context` (what was being done) failed with the OS error `source`.
    #[must_use]
    pub fn io(context: impl Into<String>, source: std::io::Error) -> AppError {
        AppError::Io {
            context: context.into(),
            source,
        }
    }

    /// As the user reads it, the one way every command's error is shown: a config's own
    /// diagnostics (they point at file, line and column), else `error:`, notes and help.
    #[must_use]
    pub fn render(&self) -> String {
        match self {
            AppError::Config(e) => e.to_string(),
            AppError::Daemon(e) => e.render(),
            AppError::Lock(e) => e.problem().to_string(),
            AppError::Store(e) => e.problem().to_string(),
            AppError::Audit(e) => e.problem().to_string(),
            AppError::Usage(message) | AppError::Failed(message) => {
                Problem::new(message.as_str()).to_string()
            }
            AppError::Io { .. } => Problem::new(self.to_string()).to_string(),
            AppError::Explained(problem) => problem.to_string(),
        }
    }
}
