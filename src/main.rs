//! The `modelpin` binary: parse arguments, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = modelpin::cli::Cli::parse();
    modelpin::app::run(&cli).into()
}
