//! `modelpin scan` on a fixture repository: every occurrence asserted exactly (so precision and
//! recall are measured), SARIF checked against the SARIF 2.1.0 schema and against the files, the
//! outputs' escaping, exit codes, `--fix` and `init --from-scan`.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::harness::{Run, Test};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scan/repo");
const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/sarif/sarif-2.1.0-rtm.5.json"
);

type Expected = (
    &'static str,
    usize,
    usize,
    &'static str,
    &'static str,
    &'static [&'static str],
);

/// (path, line, column, id, kind, findings as `code:level`) for every occurrence the fixture
/// holds; everything else in it (decoys, split and assembled IDs, the ignored, hidden, vendored,
/// binary and oversized files) must not be reported.
const EXPECTED: &[Expected] = &[
    (
        ".env",
        1,
        14,
        "gpt-3.5-turbo-0613",
        "literal",
        &["retired:warning"],
    ),
    (
        ".env",
        2,
        18,
        "claude-opus-9-20990101",
        "literal",
        &["unpinned:info"],
    ),
    (
        "config/models.yaml",
        1,
        10,
        "gpt-4-0613",
        "literal",
        &["retired:error"],
    ),
    (
        "config/models.yaml",
        2,
        12,
        "claude-3-5-haiku-latest",
        "literal",
        &["retired:warning"],
    ),
    (
        "config/models.yaml",
        3,
        11,
        "text-davinci-003",
        "comment",
        &["retired:info"],
    ),
    ("config/models.yaml", 5, 15, "prod-chat-4o", "literal", &[]),
    (
        "config/models.yaml",
        6,
        13,
        "google/gemini-2.0-flash-001",
        "literal",
        &["retired:error"],
    ),
    (
        "data/models.json",
        1,
        14,
        "gemini-2.0-flash-001",
        "literal",
        &["retired:error"],
    ),
    (
        "data/models.json",
        1,
        47,
        "gpt-4.5-preview",
        "literal",
        &["retired:error"],
    ),
    (
        "data/models.json",
        1,
        66,
        "gpt-9o",
        "literal",
        &["alias:info"],
    ),
    (
        "data/models.json",
        1,
        90,
        "o1",
        "literal",
        &["retired:error"],
    ),
    (
        "docs/migration.md",
        3,
        16,
        "gpt-4-0613",
        "comment",
        &["retired:info"],
    ),
    ("docs/migration.md", 3, 31, "gpt-9o", "comment", &[]),
    (
        "docs/migration.md",
        3,
        43,
        "claude-3-opus-20240229",
        "comment",
        &["retired:info"],
    ),
    (
        "src/client.ts",
        1,
        9,
        "gpt-4-0613",
        "comment",
        &["retired:info"],
    ),
    (
        "src/client.ts",
        2,
        16,
        "gpt-4-0613",
        "literal",
        &["retired:error"],
    ),
    (
        "src/client.ts",
        3,
        17,
        "openai/gpt-9o:free",
        "literal",
        &["alias:info", "unpinned:info"],
    ),
    ("src/client.ts", 4, 55, "gpt-9o", "identifier", &[]),
    (
        "src/client.ts",
        6,
        15,
        "claude-3-haiku-20240307",
        "literal",
        &["retired:error"],
    ),
    (
        "src/client.ts",
        9,
        4,
        "gpt-3.5-turbo-0613",
        "comment",
        &["retired:info"],
    ),
    ("src/decoys.py", 4, 19, "gpt-9o", "identifier", &[]),
    ("src/decoys.py", 4, 40, "claude-3-haiku", "identifier", &[]),
    (
        "src/legacy_latin1.py",
        2,
        10,
        "gpt-4-0613",
        "literal",
        &["retired:error"],
    ),
    (
        "src/main.go",
        4,
        18,
        "us.anthropic.claude-3-5-haiku-20241022-v1:0",
        "literal",
        &["retired:warning"],
    ),
    (
        "src/main.go",
        5,
        17,
        "projects/p/locations/europe-west4/publishers/google/models/gemini-9.9-pro",
        "literal",
        &["served_differently:warning", "alias:info"],
    ),
    (
        "src/main.go",
        6,
        17,
        "models/gemini-2.0-flash-001",
        "literal",
        &["retired:error"],
    ),
    (
        "src/prompts.py",
        3,
        23,
        "claude-3-opus-20240229",
        "comment",
        &["retired:info"],
    ),
    (
        "src/prompts.py",
        4,
        10,
        "claude-3-opus-20240229",
        "literal",
        &["retired:error"],
    ),
    (
        "src/prompts.py",
        5,
        13,
        "gpt-9o",
        "literal",
        &["alias:info"],
    ),
    ("src/prompts.py", 6, 19, "gpt-9o", "identifier", &[]),
    ("src/prompts.py", 9, 11, "gpt-9o-2099-01-01", "literal", &[]),
    (
        "src/prompts.py",
        10,
        14,
        "o3-mini",
        "literal",
        &["retired:error"],
    ),
    (
        "src/prompts.py",
        12,
        23,
        "text-davinci-003",
        "literal",
        &["retired:error"],
    ),
    (
        "src/prompts.py",
        16,
        22,
        "gemini-9.9-flash-001",
        "literal",
        &["retiring:warning", "unpinned:info"],
    ),
    (
        "src/prompts.py",
        16,
        55,
        "gemini-9.9-pro",
        "literal",
        &["served_differently:warning", "alias:info"],
    ),
    (
        "web/bundle.min.js",
        1,
        1735,
        "claude-3-haiku-20240307",
        "literal",
        &["retired:error"],
    ),
];

type Row = (String, usize, usize, String, String, Vec<String>);

/// The fixture copied into a temporary project as `repo/`, its gitignore in place, a feed
/// retiring one ID in 20 days beside it, and a 50 MB generated file that must be skipped.
fn fixture() -> Test {
    let test = Test::new();
    copy_dir(Path::new(FIXTURE), &test.path("repo"));
    std::fs::rename(
        test.path("repo/dot-gitignore"),
        test.path("repo/.gitignore"),
    )
    .unwrap();
    let in_20_days = chrono::Utc::now().date_naive() + chrono::Days::new(20);
    let feed = format!(
        "[[fact]]\nprovider = \"gemini\"\nmodels = [\"gemini-9.9-flash-001\"]\nretires = {in_20_days}\nreplacement = \"gemini-9.9-flash-002\"\nsource = \"test feed\"\n"
    );
    let test = test.file("feed.toml", &feed);
    let mut big = std::fs::File::create(test.path("repo/src/generated_models.py")).unwrap();
    let line = "MODELS.append(\"gpt-4-0613\")  # generated\n";
    for _ in 0..=((50 << 20) / line.len()) {
        big.write_all(line.as_bytes()).unwrap();
    }
    test
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn scan(test: &Test, extra: &[&str]) -> Run {
    let mut args = vec!["--config", "repo/pins.toml", "scan", "repo"];
    args.extend_from_slice(extra);
    test.run(&args)
}

fn rows(json: &serde_json::Value) -> Vec<Row> {
    json["occurrences"]
        .as_array()
        .expect("occurrences")
        .iter()
        .map(|o| {
            let path = o["path"].as_str().unwrap();
            let findings = o["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    format!(
                        "{}:{}",
                        f["code"].as_str().unwrap(),
                        f["level"].as_str().unwrap()
                    )
                })
                .collect();
            (
                path.strip_prefix("repo/").unwrap_or(path).to_owned(),
                o["line"].as_u64().unwrap() as usize,
                o["column"].as_u64().unwrap() as usize,
                o["id"].as_str().unwrap().to_owned(),
                o["kind"].as_str().unwrap().to_owned(),
                findings,
            )
        })
        .collect()
}

fn expected() -> Vec<Row> {
    EXPECTED
        .iter()
        .map(|(path, line, column, id, kind, findings)| {
            (
                (*path).to_owned(),
                *line,
                *column,
                (*id).to_owned(),
                (*kind).to_owned(),
                findings.iter().map(|f| (*f).to_owned()).collect(),
            )
        })
        .collect()
}

#[test]
fn scan_finds_exactly_the_fixture_ids_with_their_kinds_and_findings() {
    let test = fixture();
    let run = scan(&test, &["--format", "json"]);
    run.code(1);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON report");
    let got: BTreeSet<Row> = rows(&json).into_iter().collect();
    let want: BTreeSet<Row> = expected().into_iter().collect();
    let hits = got.intersection(&want).count();
    let precision = hits as f64 / got.len().max(1) as f64;
    let recall = hits as f64 / want.len() as f64;
    println!(
        "scan fixture: precision {precision:.3}, recall {recall:.3} ({hits} of {} expected, {} reported)",
        want.len(),
        got.len()
    );
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing: {missing:#?}\nextra: {extra:#?}"
    );
    assert!(precision >= 0.98 && (recall - 1.0).abs() < f64::EPSILON);
    let summary = &json["summary"];
    assert_eq!(summary["skipped_large"], 1, "the 50 MB file: {summary}");
    assert_eq!(summary["skipped_binary"], 1, "assets/logo.bin: {summary}");
    assert_eq!(json["exit_code"], 1);
}

#[test]
fn scan_human_output_groups_by_id_most_urgent_first() {
    let test = fixture();
    let run = scan(&test, &[]);
    run.code(1);
    // The first finding under each ID header is its most urgent; IDs go most urgent first.
    let rank = |line: &str| {
        ["  error ", "  warning ", "  info "]
            .iter()
            .position(|p| line.starts_with(p))
    };
    let mut firsts = Vec::new();
    let mut lines = run.stdout.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with(' ') && !line.starts_with("scanned") {
            firsts.extend(lines.peek().and_then(|next| rank(next)));
        }
    }
    assert!(
        firsts.len() > 10 && firsts.is_sorted(),
        "{firsts:?}\n{}",
        run.stdout
    );
    assert_eq!((firsts[0], firsts[firsts.len() - 1]), (0, 2));
    assert!(
        run.stdout.contains("[[pin]]\n"),
        "a pin suggestion: {}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("skipped 1 over the size limit, 1 binary"),
        "{}",
        run.stdout
    );
}

#[test]
fn scan_sarif_is_valid_sarif_2_1_0_and_points_at_the_ids() {
    let test = fixture();
    let run = scan(&test, &["--format", "sarif"]);
    run.code(1);
    validate_sarif(&run.stdout);
    let log: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    assert!(rules.iter().all(|r| r["help"]["text"].is_string()));
    for result in results {
        let location = &result["locations"][0]["physicalLocation"];
        let uri = location["artifactLocation"]["uri"].as_str().unwrap();
        let bytes = std::fs::read(test.path(uri)).unwrap_or_else(|e| panic!("{uri}: {e}"));
        let content = String::from_utf8_lossy(&bytes);
        let region = &location["region"];
        let line = content
            .lines()
            .nth(region["startLine"].as_u64().unwrap() as usize - 1)
            .unwrap();
        let from = region["startColumn"].as_u64().unwrap() as usize - 1;
        let to = region["endColumn"].as_u64().unwrap() as usize - 1;
        let found: String = line.chars().skip(from).take(to - from).collect();
        assert_eq!(
            found,
            result["properties"]["modelId"].as_str().unwrap(),
            "{uri}"
        );
    }
    let fixes = results.iter().filter(|r| r["fixes"].is_array()).count();
    assert!(fixes > 0, "retired IDs with one successor carry a fix");
}

/// Validates against the vendored SARIF 2.1.0 schema.
fn validate_sarif(log: &str) {
    crate::harness::assert_valid_under_schema(SCHEMA, "Draft4Validator", log, "SARIF");
}

#[test]
fn scan_without_pins_toml_uses_the_builtin_table() {
    let test = Test::new()
        .file("app.py", "MODEL = 'gpt-4-0613'\n")
        .file("ok.py", "MODEL = 'gpt-9o-2099-01-01'\n");
    let run = test.run(&["scan"]);
    run.code(1);
    assert!(run.stdout.contains("retired"), "{}", run.stdout);
    let ok = test.run(&["scan", "ok.py"]);
    ok.code(0);
    let strict = test.run(&["scan", "ok.py", "--strict"]);
    strict.code(0);
    let named = test.run(&["--config", "missing.toml", "scan"]);
    named.code(2);
    assert!(named.stderr.contains("missing.toml"), "{}", named.stderr);
}

#[test]
fn scan_config_errors_are_the_config_diagnostics() {
    let run = Test::new()
        .pins("version = 1\n[setings]\n")
        .file("a.py", "M = 'gpt-4-0613'\n")
        .run(&["scan"]);
    run.code(2);
    assert!(run.stderr.contains("did you mean"), "{}", run.stderr);
}

#[test]
fn scan_of_a_missing_path_is_inconclusive_and_names_it() {
    let test = Test::new().file("a.py", "M = 'gpt-9o-2099-01-01'\n");
    let run = test.run(&["scan", "a.py", "no-such-dir"]);
    run.code(3);
    assert!(run.stdout.contains("no-such-dir"), "{}", run.stdout);
}

#[test]
fn scan_strict_fails_on_warnings() {
    let test = fixture().file("repo/warn/w.py", "M = 'gemini-9.9-pro'\n");
    let args = ["--config", "repo/pins.toml", "scan", "repo/warn"];
    test.run(&args).code(0);
    let strict = [&args[..], &["--strict"]].concat();
    test.run(&strict).code(1);
    let excluded = [&args[..], &["--strict", "--exclude", "*.py"]].concat();
    test.run(&excluded).code(0);
}

#[test]
fn scan_output_escapes_what_the_files_say() {
    let hostile = "M = 'gpt-4-0613'  # \u{1b}[2J\u{1b}]0;pwned\u{7} %0A::error ::injected\n";
    let test = Test::new()
        .file("a.py", hostile)
        .file("b\n::error ::x.py", "M = 'gpt-4-0613'\n");
    let human = test.run(&["scan"]);
    human.code(1);
    assert!(!human.stdout.contains('\u{1b}'), "{}", human.stdout);
    assert!(
        human.stdout.lines().all(|l| !l.starts_with("::")),
        "{}",
        human.stdout
    );
    let github = test.run(&["scan", "--format", "github"]);
    github.code(1);
    for line in github.stdout.lines() {
        assert!(
            line.starts_with("::error file=") || line.starts_with("::notice file="),
            "{line}"
        );
    }
    assert!(
        github.stdout.contains("b%0A%3A%3Aerror %3A%3Ax.py"),
        "{}",
        github.stdout
    );
    let json = test.run(&["scan", "--format", "json"]);
    let parsed: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(parsed["occurrences"].as_array().unwrap().len(), 2);
}

#[test]
fn scan_never_panics_on_odd_bytes() {
    let mut soup: Vec<u8> = (0..200_000u32)
        .map(|i| (i * 7919 % 251 + 1) as u8)
        .collect();
    soup.extend_from_slice(b"\xff\xfe'gpt-4-0613'");
    let test = Test::new().file("x.txt", "");
    std::fs::write(test.path("x.txt"), &soup).unwrap();
    std::fs::write(test.path("long.js"), "a".repeat(3 << 20) + "\"gpt-4-0613\"").unwrap();
    let run = test.run(&["scan", "--format", "json"]);
    run.code(1);
    let parsed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(parsed["occurrences"].as_array().unwrap().len(), 2);
    let small = test.run(&["scan", "--max-filesize", "1M"]);
    small.code(0);
    assert!(
        small.stdout.contains("skipped 1 over the size limit"),
        "{}",
        small.stdout
    );
}

/// Columns and context were once counted from the start of the line for every ID: quadratic on
/// a minified bundle (its time is in BENCHMARKS.md; here, that every column is still right).
#[test]
fn scan_of_one_long_line_with_many_ids_places_every_one() {
    let line = "\"gpt-4-0613\",".repeat(20_000);
    let test = Test::new().file("bundle.min.js", &line);
    let run = test.run(&["scan", "--format", "json"]);
    run.code(1);
    let parsed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let occurrences = parsed["occurrences"].as_array().unwrap();
    assert_eq!(occurrences.len(), 20_000);
    assert_eq!(occurrences[19_999]["column"], 19_999 * 13 + 2);
}

#[test]
fn scan_fix_prints_a_patch_and_edits_nothing() {
    let test = fixture();
    let before = test.read("repo/src/prompts.py");
    let run = scan(&test, &["--fix"]);
    run.code(1);
    assert!(
        run.stdout.contains(
            "--- a/repo/src/prompts.py\n+++ b/repo/src/prompts.py\n@@ -1,16 +1,16 @@\n\
             \x20\"\"\"Prompt helpers for the support bot.\"\"\"\n \n\
             \x20# The old default was claude-3-opus-20240229; see docs/migration.md.\n\
             -MODEL = \"claude-3-opus-20240229\"\n+MODEL = \"claude-opus-4-8\"\n\
             \x20FALLBACK = 'gpt-9o'\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("+    return {\"fast\": \"gemini-9.9-flash-002\""),
        "{}",
        run.stdout
    );
    assert_eq!(test.read("repo/src/prompts.py"), before);
    let applied = Command::new("git")
        .args(["apply", "--check", "-"])
        .current_dir(test.dir.path())
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(run.stdout.as_bytes())?;
            child.wait()
        });
    if let Ok(status) = applied {
        assert!(status.success(), "git apply --check rejects the patch");
    } else {
        assert!(std::env::var_os("CI").is_none(), "git is required in CI");
        eprintln!("notice: git not installed; the patch was not applied");
    }
}

#[test]
fn init_from_scan_writes_pins_that_load() {
    let test = Test::new()
        .file(
            "src/a.py",
            "A = 'gpt-9o-2099-01-01'\nB = \"claude-opus-9-20990101\"\n# 'gpt-7'\n",
        )
        .file("src/b.ts", "const c = 'codestral-2099';\n");
    test.run(&["init", "--from-scan"]).code(0);
    let pins = test.read("pins.toml");
    assert!(pins.contains("model = \"gpt-9o-2099-01-01\""), "{pins}");
    assert!(
        pins.contains("model = \"claude-opus-9-20990101\""),
        "{pins}"
    );
    assert!(!pins.contains("gpt-7"), "comments are not uses: {pins}");
    assert!(pins.contains("# \"codestral-2099\""), "{pins}");
    test.run(&["deprecations"]).code(0);
    let rescan = test.run(&["scan", "src"]);
    rescan.code(0);
    assert!(
        !rescan.stdout.contains("unpinned: `gpt-9o"),
        "{}",
        rescan.stdout
    );
    test.run(&["init", "--from-scan"]).code(2);
}

/// A Python package's metadata is its README behind a few RFC 822 headers: an sdist's
/// `PKG-INFO` (the openai 1.51.0 sdist's gave 14 errors and warnings where its README.md gave
/// none), an `*.egg-info/PKG-INFO`, a wheel's `*.dist-info/METADATA`. Every mention in them is
/// prose, like the same lines in README.md: a retired ID there is info, and the scan passes.
#[test]
fn scan_reads_package_metadata_as_prose_like_the_readme() {
    let body = "Long description of acme.\n\n## Usage\n\n```python\nclient.chat.completions.create(\n    model=\"gpt-4-0613\",\n    messages=[],\n)\n```\n";
    let headers = "Metadata-Version: 2.3\nName: acme\nVersion: 1.0.0\nSummary: An example client\nDescription-Content-Type: text/markdown\n\n";
    let metadata = format!("{headers}{body}");
    let test = Test::new()
        .file("acme-1.0.0/PKG-INFO", &metadata)
        .file("acme-1.0.0/README.md", body)
        .file("acme-1.0.0/src/acme.egg-info/PKG-INFO", &metadata)
        .file("acme-1.0.0.dist-info/METADATA", &metadata)
        .file("acme-1.0.0.dist-info/DESCRIPTION.rst", body);
    let run = test.run(&["scan", "--format", "json"]);
    run.code(0);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON report");
    let mut got: Vec<(String, String, String, Vec<String>)> = rows(&json)
        .into_iter()
        .map(|(path, _, _, id, kind, findings)| (path, id, kind, findings))
        .collect();
    got.sort();
    let want: Vec<(String, String, String, Vec<String>)> = [
        "acme-1.0.0.dist-info/DESCRIPTION.rst",
        "acme-1.0.0.dist-info/METADATA",
        "acme-1.0.0/PKG-INFO",
        "acme-1.0.0/README.md",
        "acme-1.0.0/src/acme.egg-info/PKG-INFO",
    ]
    .iter()
    .map(|path| {
        (
            (*path).to_owned(),
            "gpt-4-0613".to_owned(),
            "comment".to_owned(),
            vec!["retired:info".to_owned()],
        )
    })
    .collect();
    assert_eq!(got, want, "{}", run.stdout);
    assert_eq!(json["exit_code"], 0);
    // The same ID in code is still a use, and fails the scan.
    let code = test.file("acme-1.0.0/src/acme/client.py", "MODEL = \"gpt-4-0613\"\n");
    let run = code.run(&["scan", "--format", "json"]);
    run.code(1);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON report");
    let used: Vec<Row> = rows(&json)
        .into_iter()
        .filter(|row| row.0.ends_with("client.py"))
        .collect();
    assert_eq!(used.len(), 1, "{}", run.stdout);
    assert_eq!(used[0].4, "literal", "{}", run.stdout);
}

/// `--exclude-tests` skips what `init --from-scan` counts as tests, judged below the paths
/// given: a tree that itself lies under a `test` directory is still scanned.
#[test]
fn scan_exclude_tests_skips_test_files_and_keeps_the_rest() {
    let line = "MODEL = \"gpt-4-0613\"\n";
    let test = Test::new()
        .file("test/proj/src/x.py", line)
        .file("test/proj/src/latest.py", line)
        .file("test/proj/tests/test_x.py", line)
        .file("test/proj/tests/helpers.py", line)
        .file("test/proj/src/test_y.py", line)
        .file("test/proj/pkg/client_test.go", "var m = \"gpt-4-0613\"\n")
        .file("test/proj/web/__tests__/a.js", "const m = 'gpt-4-0613';\n")
        .file("test/proj/web/button.spec.ts", "const m = 'gpt-4-0613';\n")
        .file("test/proj/conftest.py", line);
    let paths = |run: &Run| -> Vec<String> {
        let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON report");
        let mut paths: Vec<String> = rows(&json).into_iter().map(|row| row.0).collect();
        paths.sort();
        paths
    };
    let all = test.run(&["scan", "test/proj", "--format", "json"]);
    all.code(1);
    assert_eq!(paths(&all).len(), 9, "{}", all.stdout);
    let run = test.run(&["scan", "test/proj", "--exclude-tests", "--format", "json"]);
    run.code(1);
    assert_eq!(
        paths(&run),
        ["test/proj/src/latest.py", "test/proj/src/x.py"],
        "{}",
        run.stdout
    );
    let only_tests = test.run(&[
        "scan",
        "test/proj/tests/test_x.py",
        "test/proj/pkg",
        "--exclude-tests",
    ]);
    only_tests.code(1);
    assert!(
        only_tests.stdout.contains("test_x.py") && !only_tests.stdout.contains("client_test.go"),
        "a file named on the command line is scanned: {}",
        only_tests.stdout
    );
    let help = test.run(&["scan", "--help"]);
    assert!(
        help.stdout.contains("--exclude-tests") && help.stdout.contains("conftest.py"),
        "{}",
        help.stdout
    );
}

/// `init --from-scan` judges test files by their path below the project, as `--exclude-tests`
/// does: a project under a directory named `test` is not all tests.
#[test]
fn init_from_scan_leaves_out_test_files_below_the_project_only() {
    let test = Test::new()
        .file("test/proj/src/a.py", "A = 'gpt-9o-2099-01-01'\n")
        .file(
            "test/proj/tests/test_a.py",
            "B = 'claude-opus-9-20990101'\n",
        );
    let config = test.path("test/proj/pins.toml");
    let config = config.to_str().unwrap();
    test.run(&["--config", config, "init", "--from-scan"])
        .code(0);
    let pins = test.read("test/proj/pins.toml");
    assert!(pins.contains("model = \"gpt-9o-2099-01-01\""), "{pins}");
    assert!(!pins.contains("claude-opus-9-20990101"), "{pins}");
}
