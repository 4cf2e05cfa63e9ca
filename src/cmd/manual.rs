//! `modelpin completions SHELL` and `modelpin man`: generated from the same clap definitions as
//! `--help`, so they cannot fall behind the commands they describe.
//!
//! `man` renders one page per command — modelpin(1) and modelpin-check(1), modelpin-alerts-test(1)
//! … — since modelpin(1)'s SUBCOMMANDS section points at those names. Each page adds the
//! sections clap knows nothing of: EXIT STATUS (per command), ENVIRONMENT and FILES.

use std::io::Write as _;
use std::path::Path;

use clap::CommandFactory as _;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, roman};

use crate::cli::Cli;
use crate::cmd::AppError;
use crate::exit::Exit;

/// The variable under which the shell asks the binary itself for completions.
pub const COMPLETE_VAR: &str = "MODELPIN_COMPLETE";

/// The completion script for `shell` on stdout. It asks this binary for each completion
/// (`MODELPIN_COMPLETE=<shell> modelpin -- …`, clap_complete's dynamic engine), so values that
/// live in files complete too: `--pin <TAB>` offers the ids of ./pins.toml (or
/// `$MODELPIN_CONFIG`) as they are at that moment.
pub fn completions(shell: clap_complete::Shell) -> Result<Exit, AppError> {
    use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};
    let registration: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &Bash,
        clap_complete::Shell::Zsh => &Zsh,
        clap_complete::Shell::Fish => &Fish,
        clap_complete::Shell::Elvish => &Elvish,
        _ => &Powershell,
    };
    // Completes the command typed as `modelpin`, by asking this very binary.
    let completer = std::env::current_exe().map_or_else(
        |_| "modelpin".to_owned(),
        |p| p.to_string_lossy().into_owned(),
    );
    let mut script = Vec::new();
    registration
        .write_registration(
            COMPLETE_VAR,
            "modelpin",
            "modelpin",
            &completer,
            &mut script,
        )
        .map_err(|e| AppError::io("cannot write the completion script", e))?;
    write_out(&script)
}

/// modelpin(1), the page of `command` (`check`, `alerts-test`), every page, or every page
/// written into `out_dir`.
pub fn man(command: Option<&str>, all: bool, out_dir: Option<&Path>) -> Result<Exit, AppError> {
    let pages = pages();
    if let Some(dir) = out_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| AppError::io(format!("cannot create {}", dir.display()), e))?;
        for page in &pages {
            let path = dir.join(format!("{}.1", page_name(page)));
            std::fs::write(&path, render(page)?)
                .map_err(|e| AppError::io(format!("cannot write {}", path.display()), e))?;
        }
        return Ok(Exit::Ok);
    }
    if all {
        let mut text = Vec::new();
        for page in &pages {
            text.extend(render(page)?);
        }
        return write_out(&text);
    }
    let wanted = command.map_or("modelpin".to_owned(), |c| {
        format!(
            "modelpin-{}",
            c.trim_start_matches("modelpin-").replace(' ', "-")
        )
    });
    if let Some(page) = pages.iter().find(|p| page_name(p) == wanted) {
        return write_out(&render(page)?);
    }
    let known: Vec<String> = pages
        .iter()
        .skip(1)
        .map(|p| page_name(p).trim_start_matches("modelpin-").to_owned())
        .collect();
    Err(AppError::Usage(format!(
        "no manual page for `{}`; pages: {}",
        command.unwrap_or_default(),
        known.join(", ")
    )))
}

/// The command and every visible subcommand, depth first, each with its display name
/// (`modelpin-alerts-test`) as clap sets it on build.
fn pages() -> Vec<clap::Command> {
    fn walk(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
        out.push(cmd.clone());
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out);
        }
    }
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let mut out = Vec::new();
    walk(&root, &mut out);
    out
}

fn page_name(cmd: &clap::Command) -> String {
    cmd.get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_owned()
}

/// One page: clap's sections, then EXIT STATUS, ENVIRONMENT and FILES, then the version.
fn render(cmd: &clap::Command) -> Result<Vec<u8>, AppError> {
    let man = Man::new(cmd.clone())
        .source(format!("modelpin {}", env!("CARGO_PKG_VERSION")))
        .manual("modelpin manual");
    let mut page = Vec::new();
    let fail = |e: std::io::Error| AppError::io("cannot render the manual page", e);
    man.render_title(&mut page).map_err(fail)?;
    man.render_name_section(&mut page).map_err(fail)?;
    man.render_synopsis_section(&mut page).map_err(fail)?;
    man.render_description_section(&mut page).map_err(fail)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut page).map_err(fail)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut page).map_err(fail)?;
    }
    let mut roff = Roff::new();
    extra_sections(&mut roff, &page_name(cmd));
    roff.to_writer(&mut page).map_err(fail)?;
    man.render_version_section(&mut page).map_err(fail)?;
    Ok(page)
}

/// Exit codes of the command a page describes, as `(code, meaning)`.
fn exit_codes(page: &str) -> &'static [(&'static str, &'static str)] {
    match page {
        "modelpin" | "modelpin-check" | "modelpin-traffic" => &[
            ("0", "every pin ok (warnings allowed unless --strict)"),
            (
                "1",
                "drift: at least one error finding (or a warning with --strict)",
            ),
            ("2", "usage or config error; the tool itself failed"),
            (
                "3",
                "inconclusive: nothing drifted, but a pin could not be fully measured",
            ),
        ],
        "modelpin-lock" => &[
            ("0", "every pin was recorded"),
            ("1", "a pinned model does not exist"),
            ("2", "usage or config error"),
            (
                "3",
                "a pin could not be measured (its previous baseline is kept), was recorded from fewer calls than planned, or the lock was interrupted (modelpin.lock left as it was)",
            ),
        ],
        "modelpin-scan" => &[
            ("0", "no error finding"),
            ("1", "a retired ID is used (or a warning with --strict)"),
            ("2", "usage or config error"),
            ("3", "a path could not be read"),
        ],
        "modelpin-deprecations" => &[
            (
                "0",
                "no listed pin is retired by the provider's own word (nor, with --strict, by a third party's, or retiring inside a warn_before window); --data always",
            ),
            (
                "1",
                "a listed pin is retired by the provider's own word (or, with --strict, by a third party's, or retires inside a warn_before window)",
            ),
            ("2", "usage or config error"),
        ],
        "modelpin-alerts" | "modelpin-alerts-test" => &[
            ("0", "every channel delivered"),
            ("1", "a channel failed"),
            (
                "2",
                "usage or config error, or a channel's secret variable is unset",
            ),
        ],
        "modelpin-daemon" => &[
            (
                "0",
                "stopped by SIGTERM or SIGINT after finishing or cancelling its audits",
            ),
            (
                "2",
                "usage or config error, or the store or listener could not be opened",
            ),
        ],
        "modelpin-store" | "modelpin-store-copy" => &[
            ("0", "DST holds the copy, verified"),
            (
                "2",
                "usage or config error, or the copy failed or did not verify (DST is left as it was)",
            ),
        ],
        "modelpin-demo" => &[
            ("0", "every expected finding appeared"),
            ("1", "the demo did not catch what it shows"),
            ("2", "usage error"),
        ],
        _ => &[("0", "success"), ("2", "usage or config error")],
    }
}

fn extra_sections(roff: &mut Roff, page: &str) {
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in exit_codes(page) {
        roff.control("TP", []);
        roff.text([bold(*code)]);
        roff.text([roman(*meaning)]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in [
        (
            "MODELPIN_CONFIG",
            "path of pins.toml when --config is not given",
        ),
        (
            "NO_COLOR",
            "set to a non-empty value: no colour under --color auto",
        ),
        (
            "RUST_LOG",
            "filters the daemon's log (modelpin=debug, warn)",
        ),
        (
            "GITHUB_STEP_SUMMARY",
            "--format github appends a Markdown summary to this file",
        ),
        (
            "COLUMNS",
            "width of the human report; narrower than its table gives one block per pin",
        ),
        (
            "the variables pins.toml names",
            "api_key_env, username_env, password_env, secret_env, url_env, api_token_env and token_env name variables holding secrets; pins.toml holds only their names",
        ),
    ] {
        roff.control("TP", []);
        roff.text([bold(name)]);
        roff.text([roman(meaning)]);
    }
    roff.control("SH", ["FILES"]);
    for (name, meaning) in [
        (
            "pins.toml",
            "providers, pins, settings and alert channels (version 1); see modelpin init",
        ),
        (
            "probes/*.toml",
            "one probe per file, found by each pin's probes globs",
        ),
        (
            "modelpin.lock",
            "the baseline modelpin lock records; commit it (settings.lockfile)",
        ),
        (
            ".modelpin/",
            "the daemon's store: history, alert state, outbox (settings.store)",
        ),
    ] {
        roff.control("TP", []);
        roff.text([bold(name)]);
        roff.text([roman(meaning)]);
    }
}

fn write_out(bytes: &[u8]) -> Result<Exit, AppError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|e| AppError::io("cannot write to stdout", e))?;
    Ok(Exit::Ok)
}
