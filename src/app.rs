//! Runs one command line to an exit code; the only place that prints tool errors.

use std::io::Write as _;

use crate::cli::{Cli, Command};
use crate::cmd;

/// The tool itself failed (as opposed to a model drifting, which is a finding).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Lock(#[from] crate::lock::LockError),
    #[error("error: {0}")]
    Usage(String),
    #[error("error: {0}")]
    Io(String),
}

/// Exit code for tool failures, shared with config errors (DESIGN.md: 2 = usage or config).
pub const EXIT_TOOL_ERROR: u8 = 2;

/// Runs the command and returns the process exit code.
#[must_use]
pub fn run(cli: &Cli) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_TOOL_ERROR;
        }
    };
    let outcome = runtime.block_on(dispatch(cli));
    match outcome {
        Ok(code) => code,
        Err(error) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "{error}");
            EXIT_TOOL_ERROR
        }
    }
}

async fn dispatch(cli: &Cli) -> Result<u8, AppError> {
    let out = cmd::Output { quiet: cli.quiet };
    match &cli.command {
        Command::Init { force } => cmd::init::run(&cli.config, *force, out),
        Command::Lock { pins, samples } => cmd::lock::run(&cli.config, pins, *samples, out).await,
        Command::Check {
            pins,
            format,
            strict,
            no_probes,
        } => {
            let options = cmd::check::Options {
                pins: pins.clone(),
                format: *format,
                strict: *strict,
                no_probes: *no_probes,
            };
            cmd::check::run(&cli.config, &options, out).await
        }
        Command::Demo => cmd::demo::run(out).await,
        Command::Sim { scenario, listen } => cmd::sim::run(scenario, *listen, out).await,
    }
}
