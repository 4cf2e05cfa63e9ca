//! The `modelpin` binary: parse arguments, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};
use modelpin::cli::{Cli, ColorWhen};

fn main() -> ExitCode {
    // A shell asking for completions (the script `modelpin completions SHELL` prints) is
    // answered here and the process exits.
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(modelpin::cmd::manual::COMPLETE_VAR)
        .complete();
    let mut command = Cli::command();
    // `--color` decides clap's own help and errors too, so it is read before clap parses.
    if let Some(when) = ColorWhen::from_args(std::env::args_os()) {
        command = command.color(when.for_clap());
    }
    let cli = Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    modelpin::app::run(&cli).into()
}
