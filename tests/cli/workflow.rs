//! The example GitHub Actions workflow runs as written: every `modelpin` command in it exists and
//! takes the flags it is given, and it installs the release this repository says it is.
//!
//! The workflow is read with a small line reader (its `run:` values and `env:` entries), not a
//! YAML library: the file is ours and keeps to plain one-line and `|` block values.

use std::collections::BTreeMap;

use crate::harness::Test;

const WORKFLOW: &str = include_str!("../../examples/github-actions.yml");

/// Every shell line of every `run:` step, in order.
fn run_lines(workflow: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut block: Option<usize> = None;
    for line in workflow.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(at) = block {
            if line.trim().is_empty() || indent > at {
                out.push(line.trim().to_owned());
                continue;
            }
            block = None;
        }
        let trimmed = line.trim_start().trim_start_matches("- ");
        if let Some(value) = trimmed.strip_prefix("run:") {
            match value.trim() {
                "|" | ">" => block = Some(indent),
                command => out.push(command.to_owned()),
            }
        }
    }
    out.retain(|l| !l.is_empty() && !l.starts_with('#'));
    out
}

/// `KEY: value` entries of the top-level `env:` block.
fn env(workflow: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in workflow.lines() {
        if line == "env:" {
            inside = true;
            continue;
        }
        if inside && !line.starts_with(' ') && !line.is_empty() {
            break;
        }
        let entry = line.trim();
        if inside
            && !entry.starts_with('#')
            && let Some((key, value)) = entry.split_once(':')
        {
            out.insert(
                key.trim().to_owned(),
                value.trim().trim_matches('"').to_owned(),
            );
        }
    }
    out
}

/// The words of one simple shell command: quotes removed, output redirections dropped.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    for c in command.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ' ') => out.extend((!word.is_empty()).then(|| std::mem::take(&mut word))),
            (_, c) => word.push(c),
        }
    }
    out.extend((!word.is_empty()).then_some(word));
    if let Some(redirect) = out.iter().position(|w| w.starts_with('>')) {
        out.truncate(redirect);
    }
    out
}

#[test]
fn workflow_modelpin_commands_exist_and_take_their_flags() {
    let commands: Vec<Vec<String>> = run_lines(WORKFLOW)
        .iter()
        .flat_map(|line| line.split("&&").map(words).collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|w| w == "modelpin"))
        .collect();
    assert!(commands.len() >= 2, "{commands:?}");
    let test = Test::new();
    for command in &commands {
        let subcommand = &command[1];
        let help = test.run(&[subcommand.as_str(), "--help"]);
        help.code(0);
        for flag in command[2..].iter().filter(|w| w.starts_with('-')) {
            let name = flag.split('=').next().unwrap();
            assert!(
                help.stdout
                    .split_whitespace()
                    .any(|w| w.trim_end_matches(',') == name),
                "`modelpin {subcommand}` has no {name}:\n{}",
                help.stdout
            );
        }
        // Run as written in an empty directory: a config error may follow, a usage error may not.
        let args: Vec<&str> = command[1..].iter().map(String::as_str).collect();
        let run = test.run(&args);
        assert!(
            ["Usage:", "unexpected argument", "invalid value"]
                .iter()
                .all(|clap| !run.stderr.contains(clap)),
            "{command:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn workflow_installs_this_release_from_the_repository_it_names() {
    let env = env(WORKFLOW);
    assert_eq!(env["MODELPIN_VERSION"], env!("CARGO_PKG_VERSION"));
    assert_eq!(env["MODELPIN_REPOSITORY"], env!("CARGO_PKG_REPOSITORY"));
    let installs: Vec<Vec<String>> = run_lines(WORKFLOW)
        .iter()
        .map(|l| words(l))
        .filter(|w| w.starts_with(&["cargo".to_owned(), "install".to_owned()]))
        .collect();
    assert_eq!(installs.len(), 2, "one install per job");
    for install in installs {
        let joined = install.join(" ");
        assert_eq!(
            joined,
            "cargo install --locked --git $MODELPIN_REPOSITORY --tag v$MODELPIN_VERSION modelpin"
        );
    }
    // Each job restores the binary before building it, keyed on the version.
    assert_eq!(
        WORKFLOW
            .matches("key: modelpin-${{ runner.os }}-${{ env.MODELPIN_VERSION }}")
            .count(),
        2
    );
    assert_eq!(
        WORKFLOW
            .matches("if: steps.modelpin.outputs.cache-hit != 'true'")
            .count(),
        4
    );
    for line in WORKFLOW.lines().filter(|l| l.contains("uses:")) {
        let action = line.split("uses:").nth(1).unwrap().trim();
        let (_, version) = action.split_once('@').expect("a version");
        assert!(
            version == "stable"
                || version
                    .strip_prefix('v')
                    .is_some_and(|v| v.parse::<u32>().is_ok()),
            "pinned to a major: {action}"
        );
    }
}

#[test]
fn the_line_reader_reads_run_values() {
    let text = "jobs:\n  a:\n    steps:\n      - run: modelpin scan --x > out\n      - name: b\n        run: |\n          one && modelpin check\n          # comment\n\n          two\n      - uses: x@v1\n";
    assert_eq!(
        run_lines(text),
        ["modelpin scan --x > out", "one && modelpin check", "two"]
    );
    assert_eq!(words("a \"b c\" 'd' > f"), ["a", "b c", "d"]);
}
