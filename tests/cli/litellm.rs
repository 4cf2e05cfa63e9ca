//! Against the real LiteLLM proxy (PyPI `litellm[proxy]`, pinned in .ci/run) on loopback. Its
//! deployments answer with `mock_response`, so nothing leaves the machine. The proxy rewrites
//! the body's `model` to the public name, so only its headers show a swap; these tests prove
//! modelpin reads them. `MODELPIN_LITELLM` names the `litellm` program (default: on PATH); a
//! missing program fails under CI and skips elsewhere.

use std::fmt::Write as _;

use modelpin::provider::ProviderKind;

use crate::harness::{KEY_VAR, Test};
use crate::support::litellm::{Proxy, program};
use crate::support::pins::Pins;

/// Any non-public key: LiteLLM refuses to start without one and rejects well-known ones.
const MASTER_KEY: &str = "sk-modelpin-litellm-test";

const PROBE: &str = r#"id = "greet"
prompt = "Say hello."
max_tokens = 32
temperature = 1.0
compare = "choice"
"#;

/// A deployment behind a public name: `(public name, litellm model, mock answer)`.
type Deployment<'a> = (&'a str, &'a str, &'a str);

fn config(deployments: &[Deployment<'_>], fallbacks: &str) -> String {
    let mut text = String::from("model_list:\n");
    for (name, model, answer) in deployments {
        let _ = write!(
            text,
            "  - model_name: {name}\n    litellm_params:\n      model: {model}\n      api_key: sk-not-used\n      mock_response: \"{answer}\"\n"
        );
    }
    text.push_str(fallbacks);
    let _ = write!(
        text,
        "general_settings:\n  master_key: {MASTER_KEY}\nlitellm_settings:\n  telemetry: false\n"
    );
    text
}

const STABLE: &[Deployment<'_>] = &[
    ("gpt-4o", "openai/gpt-4o-2024-08-06", "Hello"),
    ("gpt-4o-mini", "openai/gpt-4o-mini-2024-07-18", "Hello"),
];

/// A project pinning `gpt-4o` at the proxy; `url` can be changed for a restarted proxy.
fn project(url: &str) -> Test {
    let pins = Pins::one(ProviderKind::OpenAiCompatible, url, "gpt-4o").short();
    Test::new()
        .pins(&pins.to_toml())
        .file("probes/greet.toml", PROBE)
        .env(KEY_VAR, MASTER_KEY)
}

fn repoint(test: &Test, old: &Proxy, new: &Proxy) {
    let pins = test.read("pins.toml").replace(&old.url(), &new.url());
    std::fs::write(test.path("pins.toml"), pins).unwrap();
}

#[test]
fn litellm_stable_deployment_locks_and_checks_clean_then_a_swap_is_caught() {
    let Some(program) = program() else { return };
    let stable = Proxy::start(&program, &config(STABLE, ""));
    let test = project(&stable.url());
    test.run(&["lock"]).code(0);
    let lock = test.read("modelpin.lock");
    assert!(lock.contains("openai/gpt-4o-2024-08-06"), "{lock}");
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    assert_eq!(run.json().pin("pin").status, "ok");
    let swapped = Proxy::start(
        &program,
        &config(
            &[
                ("gpt-4o", "openai/gpt-4o-mini-2024-07-18", "Hello"),
                ("gpt-4o-mini", "openai/gpt-4o-mini-2024-07-18", "Hello"),
            ],
            "",
        ),
    );
    repoint(&test, &stable, &swapped);
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("served_model_mismatch");
    assert_eq!(
        finding.evidence["unexpected"]["openai/gpt-4o-mini-2024-07-18"],
        3
    );
    assert_eq!(finding.evidence["public_names"]["gpt-4o"], 3);
}

#[test]
fn litellm_fallback_is_caught_with_the_fallback_and_the_gateway_cost() {
    let Some(program) = program() else { return };
    let stable = Proxy::start(&program, &config(STABLE, ""));
    let test = project(&stable.url());
    test.run(&["lock"]).code(0);
    let failing = Proxy::start(
        &program,
        &config(
            &[
                (
                    "gpt-4o",
                    "openai/gpt-4o-2024-08-06",
                    "litellm.RateLimitError",
                ),
                ("gpt-4o-mini", "openai/gpt-4o-mini-2024-07-18", "Hello"),
            ],
            "router_settings:\n  num_retries: 0\n  fallbacks: [{\"gpt-4o\": [\"gpt-4o-mini\"]}]\n",
        ),
    );
    repoint(&test, &stable, &failing);
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    let finding = pin.finding("served_model_mismatch");
    assert_eq!(
        finding.evidence["fallback_models"]["openai/gpt-4o-mini-2024-07-18"], 3,
        "{:#}",
        finding.evidence
    );
    // The gateway's own charge for the fallback model, not the pinned model's price.
    let cost = pin.cost_usd.expect("x-litellm-response-cost");
    assert!(cost > 0.0 && cost < 3.0 * 1e-4, "{cost}");
}

#[test]
fn litellm_model_removed_from_the_gateway_is_model_not_found() {
    let Some(program) = program() else { return };
    let without = Proxy::start(&program, &config(&STABLE[1..], ""));
    let test = project(&without.url());
    let run = test.run(&["lock"]);
    run.code(1);
    assert!(!test.path("modelpin.lock").exists(), "{}", run.stderr);
    // With no baseline check calls nothing; one recorded before the model went is what a
    // later check is judged against.
    let test = test.file(
        "modelpin.lock",
        &crate::baseline::bare_lock(&[("pin", "gpt-4o")]),
    );
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
