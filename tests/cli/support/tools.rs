//! Outside programs the tests need. A missing one fails the test under CI (`.ci/run` installs
//! it) and skips it elsewhere with a notice.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

/// Runs `command` to its end.
pub fn output(command: &mut Command) -> Output {
    command.output().expect("runs")
}

/// Its standard output, after asserting it succeeded (with both streams in the message if not).
#[track_caller]
pub fn succeeded(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `Some` when `name` runs; `None` (after a printed notice) when absent outside CI.
pub fn program(name: &str, probe: &[&str]) -> Option<()> {
    let found = Command::new(name)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is required in CI (.ci/run installs it)"
        );
        eprintln!("notice: {name} is not installed; skipping this test");
        return None;
    }
    Some(())
}

/// `promtool check metrics` on a scrape; skipped with a notice outside CI when promtool is absent.
pub fn promtool_accepts(scrape: &str) {
    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool is required in CI (.ci/run installs it)"
        );
        eprintln!("notice: promtool not installed; skipping the promtool check of /metrics");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(scrape.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.trim().is_empty(),
        "promtool: {text}\n{scrape}"
    );
}

/// The program `name` under `dir` (where `.ci/run` installs it) or on `PATH`; `None` (after a
/// printed notice) when absent outside CI.
pub fn locate(name: &str, dir: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::iter::once(std::path::PathBuf::from(dir))
        .chain(std::env::split_paths(&path))
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is required in CI (.ci/run installs it)"
        );
        eprintln!("notice: {name} is not installed; skipping this check");
    }
    found
}
