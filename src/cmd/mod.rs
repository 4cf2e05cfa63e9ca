//! One module per subcommand: parse its options, call the core, render. Each returns the
//! process's `Exit` or an `AppError`.

pub mod alerts;
pub mod check;
pub mod demo;
pub mod deprecations;
pub mod history;
pub mod init;
pub mod lock;
pub mod progress;
pub mod sim;

use tokio_util::sync::CancellationToken;

use crate::app::AppError;
use crate::config::Config;
use crate::transport::Transport;

/// Where progress goes: stderr, unless `--quiet`.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub quiet: bool,
}

impl Output {
    /// One line on stderr, control characters escaped: progress carries provider text (served
    /// IDs, refusal messages) and none of it may steer the terminal or start a line.
    pub fn progress(self, line: &str) {
        if !self.quiet {
            eprintln!("{}", crate::text::terminal(line));
        }
    }
}

/// The one transport of a command, as the config asks for it.
pub fn transport_for(config: &Config) -> Result<Transport, AppError> {
    Transport::for_config(config).map_err(|f| AppError::Io(f.message))
}

/// A token cancelled by Ctrl-C or SIGTERM: the audit drops in-flight calls and reports them as
/// cancelled instead of dying with nothing printed.
#[must_use]
pub fn interrupt_token(out: Output) -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        out.progress("interrupted: cancelling calls in flight");
        cancel.cancel();
    });
    token
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Writes results to stdout. A reader that went away (`modelpin check | head`) is not an error
/// worth a panic: the rest of the output is dropped quietly.
pub fn emit(text: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}
