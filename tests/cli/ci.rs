//! CI-native output: JUnit XML read back by a real XML parser, GitHub annotations and job
//! summary, `--output`, and the spend cap.

use std::process::{Command, Stdio};

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{Sim, Test, one_pin_with};
use crate::world::{model, reroute, single};

const ID: &str = "acme-large-2026-01-15";

fn drifted() -> (Sim, Test) {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let pins = one_pin_with(
        "timeout = \"3s\"\nbudget = \"20s\"",
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "",
    );
    let test = Test::new().pins(&pins).probes();
    test.run(&["lock"]).code(0);
    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        model("acme-large-2026-06-01", 3.0, (1.0, 2.0)),
        Reported::Honest,
    ));
    (sim, test)
}

/// Parses JUnit XML with Python's own XML parser and returns (suites, cases, failures, errors,
/// skipped, failure types) as the parser counts them, after checking the counts agree with the
/// attributes CI reporters read.
fn parse_junit(xml: &str) -> serde_json::Value {
    let script = r#"
import json, sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.read())
assert root.tag == "testsuites", root.tag
out = {"suites": 0, "cases": 0, "failures": 0, "errors": 0, "skipped": 0, "types": [], "props": {}}
for suite in root.findall("testsuite"):
    cases = suite.findall("testcase")
    counts = {k: sum(1 for c in cases if c.find(k) is not None) for k in ("failure", "error", "skipped")}
    assert int(suite.get("tests")) == len(cases)
    assert int(suite.get("failures")) == counts["failure"]
    assert int(suite.get("errors")) == counts["error"]
    assert int(suite.get("skipped")) == counts["skipped"]
    out["suites"] += 1
    out["cases"] += len(cases)
    out["failures"] += counts["failure"]
    out["errors"] += counts["error"]
    out["skipped"] += counts["skipped"]
    out["types"] += [c.find("failure").get("type") for c in cases if c.find("failure") is not None]
    out["props"] = {p.get("name"): p.get("value") for p in suite.find("properties")}
    out["skipped_checks"] = out.get("skipped_checks", []) + [c.get("name") for c in cases if c.find("skipped") is not None]
    for c in cases:
        f = c.find("failure")
        if f is not None:
            # What to do, a blank line, then the evidence as JSON.
            action, blank, evidence = f.text.partition("\n\n")
            assert action.startswith("\u2192 ") and "\n" not in action, f.text
            json.loads(evidence)
assert int(root.get("failures")) == out["failures"]
print(json.dumps(out))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), xml.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the XML parser rejected the report: {}\n{xml}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn junit_has_one_suite_per_pin_and_a_failure_per_error_finding() {
    let (_sim, test) = drifted();
    let run = test.run(&["check", "--format", "junit"]);
    run.code(1);
    let parsed = parse_junit(&run.stdout);
    assert_eq!(parsed["suites"], 1);
    assert_eq!(parsed["cases"], 7);
    assert_eq!(parsed["errors"], 0);
    let types: Vec<&str> = parsed["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(
        types.contains(&"served_model_mismatch") && types.contains(&"tokenizer_changed"),
        "{types:?}"
    );
    // An OpenAI-style provider names no upstream host: that check does not apply, and does not
    // pass either.
    let skipped = parsed["skipped_checks"].as_array().unwrap();
    assert!(
        skipped.contains(&serde_json::json!("upstream")),
        "{skipped:?}"
    );
    assert!(
        run.stdout
            .contains("does not apply: the provider names no upstream host"),
        "{}",
        run.stdout
    );
    assert!(
        parsed["props"]["config_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(
        parsed["props"]["lock_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
}

#[test]
fn junit_marks_an_unmeasured_pin_as_an_error_with_skipped_checks() {
    let (sim, test) = drifted();
    drop(sim);
    let run = test.run(&["check", "--format", "junit"]);
    run.code(3);
    let parsed = parse_junit(&run.stdout);
    assert_eq!(parsed["errors"], 1);
    assert_eq!(parsed["failures"], 0);
    assert_eq!(parsed["skipped"], 6);
}

#[test]
fn github_format_annotates_the_pin_line_and_appends_the_job_summary() {
    let (_sim, test) = drifted();
    let summary = test.path("summary.md");
    std::fs::write(&summary, "previous step\n").unwrap();
    let test = test.env("GITHUB_STEP_SUMMARY", summary.to_str().unwrap());
    let run = test.run(&["check", "--format", "github"]);
    run.code(1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("::notice title=modelpin::checked config sha256:"),
        "{}",
        lines[0]
    );
    let pin_line = test
        .read("pins.toml")
        .lines()
        .position(|l| l.trim() == "id = \"pin\"")
        .unwrap()
        + 1;
    let mismatch = lines
        .iter()
        .find(|l| l.contains("served_model_mismatch"))
        .expect("annotation");
    assert!(
        mismatch.starts_with(&format!(
            "::error file=pins.toml,line={pin_line},title=modelpin pin%3A served_model_mismatch::"
        )),
        "{mismatch}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("previous step\n## modelpin: drift"),
        "appended, not overwritten: {md}"
    );
    assert!(
        md.contains("| pin | p | `acme-large-2026-01-15` | drift |")
            && md.contains("served_model_mismatch"),
        "{md}"
    );
}

#[test]
fn output_writes_the_report_to_a_file_and_the_table_to_the_terminal() {
    let (_sim, test) = drifted();
    let run = test.run(&["check", "--format", "json", "--output", "report.json"]);
    run.code(1);
    assert!(
        run.stdout.contains("PIN") && run.stdout.contains("DRIFT"),
        "human table on stdout: {}",
        run.stdout
    );
    let report: crate::schema::Report = serde_json::from_str(&test.read("report.json")).unwrap();
    assert_eq!(report.status, "drift");
}

#[test]
fn a_plan_estimated_over_the_spend_cap_is_refused_before_any_call() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    // 4,000 USD per million tokens: each call is estimated at about a dime.
    let pins = one_pin_with(
        "timeout = \"3s\"\nbudget = \"20s\"",
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "samples = 10\nprice = { input = 4000.0, output = 4000.0 }",
    );
    let test = Test::new()
        .pins(&pins)
        .probes()
        .file("modelpin.lock", &crate::baseline::bare_lock(&[("pin", ID)]));
    for args in [
        &["lock", "--max-cost", "0.10"][..],
        &["check", "--max-cost", "0.10"],
        &["check"],
    ] {
        let run = test.run(args);
        run.code(2);
        assert!(
            run.stderr.contains("over the spend cap") && run.stderr.contains("--max-cost"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(sim.requests(), 0, "nothing was sent");
    assert_eq!(
        test.read("modelpin.lock"),
        crate::baseline::bare_lock(&[("pin", ID)]),
        "the lock was left as it was"
    );
}

#[test]
fn the_spend_cap_stops_probing_and_says_why() {
    // The provider's tokenizer counts about eight times the tokens the plan estimates, so the
    // plan passes the guard and the running cap has to stop it.
    let sim = Sim::start(single(ID, model(ID, 0.5, (1.0, 2.0))));
    let pins = one_pin_with(
        "timeout = \"3s\"\nbudget = \"20s\"\nconcurrency = 1",
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "samples = 10\nprice = { input = 100.0, output = 100.0 }",
    );
    let test = Test::new().pins(&pins).probes();
    let plan = test.run(&["lock", "--samples", "10", "--max-cost", "0.08"]);
    assert!(
        plan.stderr.contains("20 calls planned") && plan.stderr.contains(", about $0.0640"),
        "{}",
        plan.stderr
    );
    plan.code(3);
    let before = sim.requests();
    let run = test.run(&["check", "--format", "json", "--max-cost", "0.08"]);
    run.code(3);
    let report = run.json();
    let pin = report.pin("pin");
    assert!(
        pin.calls.sent < 20,
        "stopped early: {} calls",
        pin.calls.sent
    );
    assert_eq!(sim.requests() - before, pin.calls.sent as usize);
    let spent = pin.cost_usd.unwrap();
    assert!(
        (0.08..0.11).contains(&spent),
        "stops at the cap, not long after: ${spent}"
    );
    let reasons = pin
        .findings
        .iter()
        .map(|f| format!("{} {}", f.message, f.evidence))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        reasons.contains("spend cap ($0.08) was reached"),
        "{reasons}"
    );
}
