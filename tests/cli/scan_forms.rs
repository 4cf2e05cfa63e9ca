//! `modelpin scan` on the shapes real trees have: documentation written as strings and doc
//! comments, IDs in every form the matcher knows under `--fix`, level filters, and file names no
//! tool expects.

use crate::harness::Test;
use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

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
    // `gpt-3.5-turbo-0613` is retired per third parties only: a warning.
    let (c, l, e, i) = ("comment", "literal", "error", "info");
    let warn = "warning";
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
        row("completions.py", 31, "gpt-3.5-turbo-0613", l, warn),
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

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
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
    // The docs fixture's `gpt-3.5-turbo-0613` is retired per third parties only: a warning.
    let all = set(&["error", "info", "warning"]);
    assert_eq!(levels(&test, "json", "info"), all);
    assert_eq!(levels(&test, "human", "info"), all);
    for format in ["json", "human"] {
        assert_eq!(
            levels(&test, format, "warning"),
            set(&["error", "warning"]),
            "{format}"
        );
        assert_eq!(levels(&test, format, "error"), set(&["error"]), "{format}");
    }
    assert_eq!(
        levels(&test, "sarif", "info"),
        set(&["error", "note", "warning"])
    );
    assert_eq!(
        levels(&test, "sarif", "warning"),
        set(&["error", "warning"])
    );
    assert_eq!(
        levels(&test, "github", "info"),
        set(&["error", "notice", "warning"])
    );
    assert_eq!(levels(&test, "github", "error"), set(&["error"]));
    let only_alias = test.run(&["scan", "alias.py", "--min-level", "warning"]);
    only_alias.code(0);
    assert!(
        only_alias.stdout.contains("0 info in 0 occurrences")
            && only_alias
                .stdout
                .contains("2 below the minimum level left out"),
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

#[test]
fn scan_min_level_from_pins_toml_applies_unless_the_flag_says_otherwise() {
    let pins = "version = 1\n\n[scan]\nmin_level = \"warning\"\n";
    let test = Test::new().pins(pins).file("alias.py", "M = 'gpt-9o'\n");
    copy_docs(&test);
    let run = test.run(&["scan", "--format", "json"]);
    let from_file: BTreeSet<String> = occurrences(&run.stdout).into_iter().map(|o| o.4).collect();
    assert_eq!(
        from_file,
        set(&["error", "warning"]),
        "pins.toml's level: {}",
        run.stdout
    );
    assert_eq!(
        levels(&test, "json", "info"),
        set(&["error", "info", "warning"]),
        "the flag wins"
    );

    let bad = Test::new().pins("version = 1\n\n[scan]\nmin_level = \"warn\"\n");
    let run = bad.run(&["scan"]);
    run.code(2);
    assert!(
        run.stderr.contains("pins.toml:4:")
            && run.stderr.contains("unknown level `warn`")
            && run.stderr.contains("did you mean `warning`?"),
        "{}",
        run.stderr
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

/// Runs `git apply` with `args` on `patch` in `dir`; `None` when git is not installed.
fn git_apply(dir: &Path, args: &[&str], patch: &str) -> Option<std::process::Output> {
    let mut child = Command::new("git")
        .arg("apply")
        .args(args)
        .arg("-")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(patch.as_bytes())
        .unwrap();
    child.wait_with_output().ok()
}

/// A project holding the same retired ID in a file named with a newline, one whose name is not
/// UTF-8 (`caf\xe9.py`, Latin-1) and a plain one.
#[cfg(unix)]
fn odd_names() -> (Test, std::ffi::OsString) {
    use std::os::unix::ffi::OsStrExt as _;
    let test = Test::new()
        .file("nl\nb.py", "M = 'claude-3-opus-20240229'\n")
        .file("plain.py", "M = 'claude-3-opus-20240229'\n");
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.py").to_owned();
    std::fs::write(
        test.dir.path().join(&latin1),
        "M = 'claude-3-opus-20240229'\n",
    )
    .unwrap();
    (test, latin1)
}

/// Security issue row 13: a newline in a file name split the patch header and `git apply`
/// rejected the whole patch.
#[cfg(unix)]
#[test]
fn scan_fix_patch_for_names_with_newlines_and_non_utf8_bytes_applies() {
    let (test, latin1) = odd_names();
    let fix = test.run(&["scan", "--fix"]);
    fix.code(1);
    let patch = &fix.stdout;
    assert!(
        patch.contains("--- \"a/nl\\nb.py\"\n+++ \"b/nl\\nb.py\"\n"),
        "{patch}"
    );
    assert!(patch.contains("--- \"a/caf\\351.py\"\n"), "{patch}");
    let Some(check) = git_apply(test.dir.path(), &["--unidiff-zero", "--check"], patch) else {
        assert!(std::env::var_os("CI").is_none(), "git is required in CI");
        eprintln!("notice: git not installed; the patch was not applied");
        return;
    };
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let applied = git_apply(test.dir.path(), &["--unidiff-zero"], patch).unwrap();
    assert!(applied.status.success());
    for name in [
        std::ffi::OsStr::new("nl\nb.py"),
        "plain.py".as_ref(),
        &latin1,
    ] {
        let after = std::fs::read_to_string(test.dir.path().join(name)).unwrap();
        assert_eq!(after, "M = 'claude-opus-4-8'\n", "{name:?}");
    }
}

/// Security issue row 13: a name that is not UTF-8 became U+FFFD, so SARIF and GitHub
/// annotations pointed at no file.
#[cfg(unix)]
#[test]
fn scan_reports_name_files_with_newlines_and_non_utf8_bytes_exactly() {
    use std::os::unix::ffi::OsStrExt as _;
    let (test, _) = odd_names();
    let sarif = test.run(&["scan", "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let uris: BTreeSet<&str> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(uris, BTreeSet::from(["caf%E9.py", "nl%0Ab.py", "plain.py"]));
    for uri in uris {
        let name = percent_decode(uri);
        assert!(
            test.dir
                .path()
                .join(std::ffi::OsStr::from_bytes(&name))
                .exists(),
            "{uri}"
        );
    }
    let github = test.run(&["scan", "--format", "github"]);
    let lines: Vec<&str> = github.stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("::error file=nl%0Ab.py,line=1,")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("::error title=") && l.contains("\"caf\\351.py\":1:6: ")),
        "{lines:#?}"
    );
    assert!(lines.iter().all(|l| !l.contains('\u{fffd}')), "{lines:#?}");
}

fn percent_decode(uri: &str) -> Vec<u8> {
    let bytes = uri.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&uri[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// `--fix` turned `us.anthropic.claude-sonnet-4-20250514-v1:0` into
/// `us.anthropic.anthropic.claude-sonnet-5`: the vendor doubled, not a Bedrock ID.
#[test]
fn scan_fix_writes_successors_in_the_form_of_the_id_found() {
    let code = "\
A = 'us.anthropic.claude-sonnet-4-20250514-v1:0'
B = 'anthropic.claude-sonnet-4-20250514-v1:0'
C = 'anthropic.claude-v2:1'
D = 'claude-3-opus-20240229'
E = 'models/gemini-2.0-flash-001'
";
    let test = Test::new().file("app.py", code);
    let run = test.run(&["scan", "--fix"]);
    run.code(1);
    assert_eq!(
        run.stdout,
        "--- a/app.py\n+++ b/app.py\n\
         @@ -1,5 +1,5 @@\n-A = 'us.anthropic.claude-sonnet-4-20250514-v1:0'\n+A = 'us.anthropic.claude-sonnet-5'\n\
         -B = 'anthropic.claude-sonnet-4-20250514-v1:0'\n+B = 'anthropic.claude-sonnet-5'\n\
         \x20C = 'anthropic.claude-v2:1'\n\
         -D = 'claude-3-opus-20240229'\n+D = 'claude-opus-4-8'\n\
         \x20E = 'models/gemini-2.0-flash-001'\n"
    );
}

/// Seen on the openai sdist: these showed only as aliases or `unpinned` though OpenAI retired
/// them (the rows come from the deprecations.info snapshot).
#[test]
fn scan_knows_the_retired_gpt_4_variants() {
    let code = "A = 'gpt-4-vision-preview'\nB = 'gpt-4-32k'\nC = 'gpt-4-0314'\nD = 'gpt-4o-audio-preview-2024-10-01'\n";
    let run = Test::new()
        .file("app.py", code)
        .run(&["scan", "--format", "json"]);
    run.code(1);
    let got: Vec<(String, String)> = occurrences(&run.stdout)
        .into_iter()
        .map(|o| (o.2, o.4))
        .collect();
    let want = [
        "gpt-4-vision-preview",
        "gpt-4-32k",
        "gpt-4-0314",
        "gpt-4o-audio-preview-2024-10-01",
    ]
    .map(|id| (id.to_owned(), "error".to_owned()));
    assert_eq!(got, want);
}

/// The openai SDK says "Announced shutdown date: 2025-10-10" beside an ID that no feed listed;
/// the ID was reported only as `unpinned`.
#[test]
fn scan_reads_a_retirement_date_stated_on_the_ids_line() {
    let soon = (chrono::Utc::now().date_naive() + chrono::Days::new(20)).format("%B %-d, %Y");
    let code = format!(
        "M = 'gpt-9o-2099-01-01'  # shutdown 2025-10-10\n\
         N = 'gpt-9o-2098-01-01'  # deprecated on {soon}\n\
         O = 'gpt-9o-2097-01-01'  # deprecated 2025-10-10, use 'gpt-9o-2096-01-01'\n\
         X = Literal['gpt-9o-2095-01-01']\n\
         \"\"\"Deprecated values:\n\
         - \"gpt-9o-2095-01-01\": Announced shutdown date: 2025-10-10. See the docs.\n\
         \"\"\"\n"
    );
    let run = Test::new()
        .file("models.py", &code)
        .run(&["scan", "--format", "json"]);
    run.code(1);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let got: Vec<(u64, String, Vec<String>)> = report["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let findings = o["findings"].as_array().unwrap();
            (
                o["line"].as_u64().unwrap(),
                o["id"].as_str().unwrap().to_owned(),
                findings
                    .iter()
                    .map(|f| {
                        format!(
                            "{}:{}",
                            f["code"].as_str().unwrap(),
                            f["level"].as_str().unwrap()
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    let row = |line, id: &str, findings: &[&str]| {
        (
            line,
            id.to_owned(),
            findings.iter().map(|f| (*f).to_owned()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        got,
        [
            row(1, "gpt-9o-2099-01-01", &["retired:error"]),
            row(
                2,
                "gpt-9o-2098-01-01",
                &["retiring:warning", "unpinned:info"]
            ),
            row(3, "gpt-9o-2097-01-01", &["retired:error"]),
            // In the comment, as the way out: not given the date (it would be retired:info).
            row(3, "gpt-9o-2096-01-01", &[]),
            row(4, "gpt-9o-2095-01-01", &["unpinned:info"]),
            row(6, "gpt-9o-2095-01-01", &["retired:info"]),
        ]
    );
    assert!(
        run.stdout
            .contains("[source: the date stated on this line]"),
        "{}",
        run.stdout
    );
}

/// `init --from-scan` pinned an ID it had just called retired, with no note, and IDs that only
/// tests named.
#[test]
fn init_from_scan_notes_retired_ids_and_leaves_test_only_ids_out() {
    let test = Test::new()
        .file(
            "src/app.py",
            "MODEL = 'claude-3-opus-20240229'\nNEW = 'claude-opus-9-20990101'\n",
        )
        .file(
            "tests/test_app.py",
            "FAKE = 'gpt-9o-2099-01-01'\nM = 'claude-opus-9-20990101'\n",
        )
        .file("web/button.spec.ts", "const m = 'gpt-9o-2098-01-01';\n");
    let run = test.run(&["init", "--from-scan"]);
    run.code(0);
    assert!(
        run.stderr.contains(
            "2 model IDs used only in test files were left out (--include-tests pins them)"
        ),
        "{}",
        run.stderr
    );
    let pins = test.read("pins.toml");
    assert!(!pins.contains("gpt-9o"), "{pins}");
    let opus = pins
        .split("\n\n")
        .find(|block| block.contains("model = \"claude-3-opus-20240229\""))
        .unwrap_or_else(|| panic!("{pins}"));
    assert!(
        opus.contains("\n# `claude-3-opus-20240229` is retired (2026-01-05); replacement: claude-opus-4-8 [source: "),
        "{opus}"
    );
    assert!(opus.contains("modelpin scan --fix"), "{opus}");
    assert_ne!(test.run(&["deprecations"]).code, 2, "the file loads");

    let all = test.run(&["init", "--from-scan", "--force", "--include-tests"]);
    all.code(0);
    let pins = test.read("pins.toml");
    for id in [
        "gpt-9o-2099-01-01",
        "gpt-9o-2098-01-01",
        "claude-3-opus-20240229",
    ] {
        assert!(pins.contains(&format!("model = \"{id}\"")), "{id}: {pins}");
    }
    test.run(&["init", "--include-tests"]).code(2);
}

/// The user report on the openai 1.51.0 sdist: `--fix` wrote successors the same table calls
/// retired or retiring (`o1-mini` → `o4-mini`, `chatgpt-4o-latest` → `gpt-5.1-chat-latest`,
/// `gpt-4-32k` → `gpt-4o`), so after `git apply` the next scan flagged what the patch wrote, and
/// the patch had no context lines, so plain `git apply` refused it. Now the fix follows the chain
/// to an ID nothing flags (or offers none), plain `git apply` takes it, and a scan at warning
/// level after applying it finds nothing on a line the patch wrote.
#[test]
fn scan_fix_follows_retired_successors_and_the_next_scan_finds_nothing_it_wrote() {
    let code = "\
import openai

A = 'o1-mini'
B = 'chatgpt-4o-latest'
C = 'gpt-4-32k'
D = 'o1-preview'
E = 'gpt-3.5-turbo-0613'
";
    let test = Test::new().file("app.py", code);
    let run = test.run(&["scan", "--fix"]);
    run.code(1);
    for flagged in ["'o4-mini'", "'gpt-5.1-chat-latest'", "'gpt-4o'"] {
        assert!(
            !run.stdout.contains(flagged),
            "the patch writes {flagged}:\n{}",
            run.stdout
        );
    }
    let applied = git_apply(test.dir.path(), &[], &run.stdout).expect("git is installed");
    assert!(
        applied.status.success(),
        "git apply takes the patch as it is: {}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let patched = test.read("app.py");
    let written: BTreeSet<u64> = code
        .lines()
        .zip(patched.lines())
        .zip(1..)
        .filter(|((old, new), _)| old != new)
        .map(|(_, n)| n)
        .collect();
    assert!(written.len() >= 3, "{patched}");
    let after = test.run(&["scan", "--min-level", "warning", "--format", "json"]);
    let flagged: Vec<_> = occurrences(&after.stdout)
        .into_iter()
        .filter(|o| written.contains(&o.1))
        .collect();
    assert!(flagged.is_empty(), "{flagged:?}\n{patched}");
}

/// `o1-mini-2024-09-12` was only `unpinned` though its alias `o1-mini` is retired: a dated
/// snapshot of a retired alias is judged with it, unless a source says otherwise.
#[test]
fn scan_judges_a_dated_snapshot_with_its_retired_alias() {
    let test = Test::new().file(
        "app.py",
        "M = 'o1-mini-2024-09-12'\nN = 'gpt-4o-2024-08-06'\n",
    );
    let run = test.run(&["scan", "--format", "json"]);
    run.code(1);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let findings = |id: &str| -> Vec<(String, String)> {
        report["occurrences"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["id"] == id)
            .flat_map(|o| o["findings"].as_array().unwrap().clone())
            .map(|f| {
                let message = f["message"].as_str().unwrap().to_owned();
                (f["code"].as_str().unwrap().to_owned(), message)
            })
            .collect()
    };
    let snapshot = findings("o1-mini-2024-09-12");
    assert!(
        snapshot
            .iter()
            .any(|(code, m)| code == "retired" && m.contains("with its alias `o1-mini`")),
        "{snapshot:?}"
    );
    let live = findings("gpt-4o-2024-08-06");
    assert!(
        !live.iter().any(|(code, _)| code == "retired"),
        "an alias still served says nothing of its snapshot: {live:?}"
    );
}

/// `text-embedding-3-small`, `whisper-1`, `tts-1` and `dall-e-3` got a paste-ready chat pin with
/// chat probes; `init --from-scan` called them "a `openai-compatible` model".
#[test]
fn scan_and_init_from_scan_never_offer_chat_pins_for_non_chat_models() {
    let code =
        "E = 'text-embedding-3-small'\nW = 'whisper-1'\nT = 'tts-1'\nC = 'gpt-4o-2024-08-06'\n";
    let test = Test::new().file("app.py", code);
    let run = test.run(&["scan", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    for o in report["occurrences"].as_array().unwrap() {
        let id = o["id"].as_str().unwrap();
        for f in o["findings"].as_array().unwrap() {
            if f["code"] != "unpinned" {
                continue;
            }
            let chat = id.starts_with("gpt-4o");
            assert_eq!(f.get("suggestion").is_some(), chat, "{id}: {f}");
            if !chat {
                assert!(
                    f["message"]
                        .as_str()
                        .unwrap()
                        .contains("probes are chat calls"),
                    "{f}"
                );
            }
        }
    }
    let init = test.run(&["init", "--from-scan"]);
    init.code(0);
    let pins = test.read("pins.toml");
    assert!(pins.contains("model = \"gpt-4o-2024-08-06\""), "{pins}");
    for id in ["text-embedding-3-small", "whisper-1", "tts-1"] {
        assert!(!pins.contains(&format!("model = \"{id}\"")), "{pins}");
        assert!(pins.contains(&format!("# \"{id}\" (used at")), "{pins}");
    }
    assert!(!pins.contains("openai-compatible` model"), "{pins}");
    test.run(&["deprecations"]).code(0);
}
