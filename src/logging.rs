//! The daemon's logs: structured lines on stderr, filtered by `RUST_LOG` like every tracing
//! program, and written through the config's `Redactor`.
//!
//! Redaction happens here as well as where provider text enters because logs have sources the
//! rest of the program does not control: at `debug` or `trace` the HTTP and SMTP libraries log
//! what they send and receive. The writer masks each formatted event as a whole (the formatter
//! writes one event per call), so no secret reaches the log at any level.

use std::str::FromStr as _;
use std::sync::Arc;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::redact::Redactor;

/// Installs the subscriber. Without `RUST_LOG`, modelpin's own events at INFO (WARN with
/// `quiet`); the scheduler crate logs every job it creates at INFO, so others stay off.
pub fn init(quiet: bool, redactor: Redactor) {
    use std::io::IsTerminal as _;
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let (filter, invalid) = filter(std::env::var("RUST_LOG").ok().as_deref(), quiet);
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(Scrubbed(Arc::new(redactor)))
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

/// Stderr, with every configured secret masked.
struct Scrubbed(Arc<Redactor>);

impl<'a> MakeWriter<'a> for Scrubbed {
    type Writer = ScrubbedWriter;

    fn make_writer(&'a self) -> ScrubbedWriter {
        ScrubbedWriter(self.0.clone())
    }
}

struct ScrubbedWriter(Arc<Redactor>);

impl std::io::Write for ScrubbedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let masked = self.0.scrub_bytes(buf.to_vec());
        std::io::stderr().lock().write_all(&masked)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::filter;
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
