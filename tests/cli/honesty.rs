//! No silent "ok": every way an audit can fall short of its plan ends inconclusive, through
//! gateways too. One test per way, each reading what a user reads.

use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{FaultKind, Reported, Scenario, SimError};

use crate::harness::{KEY, KEY_VAR, Sim, Test};
use crate::support::pins::{Pins, Value};
use crate::world::{fault, model, route, single};

const MODEL: &str = "acme-chat-1";

fn slow(latency_ms: u64) -> Scenario {
    let mut m = model(MODEL, 4.0, (1.0, 2.0));
    m.latency_ms = latency_ms;
    single(MODEL, m)
}

/// One pin of `MODEL` on the simulator, the arithmetic probe, no settings.
fn pins(sim: &Sim) -> Pins {
    Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), MODEL)
}

/// Runs `args`, sends SIGINT once the simulator has seen `after` requests, returns the output.
#[cfg(unix)]
fn interrupted(test: &Test, sim: &Sim, args: &[&str], after: usize) -> std::process::Output {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("modelpin"))
        .current_dir(test.dir.path())
        .args(args)
        .env(KEY_VAR, KEY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let started = Instant::now();
    while sim.requests() < after && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    child.wait_with_output().expect("exits")
}

#[cfg(unix)]
#[test]
fn an_interrupted_check_with_some_answers_is_inconclusive_not_ok() {
    let sim = Sim::start(slow(200));
    let test = pins(&sim)
        .setting("concurrency", 4)
        .each_pin("samples", 30)
        .project()
        .file(
            "modelpin.lock",
            &crate::baseline::bare_lock(&[("pin", MODEL)]),
        );
    let output = interrupted(&test, &sim, &["check", "--format", "json"], 8);
    assert_eq!(output.status.code(), Some(3), "exit 3, not 0");
    let report: crate::schema::Report = serde_json::from_slice(&output.stdout).expect("report");
    let pin = report.pin("pin");
    assert_eq!(pin.status, "inconclusive");
    assert!(pin.calls.ok > 0 && pin.calls.ok < 30, "{:?}", pin.calls);
    let finding = pin.finding("inconclusive");
    assert!(
        finding
            .message
            .contains("of 30 planned calls were not answered"),
        "{}",
        finding.message
    );
    assert_eq!(finding.evidence["planned"], 30);
    assert!(finding.evidence["cancelled"].as_u64().unwrap() > 0);
}

#[cfg(unix)]
#[test]
fn an_interrupted_lock_leaves_the_previous_lock_byte_for_byte() {
    let sim = Sim::start(slow(0));
    let test = pins(&sim)
        .setting("concurrency", 4)
        .each_pin("samples", 30)
        .project();
    test.run(&["lock"]).code(0);
    let before = std::fs::read(test.path("modelpin.lock")).unwrap();
    sim.set(slow(200));
    let seen = sim.requests();
    let output = interrupted(&test, &sim, &["lock"], seen + 8);
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("left as it was"), "{stderr}");
    assert_eq!(std::fs::read(test.path("modelpin.lock")).unwrap(), before);
}

/// An OpenAI chat completion as the simulator's raw fault sends it, with `usage` as given.
fn answer_with_usage(usage: &str) -> FaultKind {
    FaultKind::Raw {
        status: 200,
        body: format!(
            r#"{{"id":"chatcmpl-1","object":"chat.completion","model":"{MODEL}","choices":[{{"index":0,"message":{{"role":"assistant","content":"391"}},"finish_reason":"stop"}}]{usage}}}"#
        ),
        headers: vec![],
    }
}

#[test]
fn unusable_token_counts_are_unmeasured_not_unchanged() {
    for (usage, why) in [
        ("", "usage dropped"),
        (
            r#","usage":{"prompt_tokens":-5,"completion_tokens":1.5}"#,
            "negative and fractional",
        ),
        (
            r#","usage":{"prompt_tokens":18446744073709551615,"completion_tokens":18446744073709551615}"#,
            "near u64::MAX",
        ),
    ] {
        let sim = Sim::start(slow(0));
        let test = pins(&sim)
            .each_pin("price", Value::bare("{ input = 1.0, output = 2.0 }"))
            .project();
        test.run(&["lock"]).code(0);
        sim.set(fault(slow(0), MODEL, None, answer_with_usage(usage)));
        let run = test.run(&["check", "--format", "json"]);
        run.code(3);
        let report = run.json();
        let finding = report.pin("pin").finding("inconclusive");
        assert!(
            finding.message.contains("no usable prompt token count"),
            "{why}: {}",
            finding.message
        );
        assert!(
            report.summary.tokens.input < 1_000_000_000,
            "{why}: no wrap"
        );
        assert!(
            report.summary.cost_usd.unwrap_or(0.0) < 1.0,
            "{why}: {:?}",
            report.summary.cost_usd
        );
    }
}

/// The LiteLLM proxy's headers for a deployment (values as the proxy sends them).
fn litellm(deployment: &str, fallbacks: u32, cost: &str) -> FaultKind {
    FaultKind::Headers {
        headers: vec![
            ("x-litellm-model-name".into(), deployment.into()),
            ("x-litellm-model-id".into(), format!("id-{deployment}")),
            (
                "x-litellm-model-api-base".into(),
                "https://api.openai.com".into(),
            ),
            ("x-litellm-model-group".into(), "gpt-4o".into()),
            (
                "x-litellm-attempted-fallbacks".into(),
                fallbacks.to_string(),
            ),
            ("x-litellm-attempted-retries".into(), "0".into()),
            ("x-litellm-response-cost".into(), cost.into()),
        ],
    }
}

/// `gpt-4o` behind a gateway: the body always says `gpt-4o`.
fn gateway(deployment: &str, fallbacks: u32, cost: &str) -> Scenario {
    let mut s = single("gpt-4o", model("sim-deployment", 4.0, (2.5, 10.0)));
    s.routes.insert(
        "gpt-4o".into(),
        route("sim-deployment", Reported::Requested),
    );
    fault(s, "gpt-4o", None, litellm(deployment, fallbacks, cost))
}

fn gateway_project(sim: &Sim) -> Test {
    Pins::one(
        ProviderKind::OpenAiCompatible,
        &sim.url(ProviderKind::OpenAiCompatible),
        "gpt-4o",
    )
    .short()
    .project()
}

#[test]
fn a_deployment_swapped_behind_a_gateway_name_is_caught() {
    let sim = Sim::start(gateway("openai/gpt-4o-2024-08-06", 0, "0.000225"));
    let test = gateway_project(&sim);
    test.run(&["lock"]).code(0);
    assert!(
        test.read("modelpin.lock")
            .contains("openai/gpt-4o-2024-08-06")
    );
    test.run(&["check"]).code(0);
    sim.set(gateway("openai/gpt-4o-mini-2024-07-18", 0, "1.35e-05"));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("served_model_mismatch");
    assert_eq!(
        finding.evidence["unexpected"]["openai/gpt-4o-mini-2024-07-18"],
        3
    );
    assert_eq!(finding.evidence["public_names"]["gpt-4o"], 3);
    assert!(
        finding.message.contains("named `gpt-4o`"),
        "{}",
        finding.message
    );
}

#[test]
fn a_gateway_fallback_is_caught_with_the_gateway_cost() {
    let sim = Sim::start(gateway("openai/gpt-4o-2024-08-06", 0, "0.000225"));
    let test = gateway_project(&sim);
    test.run(&["lock"]).code(0);
    sim.set(gateway("openai/gpt-4o-mini-2024-07-18", 1, "1.35e-05"));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    let finding = pin.finding("served_model_mismatch");
    assert_eq!(
        finding.evidence["fallback_models"]["openai/gpt-4o-mini-2024-07-18"],
        3
    );
    assert!(
        finding.message.contains("a fallback, 3 times"),
        "{}",
        finding.message
    );
    let cost = pin.cost_usd.expect("the gateway's cost");
    assert!((cost - 3.0 * 1.35e-05).abs() < 1e-9, "{cost}");
    assert_eq!(pin.upstreams.get("https://api.openai.com"), Some(&3));
}

/// The LiteLLM proxy's answer for a public name it does not serve (HTTP 400).
fn invalid_model_name() -> FaultKind {
    FaultKind::Raw {
        status: 400,
        body: r#"{"error":{"message":"/chat/completions: Invalid model name passed in model=gpt-4o. Call `/v1/models` to view available models for your key.","type":"invalid_request_error","param":null,"code":"400"}}"#.into(),
        headers: vec![],
    }
}

/// The gateway no longer serves `gpt-4o`.
fn removed() -> Scenario {
    let mut s = gateway("openai/gpt-4o-2024-08-06", 0, "0.0002");
    s.routes.get_mut("gpt-4o").expect("route").faults.clear();
    fault(s, "gpt-4o", None, invalid_model_name())
}

#[test]
fn a_model_removed_from_a_gateway_is_not_found_and_never_empties_the_lock() {
    let sim = Sim::start(removed());
    let test = gateway_project(&sim);
    let run = test.run(&["lock"]);
    run.code(1);
    assert!(run.stderr.contains("not written"), "{}", run.stderr);
    assert!(!test.path("modelpin.lock").exists(), "no empty lock");
    sim.set(gateway("openai/gpt-4o-2024-08-06", 0, "0.0002"));
    test.run(&["lock"]).code(0);
    let good = test.read("modelpin.lock");
    sim.set(removed());
    test.run(&["lock"]).code(1);
    assert_eq!(test.read("modelpin.lock"), good, "the good lock is kept");
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("model_not_found");
    assert!(
        finding.message.contains("Invalid model name"),
        "{}",
        finding.message
    );
}

#[test]
fn answers_past_max_tokens_are_said_and_the_plan_is_an_estimate() {
    let sim = Sim::start(fault(
        slow(0),
        MODEL,
        None,
        answer_with_usage(r#","usage":{"prompt_tokens":20,"completion_tokens":50}"#),
    ));
    let test = pins(&sim).project().file(
        "modelpin.lock",
        &crate::baseline::bare_lock(&[("pin", MODEL)]),
    );
    let run = test.run(&["check", "--format", "json"]);
    assert!(
        run.stderr.contains("estimated") && !run.stderr.contains("at most"),
        "{}",
        run.stderr
    );
    let report = run.json();
    let finding = report.pin("pin").finding("max_tokens_exceeded");
    assert_eq!(finding.severity.as_deref(), Some("warning"));
    assert!(
        finding
            .message
            .contains("at most 8 completion tokens and got up to 50"),
        "{}",
        finding.message
    );
}

#[test]
fn an_unanswered_call_among_answers_is_no_all_clear() {
    let sim = Sim::start(fault(
        slow(0),
        MODEL,
        Some(1),
        FaultKind::Error {
            class: SimError::InvalidRequest,
            headers: vec![],
        },
    ));
    let test = pins(&sim).project().file(
        "modelpin.lock",
        &crate::baseline::bare_lock(&[("pin", MODEL)]),
    );
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    let report = run.json();
    let finding = report.pin("pin").finding("inconclusive");
    assert!(
        finding
            .message
            .contains("1 of 3 planned calls were not answered"),
        "{}",
        finding.message
    );
}
