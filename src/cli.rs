//! Command-line definitions. The doc comments are the `--help` text.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Keeps LLM model IDs honest: notices when a pinned model is retired, rerouted or silently
/// swapped for another.
#[derive(Debug, Parser)]
#[command(name = "modelpin", version, propagate_version = true)]
pub struct Cli {
    /// Path of pins.toml.
    #[arg(
        long,
        global = true,
        env = "MODELPIN_CONFIG",
        default_value = "pins.toml"
    )]
    pub config: PathBuf,

    /// Print nothing on stderr but errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Show every line of each finding's evidence.
    #[arg(short, long, global = true)]
    pub verbose: bool,

    /// When to colour output: `auto` colours a terminal unless NO_COLOR is set.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented pins.toml and example probes into the config's directory.
    Init {
        /// Overwrite files that already exist.
        #[arg(long)]
        force: bool,
        /// Write a pin for every model ID `modelpin scan` finds used in the config's directory.
        #[arg(long)]
        from_scan: bool,
        /// With --from-scan: also pin IDs used only in test files (tests/, test_*.py, *.spec.ts, ...).
        #[arg(long, requires = "from_scan")]
        include_tests: bool,
    },
    /// Call each pin's probes and record what it serves into modelpin.lock.
    Lock(LockArgs),
    /// Audit every pin once against modelpin.lock. Exit 0 ok, 1 drift, 2 usage or config
    /// error, 3 inconclusive.
    Check(CheckArgs),
    /// Audit every pin on its cron schedule, keep history in the store, serve /metrics and
    /// /healthz. SIGTERM/SIGINT stop it cleanly; SIGHUP reloads pins.toml.
    Daemon {
        /// When the store is refused as damaged (or from a newer modelpin), move it aside, byte
        /// for byte, to `<store>.damaged-<UTC time>` and start a new one; an intact store is kept.
        #[arg(long)]
        reset_store: bool,
        /// Audit only the pins whose id matches GLOB (repeatable), to split pins across daemons.
        #[arg(long = "pins", value_name = "GLOB")]
        pins: Vec<String>,
    },
    /// Judge an exported OTLP/JSON file of GenAI spans against the pins: same findings, formats
    /// and exit codes as `check`, no provider called.
    Traffic {
        /// An OTLP/JSON `ExportTraceServiceRequest`, or one per line.
        file: PathBuf,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Warnings fail too (exit 1).
        #[arg(long)]
        strict: bool,
    },
    /// Alert channels.
    Alerts {
        #[command(subcommand)]
        command: AlertsCommand,
    },
    /// Lifecycle of each pinned model: retirement date, days left, replacement and every source
    /// (built-in table, feeds, `retires_on`). Exit 0 ok, 1 a listed pin is retired by the
    /// provider's own word (with --strict also by a third party's, or retiring inside a
    /// `warn_before` window), 2 usage or config error; --data exits 0.
    Deprecations(DeprecationsArgs),
    /// The store itself: copy one into another (sled directory or PostgreSQL, either way).
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Show recent audits from the store (works while the daemon runs).
    History {
        /// Only this pin.
        #[arg(long = "pin", value_name = "ID", add = clap_complete::engine::ArgValueCompleter::new(pin_ids))]
        pin: Option<String>,
        /// How far back, e.g. `7d`, `12h`.
        #[arg(long, default_value = "7d")]
        since: String,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = ListFormat::Human)]
        format: ListFormat,
    },
    /// Find the model IDs written in a source tree (gitignore-aware) and judge each against the
    /// lifecycle table, the pins and the lock. Works without pins.toml. Exit 0 ok, 1 a retired ID
    /// is used (or any warning, with --strict), 2 usage or config error, 3 a path could not be read.
    Scan {
        /// Files or directories to scan [default: .]
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = ScanFormat::Human)]
        format: ScanFormat,
        /// Warnings fail the scan too (exit 1).
        #[arg(long)]
        strict: bool,
        /// Report only findings at this level or above, in every format (and exit on them alone)
        /// [default: `[scan] min_level` of pins.toml, else info]
        #[arg(long, value_enum, value_name = "LEVEL")]
        min_level: Option<Level>,
        /// Print the replacements for retired and retiring IDs as a patch; no file is edited.
        #[arg(long, visible_alias = "suggest")]
        fix: bool,
        /// Scan only files matching this glob (repeatable, gitignore syntax).
        #[arg(long, value_name = "GLOB")]
        include: Vec<String>,
        /// Skip files matching this glob (repeatable, gitignore syntax).
        #[arg(long, value_name = "GLOB")]
        exclude: Vec<String>,
        /// Scan hidden files and directories too.
        #[arg(long)]
        hidden: bool,
        /// Ignore .gitignore and .ignore files and scan vendored directories (node_modules, ...).
        #[arg(long)]
        no_ignore: bool,
        /// Skip test files, as `init --from-scan` does: those under a directory named tests, test,
        /// __tests__, spec, specs, testdata or testing, and files named test_*, *_test.*,
        /// *_spec.*, *.test.*, *.spec.* or conftest.py (below the paths given).
        #[arg(long)]
        exclude_tests: bool,
        /// Skip files larger than this, counted in the summary.
        #[arg(long, value_name = "SIZE", default_value = "10M", value_parser = parse_size)]
        max_filesize: u64,
    },
    /// Print a completion script for SHELL on stdout, e.g. `source <(modelpin completions bash)`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff) on stdout, e.g. `modelpin man | man -l -`, `modelpin man check`.
    Man {
        /// The command whose page to print (`check`, `alerts-test`, ...); modelpin(1) without.
        #[arg(value_name = "COMMAND", conflicts_with_all = ["all", "out_dir"])]
        command: Option<String>,
        /// Print every page, modelpin(1) first.
        #[arg(long, conflicts_with = "out_dir")]
        all: bool,
        /// Write every page into DIR as modelpin.1, modelpin-check.1, ... (for installing).
        #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
        out_dir: Option<PathBuf>,
    },
    /// Run the whole product on a built-in simulated provider: lock, a silent reroute, and the
    /// check that catches it. No network, no keys.
    #[command(after_help = DEMO_SERVE_HELP)]
    Demo {
        /// Write the demo's project (pins.toml, probes/, modelpin.lock) into DIR and keep it,
        /// instead of a temporary directory removed at the end.
        #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
        keep: Option<PathBuf>,
        /// Keep the simulated provider serving the locked demo project on 127.0.0.1 until Ctrl-C
        /// or SIGTERM, with runtime switches under /_sim (see below).
        #[arg(long)]
        serve: bool,
        /// With --serve: the loopback port to listen on (0: one the system picks).
        #[arg(long, value_name = "N", default_value_t = 0, requires = "serve")]
        port: u16,
    },
    /// Serve a simulated provider scenario on loopback (for benchmarks and manual testing).
    #[command(hide = true)]
    Sim {
        /// Scenario file (JSON).
        #[arg(long)]
        scenario: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
    },
}

/// `modelpin demo --help`: what `--serve` keeps running and the switches it answers.
const DEMO_SERVE_HELP: &str = "\
With --serve the simulated provider keeps running: the demo project is locked against it, and
switches change what it does while you try `check`, `daemon` and alerts from another terminal:

  curl -X POST 'http://127.0.0.1:PORT/_sim/ACTION?model=ID'

  swap    another model answers ID and names itself in the body (to=MODEL chooses it)
  mask    another model answers ID behind the ID itself (to=MODEL chooses it)
  retire  ID answers \"model not found\"
  slow    ID answers after ms=N milliseconds (default 6000: past the demo's 5 s timeout)
  fail    ID answers status=500|429|503 (default 500)
  reset   ID is back as locked

slow, fail and reset without model= apply to every ID; `curl http://127.0.0.1:PORT/_sim` shows
the state as JSON. The switches listen on loopback only.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
    /// JUnit XML: one testsuite per pin, one testcase per check.
    Junit,
    /// GitHub Actions workflow commands (annotations), plus a Markdown job summary.
    Github,
}

/// `--color`: whether escape sequences for colour may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless the NO_COLOR variable is set to anything but the empty string.
    Auto,
    /// Always, even into a file or a pipe (NO_COLOR included).
    Always,
    Never,
}

impl ColorWhen {
    /// Whether to colour a stream that is (or is not) a terminal, given NO_COLOR's value
    /// (<https://no-color.org>: set and not empty turns colour off).
    #[must_use]
    pub fn colours(self, terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => terminal && no_color.is_none_or(std::ffi::OsStr::is_empty),
        }
    }

    /// clap's choice for its own help and error messages; `auto` leaves clap's own detection
    /// (a terminal, NO_COLOR) as it is.
    #[must_use]
    pub fn for_clap(self) -> clap::ColorChoice {
        match self {
            ColorWhen::Auto => clap::ColorChoice::Auto,
            ColorWhen::Always => clap::ColorChoice::Always,
            ColorWhen::Never => clap::ColorChoice::Never,
        }
    }

    /// The `--color` given on a command line, read before clap parses it so that clap's own help
    /// and errors follow it too: the last one wins, nothing after `--` counts, and a value that
    /// is not a choice is left for clap to refuse.
    #[must_use]
    pub fn from_args<I, S>(args: I) -> Option<ColorWhen>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut found = None;
        let mut args = args.into_iter().skip(1);
        while let Some(arg) = args.next() {
            let Some(arg) = arg.as_ref().to_str() else {
                continue;
            };
            let value = match arg {
                "--" => break,
                "--color" => args
                    .next()
                    .and_then(|v| v.as_ref().to_str().map(str::to_owned)),
                _ => arg.strip_prefix("--color=").map(str::to_owned),
            };
            if let Some(when) = value.and_then(|v| ColorWhen::from_str(&v, false).ok()) {
                found = Some(when);
            }
        }
        found
    }

    /// Whether to colour stderr.
    #[must_use]
    pub fn stderr(self) -> bool {
        use std::io::IsTerminal as _;
        self.colours(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        )
    }
}

pub use crate::severity::Severity as Level;

/// Formats of `scan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScanFormat {
    /// Grouped by ID, most urgent first.
    Human,
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitHub Actions workflow commands (annotations at each line).
    Github,
}

/// Formats of the listing commands (`history`, `deprecations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Human,
    Json,
}

fn positive_usd(text: &str) -> Result<f64, String> {
    match text.trim_start_matches('$').parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{text}` is not a positive amount of USD")),
    }
}

/// A probability strictly between 0 and 1.
fn p_level(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "`{text}` is not a probability between 0 and 1 (e.g. 1.4e-5)"
        )),
    }
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy history, alert state and the outbox from SRC into the empty store DST, then
    /// verify DST holds as many of each; a store is a directory (sled) or a `postgres://` URL
    /// (password from PGPASSWORD). Stop the daemons on both first.
    Copy {
        /// The store to copy from.
        src: String,
        /// The store to copy into; must be empty.
        dst: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AlertsCommand {
    /// Send a clearly marked test notification through each channel; exit 1 if any failed.
    Test {
        /// Only this channel.
        #[arg(long, value_name = "NAME")]
        channel: Option<String>,
    },
}

/// `modelpin deprecations`'s options.
#[derive(Debug, clap::Args)]
pub struct DeprecationsArgs {
    /// Only pins retired already or retiring within this window, e.g. `90d`.
    #[arg(long, value_name = "DURATION")]
    pub within: Option<String>,
    /// Print the built-in lifecycle table instead (judges no pin: exit 0).
    #[arg(long)]
    pub data: bool,
    /// A pin retiring inside a `warn_before` window, or retired by third-party sources only,
    /// fails too (exit 1).
    #[arg(long, conflicts_with = "data")]
    pub strict: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    pub format: ListFormat,
}

/// `modelpin lock`'s options.
#[derive(Debug, Default, clap::Args)]
pub struct LockArgs {
    /// Lock only these pins (repeatable); the others keep their recorded baseline.
    #[arg(long = "pin", value_name = "ID", add = clap_complete::engine::ArgValueCompleter::new(pin_ids))]
    pub pins: Vec<String>,
    /// Samples per probe, overriding each pin's `samples`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub samples: Option<u32>,
    /// Stop calling once this many USD are spent (over `settings.max_cost_usd`).
    #[arg(long, value_name = "USD", value_parser = positive_usd)]
    pub max_cost: Option<f64>,
    /// Start a large plan without asking on a terminal.
    #[arg(long)]
    pub yes: bool,
}

/// `modelpin check`'s options (flags are independent switches, hence the bools).
#[derive(Debug, clap::Args)]
#[allow(clippy::struct_excessive_bools)]
pub struct CheckArgs {
    /// Check only these pins (repeatable).
    #[arg(long = "pin", value_name = "ID", add = clap_complete::engine::ArgValueCompleter::new(pin_ids))]
    pub pins: Vec<String>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Warnings fail the check too (exit 1).
    #[arg(long)]
    pub strict: bool,
    /// One call per probe: identity, tokenizer and price only.
    #[arg(long)]
    pub no_probes: bool,
    /// Send alert notifications through the configured channels (same outbox and dedup as
    /// the daemon, via the store).
    #[arg(long)]
    pub notify: bool,
    /// Stop calling once this many USD are spent (over `settings.max_cost_usd`); the rest is
    /// inconclusive.
    #[arg(long, value_name = "USD", value_parser = positive_usd)]
    pub max_cost: Option<f64>,
    /// Write the report in `--format` to FILE; the human table still goes to stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Resolve the behaviour tests' adjusted p-values down to P as well as `alpha` (the
    /// daemon's own look at a late audit: 1.4e-5 at the defaults). The verdict stays at
    /// `alpha`; a changed pin's tests run more permutations.
    #[arg(long, value_name = "P", value_parser = p_level)]
    pub resolve: Option<f64>,
    /// Start a large plan without asking on a terminal.
    #[arg(long)]
    pub yes: bool,
}

/// Parses `10M`, `512K`, `1G` or a plain byte count.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let scale: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" => 1 << 10,
        "M" | "MB" => 1 << 20,
        "G" | "GB" => 1 << 30,
        _ => return Err(format!("`{text}` is not a size like 10M, 512K or 1G")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{text}` is not a size like 10M, 512K or 1G"))
}

/// The pin ids of the pins.toml a command would read (`$MODELPIN_CONFIG`, else ./pins.toml),
/// for `--pin <TAB>`; nothing when it cannot be read. Only the `[[pin]]` ids are read: a file
/// that does not load yet (a key variable unset) still completes.
#[must_use]
pub fn pin_ids(current: &std::ffi::OsStr) -> Vec<clap_complete::engine::CompletionCandidate> {
    let path = std::env::var_os("MODELPIN_CONFIG")
        .filter(|p| !p.is_empty())
        .map_or_else(
            || std::path::PathBuf::from("pins.toml"),
            std::path::PathBuf::from,
        );
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let Ok(doc) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let prefix = current.to_string_lossy();
    doc.get("pin")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|pin| {
            let id = pin.get("id")?.as_str()?;
            let model = pin.get("model").and_then(toml::Value::as_str);
            Some((id, model))
        })
        .filter(|(id, _)| id.starts_with(prefix.as_ref()))
        .map(|(id, model)| {
            clap_complete::engine::CompletionCandidate::new(id)
                .help(model.map(|m| m.to_owned().into()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::{ColorWhen, parse_size};

    #[test]
    fn the_color_flag_is_found_before_clap_parses() {
        for (args, want) in [
            (&["modelpin", "check"][..], None),
            (
                &["modelpin", "--color", "never", "check"],
                Some(ColorWhen::Never),
            ),
            (
                &["modelpin", "check", "--color=always"],
                Some(ColorWhen::Always),
            ),
            (
                &["modelpin", "--color", "never", "check", "--color", "auto"],
                Some(ColorWhen::Auto),
            ),
            (&["modelpin", "--color", "sometimes"], None),
            (&["modelpin", "--color"], None),
            (&["modelpin", "scan", "--", "--color=never"], None),
            (&["--color=never"], None),
        ] {
            assert_eq!(ColorWhen::from_args(args), want, "{args:?}");
        }
    }

    #[test]
    fn colour_follows_the_flag_then_no_color_then_the_terminal() {
        let set = Some(OsStr::new("1"));
        let empty = Some(OsStr::new(""));
        for (when, terminal, no_color, want) in [
            (ColorWhen::Auto, true, None, true),
            (ColorWhen::Auto, false, None, false),
            (ColorWhen::Auto, true, set, false),
            (ColorWhen::Auto, true, empty, true),
            (ColorWhen::Always, false, set, true),
            (ColorWhen::Never, true, None, false),
        ] {
            assert_eq!(
                when.colours(terminal, no_color),
                want,
                "{when:?} terminal={terminal} NO_COLOR={no_color:?}"
            );
        }
    }

    #[test]
    fn sizes() {
        for (text, want) in [
            ("10M", Some(10 << 20)),
            ("512k", Some(512 << 10)),
            ("7", Some(7)),
            ("1G", Some(1 << 30)),
            ("x", None),
            ("10T", None),
            ("99999999999999999999G", None),
        ] {
            assert_eq!(parse_size(text).ok(), want, "{text}");
        }
    }
}
