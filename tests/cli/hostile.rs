//! Hostile providers at the CLI and HTTP boundary: a key echoed back, control characters and
//! workflow commands in a served model ID, IDs long enough to crash a renderer or swell the store.

use std::path::Path;

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{FaultKind, Reported};

use crate::harness::{KEY_VAR, Sim, Test};
use crate::support::daemon::Daemon;
use crate::support::http::get;
use crate::support::pins::{Channel, Pin, Pins, Provider};
use crate::support::ports::ClosedPort;
use crate::support::receivers::Webhook;
use crate::world::{fault, model, single};

/// A key that must never be seen again once it is in the environment.
const MARKER: &str = "sk-marker-5eCr3t-0123456789";
const SLACK_MARKER: &str = "slack-marker-T0B0-0123456789";
const HOOK_SECRET: &str = "whsec_bWFya2VyLXdlYmhvb2stc2VjcmV0LTAxMjM0NTY3";
const ID: &str = "acme-pro-001";

/// Every file under `dir`, as bytes, with its path.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path.display().to_string(), bytes));
        }
    }
    out
}

#[track_caller]
fn assert_no_marker(what: &str, text: &[u8], marker: &str) {
    let hit = text.windows(marker.len()).any(|w| w == marker.as_bytes());
    assert!(
        !hit,
        "{what} contains the secret:\n{}",
        String::from_utf8_lossy(text)
    );
}

/// A provider whose every answer is a 401 quoting the key it was sent, in the body and a header.
fn echoing_sim() -> Sim {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: Bearer {MARKER}. You can find your API key at https://example.invalid","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.api_key = Some(MARKER.to_owned());
    Sim::start(fault(
        scenario,
        ID,
        None,
        FaultKind::Raw {
            status: 401,
            body,
            headers: vec![("x-echo".into(), format!("Bearer {MARKER}"))],
        },
    ))
}

/// The echoing provider's one pin, its key the marker.
fn echoing_pins(sim: &Sim) -> Pins {
    Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
}

fn echoing_project(pins: &Pins) -> Test {
    pins.project()
        .env(KEY_VAR, MARKER)
        .env("HOOK_SECRET", HOOK_SECRET)
}

#[test]
fn a_key_echoed_by_the_provider_appears_in_no_output_or_file() {
    let sim = echoing_sim();
    let summary_name = "step-summary.md";
    let test = echoing_project(&echoing_pins(&sim).short().each_pin("samples", 2))
        .file("modelpin.lock", &crate::baseline::bare_lock(&[("pin", ID)]));
    let summary = test.path(summary_name);
    let test = test.env("GITHUB_STEP_SUMMARY", summary.to_str().unwrap());
    let mut outputs = vec![("lock", test.run(&["lock"]))];
    for format in ["human", "json", "junit", "github"] {
        outputs.push((format, test.run(&["check", "--format", format])));
    }
    for (what, run) in &outputs {
        assert!(run.code == 3, "{what}: exit {}\n{}", run.code, run.stderr);
        assert_no_marker(what, run.stdout.as_bytes(), MARKER);
        assert_no_marker(what, run.stderr.as_bytes(), MARKER);
    }
    assert!(
        outputs[2]
            .1
            .stdout
            .contains("Incorrect API key provided: Bearer [redacted]"),
        "the provider's message is kept, masked: {}",
        outputs[2].1.stdout
    );
    assert!(summary.exists(), "the step summary was written");
    for (path, bytes) in files(test.dir.path()) {
        if !path.ends_with("pins.toml") {
            assert_no_marker(&path, &bytes, MARKER);
        }
    }
}

#[test]
fn a_key_echoed_to_the_daemon_reaches_no_store_history_log_metric_or_alert() {
    let sim = echoing_sim();
    let hook = Webhook::start();
    // A Slack hook nobody answers: its URL (a secret) must not reach the log or the outbox.
    let nobody = ClosedPort::new();
    let slack = nobody.url(&format!("/services/T0/B0/{SLACK_MARKER}"));
    let pins = echoing_pins(&sim)
        .setting("timeout", "3s")
        .setting("budget", "10s")
        .daemon()
        .each_pin("samples", 1)
        .each_pin("alerts", ["hook", "team"])
        .alert(Channel::webhook("hook", &hook.url()).set("secret_env", "HOOK_SECRET"))
        .alert(Channel::slack("team", "SLACK_URL"));
    // Every level of every library: the HTTP client's own logs included.
    let test = echoing_project(&pins)
        .env("RUST_LOG", "trace")
        .env("SLACK_URL", &slack);
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    // Slack's delivery was attempted (and failed: nobody listens), the webhook's succeeded.
    daemon.wait_scrape("an attempt at Slack and a webhook delivery", |s| {
        s.sum("modelpin_notifications_total", &[("channel", "team")]) >= 1.0
            && s.sum(
                "modelpin_notifications_total",
                &[("channel", "hook"), ("result", "delivered")],
            ) >= 1.0
    });
    assert!(
        !hook.hits().is_empty(),
        "the inconclusive alert was sent, and Slack's delivery failed: {}",
        daemon.log()
    );
    for hit in hook.hits() {
        assert_no_marker("webhook payload", &hit.body, MARKER);
        let headers = format!("{:?}", hit.headers);
        assert_no_marker("webhook headers", headers.as_bytes(), MARKER);
    }
    for path in ["/api/history", "/metrics", "/", "/healthz"] {
        let (_, head, body) = get(port, path).expect("daemon answers");
        assert_no_marker(path, head.as_bytes(), MARKER);
        assert_no_marker(path, body.as_bytes(), MARKER);
    }
    let history = daemon.history_run(&test, &["--format", "json"]);
    assert_no_marker("history", history.stdout.as_bytes(), MARKER);
    drop(daemon);
    for (path, bytes) in files(test.dir.path()) {
        if !path.ends_with("pins.toml") {
            assert_no_marker(&path, &bytes, MARKER);
            assert_no_marker(&path, &bytes, HOOK_SECRET);
            assert_no_marker(&path, &bytes, SLACK_MARKER);
        }
    }
}

#[test]
fn a_slack_url_in_a_delivery_error_is_masked() {
    let dead = ClosedPort::new();
    let slack = dead.url(&format!("/services/T000/B000/{MARKER}"));
    let test = Test::new()
        .pins("version = 1\n[alerts.team]\nkind = \"slack\"\nurl_env = \"SLACK_URL\"\n")
        .env("SLACK_URL", &slack);
    let run = test.run(&["alerts", "test"]);
    run.code(1);
    assert!(run.stdout.contains("team: FAILED"), "{}", run.stdout);
    assert_no_marker("alerts test stdout", run.stdout.as_bytes(), MARKER);
    assert_no_marker("alerts test stderr", run.stderr.as_bytes(), MARKER);
}

/// A provider that reports `served` as its model for every call.
fn reporting_sim(served: &str) -> Sim {
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.routes.get_mut(ID).unwrap().report = Reported::Fixed(served.to_owned());
    Sim::start(scenario)
}

pub fn plain_project(sim: &Sim, pin_id: &str) -> Test {
    Pins::new()
        .short()
        .provider(Provider::new(
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
        ))
        .pin(Pin::new(pin_id, ID).samples(1))
        .project()
        .file(
            "modelpin.lock",
            &crate::baseline::bare_lock(&[(pin_id, ID)]),
        )
}

/// Every output a user or a CI runner reads from `check` in each format, plus `lock`.
fn every_output(test: &Test) -> Vec<(String, i32, String)> {
    let summary_path = test.path("summary.md");
    let mut out = Vec::new();
    for format in ["human", "json", "junit", "github"] {
        let mut cmd = assert_cmd::Command::cargo_bin("modelpin").unwrap();
        cmd.current_dir(test.dir.path())
            .args(["check", "--format", format])
            .env("GITHUB_STEP_SUMMARY", &summary_path)
            .envs(test.envs().iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let run = cmd.output().unwrap();
        let code = run.status.code().unwrap_or(-1);
        for (stream, bytes) in [("stdout", run.stdout), ("stderr", run.stderr)] {
            let written = String::from_utf8_lossy(&bytes).into_owned();
            out.push((format!("check --format {format} ({stream})"), code, written));
        }
    }
    let summary = std::fs::read_to_string(&summary_path).unwrap_or_default();
    out.push(("step summary".to_owned(), 0, summary));
    let lock = test.run(&["lock"]);
    out.push(("lock (stderr)".to_owned(), lock.code, lock.stderr));
    out.push((
        "modelpin.lock".to_owned(),
        lock.code,
        test.read("modelpin.lock"),
    ));
    out
}

#[test]
fn a_served_model_with_control_bytes_and_workflow_commands_stays_data() {
    let hostile = "gpt-x\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}1m\n::error::injected\r\n::add-mask::x";
    let sim = reporting_sim(hostile);
    let test = plain_project(&sim, "pin");
    let outputs = every_output(&test);
    for (what, code, text) in &outputs {
        assert!(*code != 101 && *code != -1, "{what} crashed: {text}");
        let raw: Vec<char> = text
            .chars()
            .filter(|c| c.is_control() && *c != '\n')
            .collect();
        assert!(
            raw.is_empty(),
            "{what} writes raw control characters {raw:?}:\n{text}"
        );
        for line in text.lines() {
            let line = line.trim_start();
            assert!(
                !line.starts_with("::error::injected") && !line.starts_with("::add-mask::"),
                "{what}: provider text begins a line:\n{text}"
            );
        }
    }
    let json = &outputs[2].2;
    let report: serde_json::Value = serde_json::from_str(json).unwrap();
    assert!(
        report["pins"][0]["served_models"]
            .as_object()
            .unwrap()
            .contains_key(hostile),
        "JSON keeps the exact ID, escaped by JSON itself: {json}"
    );
}

#[test]
fn a_very_long_served_id_is_bounded_and_never_crashes_a_renderer() {
    let served = "s".repeat(65_600);
    let sim = reporting_sim(&served);
    let test = plain_project(&sim, "pin");
    let outputs = every_output(&test);
    for (what, code, text) in &outputs {
        assert!(
            *code != 101 && !text.contains("panicked"),
            "{what} crashed: {}",
            &text[..text.len().min(500)]
        );
        assert!(!text.contains(&served), "{what} holds the whole served ID");
    }
    let human = &outputs[0].2;
    assert_eq!(outputs[0].1, 1, "a served ID outside `accept` is drift");
    assert!(
        human.lines().all(|l| l.chars().count() < 1200),
        "lines are bounded: {}",
        &human[..human.len().min(2000)]
    );
}

#[test]
fn a_very_long_pin_id_is_a_config_error_not_a_crash() {
    let sim = reporting_sim(ID);
    let test = plain_project(&sim, &"p".repeat(70_000));
    let run = test.run(&["check"]);
    run.code(2);
    assert!(
        run.stderr
            .contains("`id` is 70000 characters long; at most 128 are allowed"),
        "{}",
        &run.stderr[..run.stderr.len().min(600)]
    );
}

#[test]
fn a_megabyte_model_id_adds_kilobytes_not_megabytes() {
    let served = "m".repeat(1_000_000);
    let sim = reporting_sim(&served);
    let test = plain_project(&sim, "pin");
    test.run(&["lock"]).code(0);
    let lock = std::fs::metadata(test.path("modelpin.lock")).unwrap().len();
    assert!(lock < 16 * 1024, "modelpin.lock is {lock} bytes");
    let json = test.run(&["check", "--format", "json"]);
    assert!(
        json.stdout.len() < 32 * 1024,
        "report is {} bytes",
        json.stdout.len()
    );
}
