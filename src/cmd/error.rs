//! The one error type of the commands: the tool itself failed (as opposed to a model drifting,
//! which is a finding). `app` prints it and maps it to the exit code; each command only returns it.

/// The tool itself failed (as opposed to a model drifting, which is a finding).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Lock(#[from] crate::lock::LockError),
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("error: {0}")]
    Usage(String),
    #[error("error: {0}")]
    Audit(#[from] crate::audit::plan::AuditError),
    #[error("{0}")]
    Daemon(#[from] crate::daemon::DaemonError),
    #[error("error: {0}")]
    Io(String),
}
