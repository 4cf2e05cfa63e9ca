//! The daemon's logs: structured lines on stderr, filtered by `RUST_LOG` like every tracing
//! program, and written through the config's `Redactor`.
//!
//! Redaction happens here as well as where provider text enters because logs have sources the
//! rest of the program does not control: at `debug` or `trace` the HTTP and SMTP libraries log
//! what they send and receive. The writer masks each formatted event as a whole (the formatter
//! writes one event per call), so no secret reaches the log at any level. It also keeps each
//! event on one line: a line break inside a field (a receiver's error body, say) is written as
//! `\n`, so nothing from outside can forge a log line; without colours, other control
//! characters are escaped too.

use std::str::FromStr as _;
use std::sync::Arc;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::redact::Redactor;

/// How the log is written: `quiet` keeps only warnings and errors (unless `RUST_LOG` says
/// otherwise), `ansi` colours levels (`--color`, NO_COLOR).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub quiet: bool,
    pub ansi: bool,
}

/// Installs the subscriber. Without `RUST_LOG`, modelpin's own events at INFO (WARN with
/// `quiet`); the scheduler crate logs every job it creates at INFO, so others stay off.
pub fn init(style: Style, redactor: Redactor) {
    let Style { quiet, ansi } = style;
    let (filter, invalid) = filter(std::env::var("RUST_LOG").ok().as_deref(), quiet);
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(Scrubbed {
                    redactor: Arc::new(redactor),
                    ansi,
                })
                .with_target(false)
                .with_ansi(ansi),
        )
        .with(filter)
        .try_init();
    if let Some(why) = invalid {
        tracing::warn!(error = %why, "RUST_LOG is not a valid filter; using the default");
    }
}

/// The filter `RUST_LOG` asks for (`info`, `modelpin=debug,hyper=warn`, ...), or the default and
/// why `RUST_LOG` was refused.
fn filter(rust_log: Option<&str>, quiet: bool) -> (Targets, Option<String>) {
    let level = if quiet {
        tracing::Level::WARN
    } else {
        tracing::Level::INFO
    };
    let default = Targets::new().with_target("modelpin", level);
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => (default, None),
        Some(directives) => match Targets::from_str(directives) {
            Ok(targets) => (targets, None),
            Err(e) => (default, Some(e.to_string())),
        },
    }
}

/// Stderr, with every configured secret masked and one line per event.
struct Scrubbed {
    redactor: Arc<Redactor>,
    /// Colours are on: escape sequences are the formatter's own and stay.
    ansi: bool,
}

impl<'a> MakeWriter<'a> for Scrubbed {
    type Writer = ScrubbedWriter;

    fn make_writer(&'a self) -> ScrubbedWriter {
        ScrubbedWriter {
            redactor: self.redactor.clone(),
            ansi: self.ansi,
        }
    }
}

struct ScrubbedWriter {
    redactor: Arc<Redactor>,
    ansi: bool,
}

impl std::io::Write for ScrubbedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let masked = self.redactor.scrub_bytes(buf.to_vec());
        let line = one_line(&String::from_utf8_lossy(&masked), self.ansi);
        std::io::stderr().lock().write_all(line.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// `event` with every line break but the final one escaped (and, without colours, every other
/// character `text::needs_escape` flags).
fn one_line(event: &str, ansi: bool) -> String {
    let (body, end) = match event.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (event, ""),
    };
    let mut out = String::with_capacity(event.len());
    for c in body.chars() {
        let escape = matches!(c, '\n' | '\r') || (!ansi && crate::text::needs_escape(c));
        if escape {
            out.push_str(&crate::text::escape_char(c));
        } else {
            out.push(c);
        }
    }
    out.push_str(end);
    out
}

#[cfg(test)]
mod tests {
    use super::{filter, one_line};

    #[test]
    fn an_event_stays_one_line() {
        let event = "WARN reason=\"HTTP 500: oops\n2026-01-01 INFO forged\u{1b}[2J\"\n";
        assert_eq!(
            one_line(event, false),
            "WARN reason=\"HTTP 500: oops\\n2026-01-01 INFO forged\\u{1b}[2J\"\n"
        );
        assert_eq!(
            one_line("\u{1b}[2mINFO\u{1b}[0m x\n", true),
            "\u{1b}[2mINFO\u{1b}[0m x\n"
        );
    }
    use tracing::Level;
    use tracing_subscriber::filter::Targets;

    fn enabled(t: &Targets, target: &str, level: Level) -> bool {
        t.would_enable(target, &level)
    }

    #[test]
    fn rust_log_decides_when_set() {
        for (rust_log, quiet, target, level, want) in [
            (None, false, "modelpin::daemon", Level::INFO, true),
            (None, false, "modelpin::daemon", Level::DEBUG, false),
            (None, true, "modelpin::daemon", Level::INFO, false),
            (None, false, "tokio_cron_scheduler", Level::INFO, false),
            (Some("warn"), false, "modelpin::daemon", Level::INFO, false),
            (
                Some("modelpin=debug"),
                false,
                "modelpin::store",
                Level::DEBUG,
                true,
            ),
            (Some("modelpin=debug"), false, "hyper", Level::ERROR, false),
            (Some("trace"), false, "hyper", Level::TRACE, true),
            (Some("not a filter=="), false, "modelpin", Level::INFO, true),
        ] {
            let (t, _) = filter(rust_log, quiet);
            assert_eq!(
                enabled(&t, target, level),
                want,
                "{rust_log:?} {target} {level}"
            );
        }
        assert!(filter(Some("not a filter=="), false).1.is_some());
    }
}
