//! The process's signals as messages to the scheduler: SIGTERM and SIGINT stop, SIGHUP reloads.
//! The scheduler reads them from a channel like any other input, so tests drive it without
//! signalling the test process.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the scheduler is told besides which pins are due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Load pins.toml again; keep the running config when the new one is invalid.
    Reload,
    /// Stop taking work, let running audits finish within the grace period.
    Stop,
}

/// Listens for the signals (registered before this returns, so none is missed) and forwards
/// them to `control` until `stop`.
pub fn forward(
    control: mpsc::Sender<Control>,
    stop: CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let mut signals = Signals::new()?;
    Ok(tokio::spawn(async move {
        loop {
            let signal = tokio::select! {
                signal = signals.next() => signal,
                () = stop.cancelled() => return,
            };
            if control.send(signal).await.is_err() {
                return;
            }
        }
    }))
}

struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    #[cfg(not(unix))]
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {})
    }

    async fn next(&mut self) -> Control {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => Control::Stop,
                _ = self.term.recv() => Control::Stop,
                _ = self.hup.recv() => Control::Reload,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            Control::Stop
        }
    }
}
