//! Runs one command line to an exit code; the only place that prints tool errors.

use std::io::Write as _;

use crate::cli::{Cli, Command};
use crate::cmd::{self, AppError};
use crate::exit::Exit;

/// Runs the command and returns the process's exit code.
#[must_use]
pub fn run(cli: &Cli) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!(
                "{}",
                crate::problem::Problem::new(format!("cannot start the async runtime: {e}"))
            );
            return Exit::Error;
        }
    };
    let outcome = runtime.block_on(dispatch(cli));
    match outcome {
        Ok(code) => code,
        Err(error) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "{}", error.render());
            Exit::Error
        }
    }
}

async fn dispatch(cli: &Cli) -> Result<Exit, AppError> {
    let out = cmd::Output {
        quiet: cli.quiet,
        verbose: cli.verbose,
    };
    match &cli.command {
        Command::Init {
            force,
            from_scan: false,
            ..
        } => cmd::init::run(&cli.config, *force, out),
        Command::Init {
            force,
            from_scan: true,
            include_tests,
        } => cmd::init_scan::run(&cli.config, *force, *include_tests, out),
        Command::Scan {
            paths,
            format,
            strict,
            min_level,
            fix,
            include,
            exclude,
            hidden,
            no_ignore,
            exclude_tests,
            max_filesize,
        } => {
            let options = cmd::scan::Options {
                walk: crate::scan::Options {
                    paths: cmd::scan::paths_or_here(paths),
                    include: include.clone(),
                    exclude: exclude.clone(),
                    hidden: *hidden,
                    no_ignore: *no_ignore,
                    exclude_tests: *exclude_tests,
                    max_filesize: *max_filesize,
                    own_files: Vec::new(),
                },
                format: *format,
                strict: *strict,
                min_level: *min_level,
                fix: *fix,
            };
            cmd::scan::run(&cli.config, config_named(cli), &options, out)
        }
        Command::Lock(args) => cmd::lock::run(&cli.config, args, out).await,
        Command::Check(args) => cmd::check::run(&cli.config, args, out).await,
        Command::Daemon { reset_store, pins } => {
            let log = crate::logging::Style {
                quiet: cli.quiet,
                ansi: cli.color.stderr(),
            };
            Ok(crate::daemon::run(&cli.config, *reset_store, pins, log).await?)
        }
        Command::Store {
            command: crate::cli::StoreCommand::Copy { src, dst },
        } => cmd::store::copy(src, dst, out).await,
        Command::History { pin, since, format } => {
            cmd::history::run(&cli.config, pin.as_deref(), since, *format).await
        }
        Command::Deprecations(args) => cmd::deprecations::run(&cli.config, args, out).await,
        Command::Alerts {
            command: crate::cli::AlertsCommand::Test { channel },
        } => cmd::alerts::test(&cli.config, channel.as_deref(), out).await,
        Command::Traffic {
            file,
            format,
            strict,
        } => cmd::traffic::run(&cli.config, file, *format, *strict, out),
        Command::Completions { shell } => cmd::manual::completions(*shell),
        Command::Man {
            command,
            all,
            out_dir,
        } => cmd::manual::man(command.as_deref(), *all, out_dir.as_deref()),
        Command::Demo { keep, serve, port } => {
            cmd::demo::start(out, keep.as_deref(), *serve, *port).await
        }
        Command::Sim { scenario, listen } => cmd::sim::run(scenario, *listen, out).await,
    }
}

/// Whether pins.toml was named (`--config` or `MODELPIN_CONFIG`) rather than taken by default:
/// `scan` works without one only at the default path.
fn config_named(cli: &Cli) -> bool {
    cli.config != std::path::Path::new("pins.toml") || std::env::var_os("MODELPIN_CONFIG").is_some()
}
