//! One module per subcommand; each returns the process exit code or an `AppError`.

pub mod alerts;
pub mod check;
pub mod demo;
pub mod deprecations;
pub mod history;
pub mod init;
pub mod init_scan;
pub mod lock;
pub mod progress;
pub mod scan;
pub mod sim;

use tokio_util::sync::CancellationToken;

use crate::app::AppError;
use crate::config::{Config, Pin, Probe};
use crate::transport::{DEFAULT_BODY_CAP, Transport, TransportLimits};

/// Where progress goes: stderr, unless `--quiet`.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub quiet: bool,
}

impl Output {
    pub fn progress(self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

/// The pins named on the command line, in config order; all when none are named.
pub fn select_pins<'a>(config: &'a Config, ids: &[String]) -> Result<Vec<&'a Pin>, AppError> {
    for id in ids {
        if !config.pins.iter().any(|p| &p.id == id) {
            let known: Vec<&str> = config.pins.iter().map(|p| p.id.as_str()).collect();
            return Err(AppError::Usage(format!(
                "no pin `{id}` in {}; pins are: {}",
                config.path.display(),
                known.join(", ")
            )));
        }
    }
    Ok(config
        .pins
        .iter()
        .filter(|p| ids.is_empty() || ids.contains(&p.id))
        .collect())
}

/// The probes a pin uses, in its order.
#[must_use]
pub fn probes_of<'a>(config: &'a Config, pin: &Pin) -> Vec<&'a Probe> {
    pin.probes
        .iter()
        .filter_map(|id| config.probes.iter().find(|p| &p.id == id))
        .collect()
}

pub fn transport_for(config: &Config) -> Result<Transport, AppError> {
    let limits = TransportLimits {
        timeout: config.settings.timeout,
        connect_timeout: config
            .settings
            .timeout
            .min(std::time::Duration::from_secs(10)),
        body_cap: DEFAULT_BODY_CAP,
        concurrency: config.settings.concurrency,
    };
    let providers: Vec<(String, usize)> = config
        .providers
        .iter()
        .map(|p| (p.name.clone(), p.concurrency))
        .collect();
    Transport::new(limits, &providers).map_err(|f| AppError::Io(f.message))
}

/// "N calls planned (about T tokens)": what an audit will spend, said before it starts.
#[must_use]
pub fn plan_line(config: &Config, pins: &[&Pin], samples: Option<u32>) -> String {
    let (mut calls, mut tokens, mut usd, mut unpriced) = (0u64, 0u64, 0.0, 0usize);
    for pin in pins {
        let n = u64::from(samples.unwrap_or(pin.samples));
        for probe in probes_of(config, pin) {
            let prompt_chars = probe.prompt.chars().count()
                + probe.system.as_ref().map_or(0, |s| s.chars().count());
            // About four characters per token for English text, plus the chat template.
            let input = (prompt_chars as u64).div_ceil(4) + 8;
            let output = u64::from(probe.max_tokens);
            calls += n;
            tokens += n * (input + output);
            if let Some(p) = pin.price {
                usd += n as f64 * (input as f64 * p.input + output as f64 * p.output) / 1e6;
            }
        }
        unpriced += usize::from(pin.price.is_none());
    }
    let cost = match unpriced {
        0 => format!(", at most about ${usd:.4}"),
        n if n == pins.len() => String::new(),
        n => format!(
            ", at most about ${usd:.4} for the {} priced pins",
            pins.len() - n
        ),
    };
    format!(
        "{} pin{}: {calls} calls planned (at most about {tokens} tokens{cost})",
        pins.len(),
        if pins.len() == 1 { "" } else { "s" }
    )
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

#[must_use]
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
