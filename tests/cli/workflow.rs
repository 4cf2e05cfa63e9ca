//! The example GitHub Actions workflow runs as written: every `modelpin` command its action steps
//! run exists and takes the flags it is given, and it installs the release this repository says
//! it is, through the action, compiling nothing.
//!
//! The workflow is read with a small line reader (its `run:` values and the action steps' `with:`
//! entries), not a YAML library: the file is ours and keeps to plain one-line and `|` block values.

use std::collections::BTreeMap;

use crate::harness::Test;

const WORKFLOW: &str = include_str!("../../examples/github-actions.yml");

/// Each step that uses the modelpin action: its `with:` entries.
fn action_steps(workflow: &str) -> Vec<BTreeMap<String, String>> {
    let mut out = Vec::new();
    let mut with: Option<(usize, BTreeMap<String, String>)> = None;
    let mut in_action = false;
    for line in workflow.lines() {
        let indent = line.len() - line.trim_start().len();
        let entry = line.trim().trim_start_matches("- ");
        if entry.starts_with('#') || entry.is_empty() {
            continue;
        }
        if let Some((at, map)) = &mut with {
            if indent > *at {
                if let Some((k, v)) = entry.split_once(':') {
                    map.insert(k.trim().to_owned(), v.trim().trim_matches('"').to_owned());
                }
                continue;
            }
            out.push(with.take().unwrap().1);
        }
        if line.trim_start().starts_with("- ") {
            in_action = false;
        }
        if entry.starts_with("uses: modelpin/modelpin@") {
            in_action = true;
        }
        if in_action && entry == "with:" {
            with = Some((indent, BTreeMap::new()));
        }
    }
    out.extend(with.map(|(_, map)| map));
    out
}

#[test]
fn workflow_modelpin_commands_exist_and_take_their_flags() {
    let steps = action_steps(WORKFLOW);
    assert_eq!(steps.len(), 2, "{steps:?}");
    let test = Test::new();
    for step in &steps {
        let command: Vec<&str> = std::iter::once(step["command"].as_str())
            .chain(
                step.get("args")
                    .map_or("", String::as_str)
                    .split_whitespace(),
            )
            .collect();
        let subcommand = command[0];
        let help = test.run(&[subcommand, "--help"]);
        help.code(0);
        for flag in command[1..].iter().filter(|w| w.starts_with('-')) {
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
        let run = test.run(&command);
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
fn workflow_installs_this_release_through_the_action_and_compiles_nothing() {
    for step in action_steps(WORKFLOW) {
        assert_eq!(step["version"], format!("v{}", env!("CARGO_PKG_VERSION")));
    }
    let major = env!("CARGO_PKG_VERSION").split('.').next().unwrap();
    assert_eq!(
        WORKFLOW
            .matches(&format!("uses: modelpin/modelpin@v{major}\n"))
            .count(),
        2,
        "each job uses the action at the release's major tag"
    );
    assert!(
        ["cargo", "rustup", "rust-toolchain"]
            .iter()
            .all(|word| !WORKFLOW.contains(word)),
        "nothing is compiled"
    );
    // The job that needs provider keys does not run for pull requests from forks, which get
    // no secrets; an inconclusive audit is a warning there, not a failed job.
    assert!(WORKFLOW.contains(
        "if: github.event_name != 'pull_request' || github.event.pull_request.head.repo.full_name == github.repository"
    ));
    assert!(WORKFLOW.contains("allow-inconclusive: true"));
    for line in WORKFLOW.lines().filter(|l| l.contains("uses:")) {
        let action = line.split("uses:").nth(1).unwrap().trim();
        let (_, version) = action.split_once('@').expect("a version");
        assert!(
            version
                .strip_prefix('v')
                .is_some_and(|v| v.parse::<u32>().is_ok()),
            "pinned to a major: {action}"
        );
    }
}

#[test]
fn the_step_reader_reads_the_action_s_with_entries() {
    let steps = action_steps(
        "    steps:\n      - uses: modelpin/modelpin@v0\n        with:\n          command: scan\n          args: --format sarif\n      - uses: other/x@v1\n        with:\n          command: no\n",
    );
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0]["command"], "scan");
    assert_eq!(steps[0]["args"], "--format sarif");
}
