//! `modelpin scan` on the shapes real trees have: documentation written as strings and doc
//! comments, IDs in every form the matcher knows under `--fix`, level filters, and file names no
//! tool expects.

use crate::harness::Test;
use std::collections::BTreeSet;

const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scan/docs");

/// (path, line, id, kind, level) of every occurrence in a JSON report.
fn occurrences(json: &str) -> BTreeSet<(String, u64, String, String, String)> {
    let report: serde_json::Value = serde_json::from_str(json).expect("JSON report");
    report["occurrences"]
        .as_array()
        .expect("occurrences")
        .iter()
        .map(|o| {
            let level = o["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["level"].as_str().unwrap().to_owned())
                .max_by_key(|l| ["info", "warning", "error"].iter().position(|x| x == l))
                .unwrap_or_default();
            (
                o["path"].as_str().unwrap().to_owned(),
                o["line"].as_u64().unwrap(),
                o["id"].as_str().unwrap().to_owned(),
                o["kind"].as_str().unwrap().to_owned(),
                level,
            )
        })
        .collect()
}

fn copy_docs(test: &Test) {
    for entry in std::fs::read_dir(DOCS).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(
            entry.path(),
            test.path(&entry.file_name().to_string_lossy()),
        )
        .unwrap();
    }
}

/// Docstrings were classified as literals: 13 of 30 sampled findings on an SDK were docstring
/// prose, 12 of them at error or warning level.
#[test]
fn scan_docstrings_and_doc_comments_are_prose_at_info() {
    let test = Test::new();
    copy_docs(&test);
    let run = test.run(&["scan", "--format", "json"]);
    run.code(1);
    let got = occurrences(&run.stdout);
    let row = |path: &str, line, id: &str, kind: &str, level: &str| {
        (
            path.to_owned(),
            line,
            id.to_owned(),
            kind.to_owned(),
            level.to_owned(),
        )
    };
    let (c, l, e, i) = ("comment", "literal", "error", "info");
    let want: BTreeSet<_> = [
        row("chat.ex", 3, "gpt-4-0613", c, i),
        row("chat.ex", 7, "gpt-3.5-turbo-0613", c, i),
        row("chat.ex", 9, "gpt-4-0613", l, e),
        row("client.ts", 5, "gpt-4-0613", c, i),
        row("client.ts", 6, "claude-3-haiku-20240307", c, i),
        row("client.ts", 8, "gpt-4-0613", l, e),
        row("client.ts", 9, "gpt-3.5-turbo-0613", c, i),
        row("completions.py", 4, "gpt-4-0613", c, i),
        row("completions.py", 4, "gpt-3.5-turbo-0613", c, i),
        row("completions.py", 13, "claude-3-opus-20240229", c, i),
        row("completions.py", 19, "gpt-4-0613", l, e),
        row("completions.py", 26, "gpt-4-0613", c, i),
        row("completions.py", 27, "claude-3-haiku-20240307", c, i),
        row("completions.py", 31, "gpt-3.5-turbo-0613", l, e),
        row("completions.py", 32, "gpt-3.5-turbo-0613", c, i),
        row("completions.py", 33, "claude-3-haiku-20240307", l, e),
        row("lib.rs", 1, "claude-3-opus-20240229", c, i),
        row("lib.rs", 3, "gpt-4-0613", c, i),
        row("lib.rs", 4, "gpt-4-0613", l, e),
        row("lib.rs", 6, "claude-3-haiku-20240307", c, i),
        row("lib.rs", 7, "claude-3-haiku-20240307", l, e),
    ]
    .into_iter()
    .collect();
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing: {missing:#?}\nextra: {extra:#?}"
    );
}

/// Every level a finding of the docs fixture has, per format, with `--min-level`.
fn levels(test: &Test, format: &str, min: &str) -> BTreeSet<String> {
    let run = test.run(&["scan", "--format", format, "--min-level", min]);
    let out = &run.stdout;
    match format {
        "json" => occurrences(out).into_iter().map(|o| o.4).collect(),
        "sarif" => {
            let log: serde_json::Value = serde_json::from_str(out).unwrap();
            log["runs"][0]["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["level"].as_str().unwrap().to_owned())
                .collect()
        }
        "github" => out
            .lines()
            .map(|l| l[2..].split(' ').next().unwrap().to_owned())
            .collect(),
        _ => out
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .filter(|l| !l.starts_with(' '))
            .map(|l| l.split(' ').next().unwrap().to_owned())
            .collect(),
    }
}

#[test]
fn scan_min_level_filters_every_format() {
    let test = Test::new().file("alias.py", "M = 'gpt-9o'\n");
    copy_docs(&test);
    let set = |items: &[&str]| {
        items
            .iter()
            .map(|s| (*s).to_owned())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(levels(&test, "json", "info"), set(&["error", "info"]));
    assert_eq!(levels(&test, "human", "info"), set(&["error", "info"]));
    for format in ["json", "human"] {
        assert_eq!(
            levels(&test, format, "warning"),
            set(&["error"]),
            "{format}"
        );
    }
    assert_eq!(levels(&test, "sarif", "info"), set(&["error", "note"]));
    assert_eq!(levels(&test, "sarif", "warning"), set(&["error"]));
    assert_eq!(levels(&test, "github", "info"), set(&["error", "notice"]));
    assert_eq!(levels(&test, "github", "error"), set(&["error"]));
    let only_alias = test.run(&["scan", "alias.py", "--min-level", "warning"]);
    only_alias.code(0);
    assert!(
        only_alias.stdout.contains("0 info in 0 occurrences")
            && only_alias.stdout.contains("2 below --min-level left out"),
        "{}",
        only_alias.stdout
    );
    let bad = test.run(&["scan", "--min-level", "notice"]);
    bad.code(2);
    assert!(
        bad.stderr.contains("info, warning, error"),
        "{}",
        bad.stderr
    );
}

/// The fingerprint of each SARIF result, in result order.
fn fingerprints(test: &Test) -> Vec<String> {
    let run = test.run(&["scan", "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["partialFingerprints"]["modelpinFinding/v1"]
                .as_str()
                .expect("a fingerprint on every result")
                .to_owned()
        })
        .collect()
}

/// Code scanning matches results across commits by `partialFingerprints`: an edit above a line,
/// or a re-indent, must not make its result new; two identical lines must stay two results.
#[test]
fn scan_sarif_fingerprints_survive_edits_elsewhere_in_the_file() {
    let before =
        "M = 'gpt-4-0613'\nM = 'gpt-4-0613'\n\ndef f():\n    return 'claude-3-haiku-20240307'\n";
    let after = "import os\n\n\nM = 'gpt-4-0613'\nM = 'gpt-4-0613'\n\nclass A:\n    def f():\n            return   'claude-3-haiku-20240307'\n";
    let test = Test::new().file("app.py", before);
    let first = fingerprints(&test);
    assert_eq!(first.len(), 3);
    assert_eq!(first.iter().collect::<BTreeSet<_>>().len(), 3, "{first:?}");
    std::fs::write(test.path("app.py"), after).unwrap();
    assert_eq!(fingerprints(&test), first);
    std::fs::write(test.path("app.py"), "M = 'gpt-4-0613'\n").unwrap();
    assert_eq!(fingerprints(&test)[..], first[..1]);
}
