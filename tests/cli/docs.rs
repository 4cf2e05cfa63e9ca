//! The documents a newcomer touches stay true: the example config, `init`, the demo, the README
//! and the guide under docs/ (their links, their example commands, the manual pages).

use std::collections::BTreeSet;
use std::path::Path;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use modelpin::cli::Cli;
use modelpin::provider::ProviderKind;

use crate::harness::{SETTINGS, Sim, Test, one_pin_with};
use crate::support::markdown::{ROOT, anchors, documents, examples, links};
use crate::world::{model, single};

/// Every variable the example pins.toml names, set to a dummy value.
fn example_env(test: Test) -> Test {
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OPENROUTER_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "SMTP_USER",
        "SMTP_PASSWORD",
    ]
    .iter()
    .fold(test, |t, var| t.env(var, "dummy"))
}

#[test]
fn init_writes_the_example_which_loads() {
    let test = example_env(Test::new());
    test.run(&["init"]).code(0);
    for name in [
        "pins.toml",
        "probes/arith.toml",
        "probes/capital.toml",
        "probes/json.toml",
        "probes/haiku.toml",
        "probes/prime-91.toml",
        "probes/prime-97.toml",
    ] {
        assert!(test.path(name).exists(), "{name} written");
    }
    assert_eq!(test.read("pins.toml"), include_str!("../../pins.toml"));
    // Writing again refuses to clobber the user's files.
    let again = test.run(&["init"]);
    again.code(2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    test.run(&["init", "--force"]).code(0);
}

#[test]
fn repository_pins_toml_and_every_probe_load() {
    let root = env!("CARGO_MANIFEST_DIR");
    let env = |name: &str| Some(format!("dummy-{name}"));
    let config = modelpin::config::load(&std::path::Path::new(root).join("pins.toml"), &env)
        .expect("example config loads");
    assert!(config.pins.len() >= 5, "pins from the major providers");
    let kinds: std::collections::BTreeSet<_> =
        config.providers.iter().map(|p| p.endpoint.kind).collect();
    assert_eq!(kinds.len(), 6, "every provider kind is shown");
    let files = std::fs::read_dir(std::path::Path::new(root).join("probes"))
        .unwrap()
        .count();
    assert_eq!(
        config.probes.len(),
        files,
        "every file under probes/ loads as a probe"
    );
}

#[test]
fn demo_catches_both_reroutes() {
    let run = Test::new().run(&["demo"]);
    run.code(0);
    for needle in [
        "served_model_mismatch",
        "tokenizer_changed",
        "cost_changed",
        "both reroutes caught",
    ] {
        assert!(
            run.stdout.contains(needle),
            "demo output lacks {needle}:\n{}",
            run.stdout
        );
    }
}

#[test]
fn readme_commands_are_the_real_ones() {
    let readme = include_str!("../../README.md");
    assert!(readme.contains("cargo run --release -- demo"));
    let ci = include_str!("../../.ci/run");
    let test_command = readme
        .lines()
        .find(|l| l.trim_start().starts_with("cargo test"))
        .expect("README names the test command")
        .split('#')
        .next()
        .unwrap_or_default()
        .trim();
    assert!(
        ci.contains(test_command),
        ".ci/run runs the README's test command `{test_command}`"
    );
}

/// The README is one page a newcomer finishes; the rest lives under docs/, which its index
/// lists page by page.
#[test]
fn readme_is_one_page_and_the_guide_indexes_every_page() {
    let documents = documents();
    let readme = &documents[0].text;
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines (at most about 250)"
    );
    assert!(
        readme.contains("](docs/README.md)"),
        "README links the guide"
    );
    let index = documents
        .iter()
        .find(|d| d.path == Path::new("docs/README.md"))
        .expect("docs/README.md");
    let linked: BTreeSet<String> = links(&index.text).into_iter().map(|(_, t)| t).collect();
    for doc in &documents {
        let Ok(page) = doc.path.strip_prefix("docs") else {
            continue;
        };
        let page = page.display().to_string();
        if page != "README.md" {
            assert!(
                linked
                    .iter()
                    .any(|t| t.split('#').next() == Some(page.as_str())),
                "docs/README.md lists docs/{page}"
            );
        }
    }
}

/// Every relative link in the documents names a file that exists, and an anchor a heading of it.
#[test]
fn every_link_between_the_documents_resolves() {
    let mut checked = 0;
    for doc in &documents() {
        let dir = Path::new(ROOT).join(&doc.path);
        let dir = dir.parent().expect("a directory");
        for (line, target) in links(&doc.text) {
            let at = format!("{}:{line}", doc.path.display());
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                Path::new(ROOT).join(&doc.path)
            } else {
                dir.join(file)
            };
            assert!(path.exists(), "{at}: `{target}` names no file");
            if !anchor.is_empty() {
                let text = std::fs::read_to_string(&path).expect("a linked document");
                assert!(
                    anchors(&text).iter().any(|a| a == anchor),
                    "{at}: `{target}`: no heading with that anchor"
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: the reader is broken"
    );
}

/// Every `modelpin` command the documents show is one the program takes: the subcommand and
/// each flag and value are parsed by the binary's own argument definitions.
#[test]
fn every_example_command_in_the_documents_parses() {
    let examples = examples(&documents());
    assert!(
        examples.len() >= 20,
        "only {} example commands found: the reader is broken",
        examples.len()
    );
    for example in &examples {
        let argv = std::iter::once("modelpin").chain(example.args.iter().map(String::as_str));
        if let Err(e) = Cli::try_parse_from(argv) {
            assert!(
                matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion),
                "{}: `modelpin {}`: {e}",
                example.at,
                example.args.join(" ")
            );
        }
    }
}

/// The README's quick start, run in order as a user would: `init`, then pins.toml edited to keep
/// the one provider used (here the simulator), `lock`, `check` and `check --format json`; and the
/// completion and manual-page lines as written (files they write go into the test's directory).
#[test]
fn the_quick_start_and_the_completion_and_manual_lines_run() {
    let documents = documents();
    let examples = examples(&documents);
    let from = |path: &str| -> Vec<Vec<String>> {
        examples
            .iter()
            .filter(|e| e.at.starts_with(&format!("{path}:")))
            .map(|e| e.args.clone())
            .collect()
    };
    let quick: Vec<Vec<String>> = from("README.md")
        .into_iter()
        .filter(|a| a[0] != "demo")
        .collect();
    let subcommands: Vec<&str> = quick.iter().map(|a| a[0].as_str()).collect();
    assert_eq!(subcommands, ["init", "lock", "check", "check"], "{quick:?}");

    let sim = Sim::start(single("acme-large", model("acme-large", 4.0, (2.5, 10.0))));
    let test = Test::new();
    let run = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        test.run(&args)
    };
    run(&quick[0]).code(0);
    assert!(test.path("pins.toml").exists() && test.path("probes").is_dir());
    let edited = one_pin_with(
        SETTINGS,
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        "acme-large",
        "",
    );
    std::fs::write(test.path("pins.toml"), edited).expect("pins.toml edited");
    run(&quick[1]).code(0);
    assert!(test.path("modelpin.lock").exists());
    run(&quick[2]).code(0);
    let json = run(&quick[3]);
    json.code(0);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("a JSON report");
    assert_eq!(report["pins"][0]["status"], "ok", "{report}");

    let scratch = Test::new();
    let lines = from("docs/commands.md");
    assert!(lines.len() >= 6, "{lines:?}");
    for args in lines {
        // A directory outside the project (an install location) becomes one inside it.
        let args: Vec<String> = args
            .into_iter()
            .map(|a| {
                if a.starts_with('/') {
                    let inside = scratch.path("out");
                    std::fs::create_dir_all(&inside).unwrap();
                    inside.display().to_string()
                } else {
                    a
                }
            })
            .collect();
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = scratch.run(&words);
        out.code(0);
        assert!(
            !out.stdout.is_empty() || words.contains(&"--out-dir"),
            "{words:?}"
        );
    }
    assert!(
        std::fs::read_dir(scratch.path("out")).unwrap().count() > 5,
        "man --out-dir wrote the pages"
    );
}

/// The EXIT STATUS of `modelpin man PAGE` as (code, meaning) pairs, roff escapes undone.
fn exit_status(page: &str) -> Vec<(String, String)> {
    let man = Test::new().run(&["man", page]);
    man.code(0);
    let section = man
        .stdout
        .split(".SH \"EXIT STATUS\"")
        .nth(1)
        .and_then(|s| s.split(".SH ").next())
        .expect("an EXIT STATUS section")
        .to_owned();
    let plain = |s: &str| {
        s.replace("\\fB", "")
            .replace("\\fR", "")
            .replace("\\-", "-")
            .replace("\\*(Aq", "'")
            .trim()
            .to_owned()
    };
    let lines: Vec<String> = section
        .lines()
        .filter(|l| !l.starts_with('.') && !l.trim().is_empty())
        .map(plain)
        .collect();
    lines
        .chunks(2)
        .map(|pair| (pair[0].clone(), pair[1].clone()))
        .collect()
}

/// The rows of the Markdown table `text` starts with, as (first cell, cell `column`), backticks
/// dropped.
fn rows(text: &str, column: usize) -> Vec<(String, String)> {
    text.trim_start()
        .lines()
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().replace('`', ""))
                .collect();
            (cells[0].clone(), cells[column].clone())
        })
        .collect()
}

/// Every command a user runs, as the words after `modelpin` (`alerts test`), with its
/// definition.
fn leaves() -> Vec<(String, clap::Command)> {
    let mut leaves = Vec::new();
    for sub in Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
    {
        let nested: Vec<&clap::Command> = sub.get_subcommands().collect();
        if nested.is_empty() {
            leaves.push((sub.get_name().to_owned(), sub.clone()));
        }
        for inner in nested {
            leaves.push((
                format!("{} {}", sub.get_name(), inner.get_name()),
                inner.clone(),
            ));
        }
    }
    leaves
}

/// One document's text, `path` from the repository root.
fn document(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The manual pages and the documents give the same exit codes: the README's table is the
/// EXIT STATUS of `check`'s and `lock`'s pages, and docs/commands.md has every command's, each
/// the EXIT STATUS of its page.
#[test]
fn the_documents_and_the_manual_pages_give_the_same_exit_codes() {
    let readme = document("README.md");
    let table = readme
        .split("## Exit codes\n\n")
        .nth(1)
        .expect("README has an exit-code table");
    assert_eq!(rows(table, 1), exit_status("check"), "README: check");
    assert_eq!(rows(table, 2), exit_status("lock"), "README: lock");

    let commands = document("docs/commands.md");
    let mut documented = BTreeSet::new();
    for section in commands.split("\n### ").skip(1) {
        let (heading, body) = section.split_once('\n').expect("a heading");
        for command in heading.split(", ").filter(|c| c.starts_with("`modelpin ")) {
            let words = command.trim_matches('`').trim_start_matches("modelpin ");
            let page = words.replace(' ', "-");
            assert_eq!(
                rows(body, 1),
                exit_status(&page),
                "docs/commands.md: {command}"
            );
            documented.insert(words.to_owned());
        }
    }
    let commands: BTreeSet<String> = leaves().into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        documented, commands,
        "docs/commands.md: the exit codes of every command"
    );
}

/// The README's command table names every command, and each flag it shows is one that command
/// takes (the manual pages are made from the same definitions).
#[test]
fn the_readme_command_table_names_every_command_with_its_flags() {
    let readme = document("README.md");
    let table = readme
        .split("## Commands\n\n")
        .nth(1)
        .expect("README has a command table");
    let cli = Cli::command();
    let mut seen = BTreeSet::new();
    for row in table.lines().take_while(|l| l.starts_with('|')).skip(2) {
        let cell = row.trim_start_matches("| ").split(" | ").next().unwrap();
        for usage in cell.split(", ") {
            let words: Vec<&str> = usage.trim_matches('`').split_whitespace().collect();
            assert_eq!(words[0], "modelpin", "{row}");
            let mut command = cli.clone();
            let mut path = Vec::new();
            for word in words[1..].iter().take_while(|w| !w.starts_with(['-', '['])) {
                match command.find_subcommand(word) {
                    Some(sub) => {
                        path.push(*word);
                        command = sub.clone();
                    }
                    None => break,
                }
            }
            assert!(!path.is_empty(), "README: `{usage}` names a command");
            seen.insert(path[0].to_owned());
            for flag in words
                .iter()
                .filter(|w| w.trim_start_matches('[').starts_with("--"))
            {
                let name = flag.trim_start_matches('[').trim_start_matches("--");
                let name = name.split([']', '|', '=']).next().unwrap();
                assert!(
                    command.get_arguments().any(|a| a.get_long() == Some(name)),
                    "README: `modelpin {}` takes no --{name}",
                    path.join(" ")
                );
            }
        }
    }
    let listed: BTreeSet<String> = cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_owned())
        .collect();
    assert_eq!(seen, listed, "README's command table names every command");
}

/// docs/commands.md names every flag of every command in that command's row, and every global
/// option in the paragraph after the table: the reference the README sends readers to is whole.
#[test]
fn docs_commands_names_every_flag_of_every_command() {
    let commands = document("docs/commands.md");
    let (table, after) = commands
        .split_once("\n\nGlobal options: ")
        .expect("docs/commands.md has a table, then the global options");
    let cli = Cli::command();
    for (name, command) in &leaves() {
        let rows: String = table
            .lines()
            .filter(|l| l.starts_with(&format!("| `modelpin {name}")))
            .collect();
        assert!(
            !rows.is_empty(),
            "docs/commands.md has a row for `modelpin {name}`"
        );
        // Whole flags only: `--exclude` is not named by `--exclude-tests`.
        let named: BTreeSet<&str> = rows
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .collect();
        for arg in command
            .get_arguments()
            .filter(|a| !a.is_global_set() && !a.is_hide_set())
        {
            if let Some(long) = arg.get_long() {
                assert!(
                    named.contains(format!("--{long}").as_str()),
                    "docs/commands.md: `modelpin {name}` lacks --{long}"
                );
            }
        }
    }
    let globals = after.split("\n\n").next().unwrap();
    for arg in cli.get_arguments().filter(|a| a.is_global_set()) {
        let long = arg.get_long().expect("global options are long");
        assert!(
            globals.contains(&format!("--{long}")),
            "docs/commands.md: the global options lack --{long}"
        );
    }
}

/// docs/scan.md's lines run as written in a tree that uses a retired ID: each exits 1 (the ID is
/// an error), the SARIF line writes SARIF, and the `--fix` line writes a patch that moves the ID
/// to its successor.
#[test]
fn the_scan_lines_run() {
    let lines: Vec<Vec<String>> = examples(&documents())
        .into_iter()
        .filter(|e| e.at.starts_with("docs/scan.md:"))
        .map(|e| e.args)
        .collect();
    assert!(lines.len() >= 3, "{lines:?}");
    let test = Test::new()
        .file("src/app.py", "client.chat(model=\"gpt-4-32k\")\n")
        .file("config/models.yaml", "model: gpt-4-32k\n");
    for args in &lines {
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = test.run(&words);
        run.code(1);
        if words.contains(&"sarif") {
            let sarif: serde_json::Value = serde_json::from_str(&run.stdout).expect("SARIF");
            assert_eq!(sarif["version"], "2.1.0");
        }
        if words.contains(&"--fix") {
            assert!(
                run.stdout.contains("-client.chat(model=\"gpt-4-32k\")")
                    && run.stdout.contains("+client.chat(model="),
                "{}",
                run.stdout
            );
        }
    }
}
