//! Lifecycle through the simulator: retirement dates passing while the ID still answers,
//! provider signals (Sunset, models endpoint shutdown_date), feeds that fail, and the
//! `deprecations` command. Dates are computed from today so the tests do not age.

use chrono::{Duration, Utc};
use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{FaultKind, FeedDoc, Reported, SimError};

use crate::harness::{Sim, Test};
use crate::support::pins::{Pins, Value};
use crate::world::{fault, model, reroute, single};

/// A model ID no lifecycle table lists: only what the test sets applies.
const ID: &str = "acme-chat-2026-02-01";

fn day(offset: i64) -> String {
    (Utc::now().date_naive() + Duration::days(offset)).to_string()
}

/// A locked project pinning `ID` on `kind`, retiring on `retires_on` when given.
fn locked(kind: ProviderKind, sim: &Sim, retires_on: Option<String>) -> Test {
    let mut pins = Pins::one(kind, &sim.url(kind), ID).short();
    if let Some(date) = retires_on {
        pins = pins.each_pin("retires_on", Value::bare(&date));
    }
    pins.test().probes().locked()
}

#[test]
fn a_retired_id_that_still_answers_is_retired_still_served() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = locked(ProviderKind::Gemini, &sim, Some(day(-10)));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    assert_eq!(
        pin.codes(),
        vec!["retired_still_served"],
        "nothing else changed"
    );
    let finding = pin.finding("retired_still_served");
    assert!(
        finding
            .message
            .contains(&format!("was retired on {}", day(-10))),
        "{}",
        finding.message
    );
    assert!(
        finding.message.contains("presumed rerouted"),
        "{}",
        finding.message
    );
    assert_eq!(finding.evidence["reroute"]["served_id_changed"], false);
    assert_eq!(finding.evidence["days_left"], -10);
    assert_eq!(pin.lifecycle.as_ref().unwrap().stage, "retired");
}

#[test]
fn a_retired_id_rerouted_gets_both_findings_with_the_reroute_evidence() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = locked(ProviderKind::Gemini, &sim, Some(day(-1)));
    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        model("acme-flash-2026-09-01", 3.3, (0.3, 0.6)),
        Reported::Honest,
    ));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    for code in [
        "served_model_mismatch",
        "tokenizer_changed",
        "retired_still_served",
    ] {
        assert!(pin.codes().contains(&code), "{code} in {:?}", pin.codes());
    }
    let evidence = &pin.finding("retired_still_served").evidence["reroute"];
    assert_eq!(evidence["served_id_changed"], true);
    assert_eq!(evidence["tokenizer_changed"], true);
}

#[test]
fn a_sunset_header_is_sunset_announced() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = locked(ProviderKind::Anthropic, &sim, None);
    let sunset = httpdate::fmt_http_date(
        std::time::SystemTime::now() + std::time::Duration::from_secs(200 * 86_400),
    );
    sim.set(fault(
        sim.sim.scenario(),
        ID,
        None,
        FaultKind::Headers {
            headers: vec![("Sunset".into(), sunset.clone())],
        },
    ));
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    let report = run.json();
    let finding = report.pin("pin").finding("sunset_announced");
    assert_eq!(finding.severity.as_deref(), Some("warning"));
    assert!(finding.message.contains(&sunset), "{}", finding.message);
    // 200 days is beyond every warn_before window: the schedule is info, the announcement a warning.
    assert_eq!(
        report
            .pin("pin")
            .finding("deprecation_scheduled")
            .severity
            .as_deref(),
        Some("info")
    );
}

#[test]
fn a_models_endpoint_shutdown_date_in_20_days_warns_and_fails_only_with_strict() {
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.routes.get_mut(ID).unwrap().shutdown_date = Some(day(20));
    let sim = Sim::start(scenario);
    let test = locked(ProviderKind::OpenAi, &sim, None);
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    let report = run.json();
    let pin = report.pin("pin");
    let finding = pin.finding("deprecation_scheduled");
    assert_eq!(finding.severity.as_deref(), Some("warning"));
    assert_eq!(finding.evidence["days_left"], 20);
    assert_eq!(finding.evidence["window"], "30d");
    assert!(
        pin.codes().contains(&"sunset_announced"),
        "the provider said so itself: {:?}",
        pin.codes()
    );
    test.run(&["check", "--strict"]).code(1);
    let models_calls = sim
        .sim
        .all_requests()
        .iter()
        .filter(|r| r.path.ends_with(&format!("/models/{ID}")))
        .count();
    assert_eq!(
        models_calls, 2,
        "one models lookup per audit, not one per call"
    );
}

#[test]
fn a_feed_that_fails_is_a_warning_and_the_last_good_copy_is_used() {
    let feed = format!(
        r#"[[fact]]
id = "acme-chat"
provider = "gemini"
models = ["{ID}"]
retires = {}
replacement = "acme-chat-next"
source = "acme status page"
"#,
        day(45)
    );
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.feeds.insert(
        "acme.toml".into(),
        FeedDoc {
            status: 200,
            body: feed,
        },
    );
    let sim = Sim::start(scenario);
    let feed = format!("http://{}/feeds/acme.toml", sim.sim.addr());
    let test = Pins::one(ProviderKind::Gemini, &sim.url(ProviderKind::Gemini), ID)
        .short()
        .setting("deprecation_feeds", [feed.as_str()])
        .test()
        .probes();
    test.run(&["lock"]).code(0);
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    assert_eq!(
        run.json()
            .pin("pin")
            .finding("deprecation_scheduled")
            .evidence["days_left"],
        45
    );

    let mut broken = sim.sim.scenario();
    broken.feeds.insert(
        "acme.toml".into(),
        FeedDoc {
            status: 500,
            body: "upstream down".into(),
        },
    );
    sim.set(broken);
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    assert!(
        run.stderr.contains("HTTP 500") && run.stderr.contains("using the copy fetched at"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.json()
            .pin("pin")
            .finding("deprecation_scheduled")
            .evidence["days_left"],
        45,
        "cached copy used"
    );
}

#[test]
fn a_feed_never_fetched_that_fails_only_warns() {
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.feeds.insert(
        "down.json".into(),
        FeedDoc {
            status: 500,
            body: String::new(),
        },
    );
    let sim = Sim::start(scenario);
    let feed = format!("http://{}/feeds/down.json", sim.sim.addr());
    let test = Pins::one(ProviderKind::Gemini, &sim.url(ProviderKind::Gemini), ID)
        .short()
        .setting("deprecation_feeds", [feed.as_str()])
        .test()
        .probes();
    test.run(&["lock"]).code(0);
    let run = test.run(&["check"]);
    run.code(0);
    assert!(run.stderr.contains("no earlier copy"), "{}", run.stderr);
}

#[test]
fn not_found_says_retired_per_source_or_unknown() {
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    let sim = Sim::start(scenario.clone());
    let test = locked(ProviderKind::OpenAi, &sim, Some(day(-3)));
    scenario.routes.clear();
    sim.set(scenario.clone());
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let message = run
        .json()
        .pin("pin")
        .finding("model_not_found")
        .message
        .clone();
    assert!(
        message.contains(&format!("was retired on {} per pins.toml", day(-3))),
        "{message}"
    );

    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .short()
        .test()
        .probes()
        .file("modelpin.lock", &crate::baseline::bare_lock(&[("pin", ID)]));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let message = run
        .json()
        .pin("pin")
        .finding("model_not_found")
        .message
        .clone();
    assert!(message.contains("unknown model"), "{message}");
}

#[test]
fn a_retired_model_answering_only_quota_errors_is_a_possible_masked_retirement() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = locked(ProviderKind::OpenAi, &sim, Some(day(-2)));
    sim.set(fault(
        sim.sim.scenario(),
        ID,
        None,
        FaultKind::Error {
            class: SimError::Quota,
            headers: vec![],
        },
    ));
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    let message = run
        .json()
        .pin("pin")
        .finding("inconclusive")
        .message
        .clone();
    assert!(
        message.contains("possible retirement masked by quota"),
        "{message}"
    );
}

#[test]
fn deprecations_lists_pins_within_a_window_with_sources() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = Pins::one(ProviderKind::Gemini, &sim.url(ProviderKind::Gemini), ID)
        .short()
        .each_pin("retires_on", Value::bare(&day(12)))
        .test()
        .probes();
    let run = test.run(&["deprecations", "--within", "30d", "--format", "json"]);
    run.code(0);
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(rows[0]["pin"], "pin");
    assert_eq!(rows[0]["days_left"], 12);
    assert_eq!(rows[0]["sources"][0]["source"], "pins.toml `retires_on`");
    let none = test.run(&["deprecations", "--within", "7d"]);
    none.code(0);
    assert!(
        none.stdout.contains("no pinned model retires"),
        "{}",
        none.stdout
    );
    // Works without any key set: it calls no provider.
    let keyless = Test::new().pins(&test.read("pins.toml")).probes();
    let mut cmd = assert_cmd::Command::cargo_bin("modelpin").unwrap();
    let out = cmd
        .current_dir(keyless.dir.path())
        .args(["deprecations"])
        .env_remove(crate::harness::KEY_VAR)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn deprecations_data_prints_the_built_in_table_with_sources() {
    let run = Test::new().run(&["deprecations", "--data", "--format", "json"]);
    run.code(0);
    let facts: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
    assert!(facts.len() >= 40, "{}", facts.len());
    assert!(
        facts
            .iter()
            .all(|f| f["source"].as_str().is_some_and(|s| !s.is_empty()))
    );
    assert!(facts.iter().any(|f| {
        f["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "gemini-2.5-pro")
    }));
}

/// A project with one pin of `ID` retiring `offset` days from today (`retires_on`), nothing else
/// known about it; `deprecations` calls no provider, so no simulator is needed.
fn retiring_in(offset: i64) -> Test {
    Test::new()
        .pins(&format!(
            "version = 1\n\n[providers.p]\nkind = \"openai\"\napi_key_env = \"{}\"\n\n[[pin]]\nid = \"pin\"\nprovider = \"p\"\nmodel = \"{ID}\"\nretires_on = {}\nprobes = [\"probes/*.toml\"]\n",
            crate::harness::KEY_VAR,
            day(offset)
        ))
        .probes()
}

/// The first line is a header row and each pin's row lines up under it.
#[track_caller]
fn assert_headed(stdout: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("PIN  ") && lines[0].ends_with("STATUS"),
        "a header row: {stdout}"
    );
    let model = lines[0].find("MODEL").unwrap();
    let status = lines[0].find("STATUS").unwrap();
    assert_eq!(lines[1].find(ID), Some(model), "{stdout}");
    assert!(
        lines[1][status..].starts_with("RETIRED") || lines[1][status..].starts_with("retires"),
        "{stdout}"
    );
}

#[test]
fn deprecations_exits_1_on_a_retired_pin_as_check_would() {
    let test = retiring_in(-3);
    let run = test.run(&["deprecations"]);
    run.code(1);
    assert_headed(&run.stdout);
    assert!(run.stdout.contains("RETIRED"), "{}", run.stdout);
    let json = test.run(&["deprecations", "--format", "json"]);
    json.code(1);
    let rows: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON, no header");
    assert_eq!(rows[0]["stage"], "retired", "{}", json.stdout);
    // Narrowed by --within, the retired pin is still listed, and still fails.
    test.run(&["deprecations", "--within", "7d"]).code(1);
    // --data lists the table and judges no pin.
    test.run(&["deprecations", "--data"]).code(0);
}

#[test]
fn deprecations_strict_fails_on_a_pin_inside_a_warn_before_window() {
    let test = retiring_in(10);
    let run = test.run(&["deprecations"]);
    run.code(0);
    assert_headed(&run.stdout);
    assert!(run.stdout.contains("10 days left"), "{}", run.stdout);
    test.run(&["deprecations", "--strict"]).code(1);
    test.run(&["deprecations", "--strict", "--format", "json"])
        .code(1);
    // Outside the window --within asks for, the pin is not listed, so nothing fails.
    test.run(&["deprecations", "--strict", "--within", "5d"])
        .code(0);
}

#[test]
fn deprecations_passes_a_pin_far_from_retirement() {
    let test = retiring_in(400);
    let run = test.run(&["deprecations"]);
    run.code(0);
    assert_headed(&run.stdout);
    test.run(&["deprecations", "--strict"]).code(0);
    test.run(&["deprecations", "--strict", "--format", "json"])
        .code(0);
}

#[test]
fn deprecations_data_starts_with_a_header_row() {
    let run = Test::new().run(&["deprecations", "--data"]);
    run.code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let header = lines[0];
    assert!(
        header.starts_with("PROVIDER  ")
            && ["ANNOUNCED", "RETIRES", "NOTE"]
                .iter()
                .all(|c| header.contains(c)),
        "{header}"
    );
    let retires = header.find("RETIRES").unwrap();
    let row = lines[1];
    assert!(
        row[retires..].starts_with(char::is_numeric),
        "the rows line up under the header:\n{header}\n{row}"
    );
    assert!(
        lines.iter().all(|l| !l.ends_with(' ')),
        "no trailing spaces"
    );
    let help = Test::new().run(&["deprecations", "--help"]);
    assert!(
        help.stdout.contains("Exit 0 ok, 1 a listed pin is retired"),
        "{}",
        help.stdout
    );
}
