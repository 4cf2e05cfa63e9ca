//! Hostile providers and hostile configs at the CLI and HTTP boundary: one test per way a
//! provider or a careless setup could leak a key, inject a command or crash us.

use std::path::Path;
use std::time::Duration;

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::FaultKind;

use crate::daemon::{Daemon, free_port, get, until};
use crate::harness::{KEY_VAR, Sim, Test, one_pin_with};
use crate::receivers::Webhook;
use crate::world::{fault, model, single};

/// A key that must never be seen again once it is in the environment.
const MARKER: &str = "sk-marker-5eCr3t-0123456789";
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

fn echoing_project(sim: &Sim, settings: &str, extra: &str) -> Test {
    Test::new()
        .pins(&one_pin_with(
            settings,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            extra,
        ))
        .file("probes/arith.toml", crate::harness::ARITH)
        .env(KEY_VAR, MARKER)
        .env("HOOK_SECRET", HOOK_SECRET)
}

#[test]
fn a_key_echoed_by_the_provider_appears_in_no_output_or_file() {
    let sim = echoing_sim();
    let summary_name = "step-summary.md";
    let test = echoing_project(&sim, crate::harness::SETTINGS, "samples = 2");
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
    let hook = Webhook::start(0, None);
    let port = free_port();
    let settings = format!(
        "timeout = \"3s\"\nbudget = \"10s\"\nschedule = \"* * * * * *\"\nmetrics = \"127.0.0.1:{port}\"\nstore = \"store\""
    );
    let extra = "samples = 1\nalerts = [\"hook\"]";
    let test = echoing_project(&sim, &settings, extra).file(
        "pins.toml",
        &format!(
            "{}\n[alerts.hook]\nkind = \"webhook\"\nurl = \"{}\"\nsecret_env = \"HOOK_SECRET\"\n",
            one_pin_with(
                &settings,
                ProviderKind::OpenAi,
                &sim.url(ProviderKind::OpenAi),
                ID,
                extra
            ),
            hook.url()
        ),
    );
    let daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(30), || !hook.hits().is_empty()),
        "the inconclusive alert was sent: {}",
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
    let history = test.run(&["history", "--format", "json"]);
    assert_no_marker("history", history.stdout.as_bytes(), MARKER);
    drop(daemon);
    for (path, bytes) in files(test.dir.path()) {
        if !path.ends_with("pins.toml") {
            assert_no_marker(&path, &bytes, MARKER);
            assert_no_marker(&path, &bytes, HOOK_SECRET);
        }
    }
}

#[test]
fn a_slack_url_in_a_delivery_error_is_masked() {
    let dead = free_port();
    let slack = format!("http://127.0.0.1:{dead}/services/T000/B000/{MARKER}");
    let test = Test::new()
        .pins("version = 1\n[alerts.team]\nkind = \"slack\"\nurl_env = \"SLACK_URL\"\n")
        .env("SLACK_URL", &slack);
    let run = test.run(&["alerts", "test"]);
    run.code(1);
    assert!(run.stdout.contains("team: FAILED"), "{}", run.stdout);
    assert_no_marker("alerts test stdout", run.stdout.as_bytes(), MARKER);
    assert_no_marker("alerts test stderr", run.stderr.as_bytes(), MARKER);
}
