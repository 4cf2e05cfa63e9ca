//! `modelpin completions SHELL` and `modelpin man`: generated from the same clap definitions as
//! `--help`, so they cannot fall behind the commands they describe.

use std::io::Write as _;

use clap::CommandFactory as _;

use crate::cli::Cli;
use crate::cmd::AppError;
use crate::exit::Exit;

/// The completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<Exit, AppError> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "modelpin", &mut script);
    write_out(&script)
}

/// The manual page, roff, on stdout.
pub fn man() -> Result<Exit, AppError> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| AppError::Io(format!("cannot render the manual page: {e}")))?;
    write_out(&page)
}

fn write_out(bytes: &[u8]) -> Result<Exit, AppError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|e| AppError::Io(format!("cannot write to stdout: {e}")))?;
    Ok(Exit::Ok)
}
