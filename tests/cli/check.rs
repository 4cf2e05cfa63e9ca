//! `lock` then `check` against the simulator: each way a pin can change, and each way a check
//! can fail to measure.

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{FaultKind, Reported};

use crate::harness::{Sim, Test};
use crate::support::pins::{Pins, Value};
use crate::world::{fault, model, reroute, single};

/// A locked project on `kind` pinning `requested`, both standard probes, served by `scenario`.
fn locked(
    kind: ProviderKind,
    requested: &str,
    scenario: modelpin::sim::scenario::Scenario,
) -> (Sim, Test) {
    locked_with(kind, requested, scenario, |pins| pins)
}

/// The same with the pins changed by `edit` first.
fn locked_with(
    kind: ProviderKind,
    requested: &str,
    scenario: modelpin::sim::scenario::Scenario,
    edit: impl FnOnce(Pins) -> Pins,
) -> (Sim, Test) {
    let sim = Sim::start(scenario);
    let pins = edit(Pins::one(kind, &sim.url(kind), requested).short());
    let test = pins.test().probes().locked();
    (sim, test)
}

#[test]
fn clean_pin_passes_with_exit_0() {
    let (_sim, test) = locked(
        ProviderKind::OpenAi,
        "acme-large-2024-08-06",
        single(
            "acme-large-2024-08-06",
            model("acme-large-2024-08-06", 4.0, (2.5, 10.0)),
        ),
    );
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    let report = run.json();
    assert_eq!(report.schema, "modelpin.report/v1");
    assert_eq!(report.status, "ok");
    let pin = report.pin("pin");
    assert!(pin.findings.is_empty(), "{:?}", pin.codes());
    assert_eq!(pin.served_models.get("acme-large-2024-08-06"), Some(&6));
    assert_eq!((pin.calls.sent, pin.calls.ok, pin.calls.failed), (6, 6, 0));
    assert!(
        report
            .lock_digest
            .as_deref()
            .is_some_and(|d| d.starts_with("sha256:"))
    );
    // The human table says the same.
    let human = test.run(&["check"]);
    human.code(0);
    assert!(
        human.stdout.contains("pin") && human.stdout.contains("OK"),
        "{}",
        human.stdout
    );
}

#[test]
fn moved_alias_is_a_served_model_mismatch() {
    let snapshot = model("acme-large-2024-08-06", 4.0, (2.5, 10.0));
    let (sim, test) = {
        let sim = Sim::start(single("acme-large", snapshot));
        let test = Pins::one(
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            "acme-large",
        )
        .short()
        .test()
        .probes();
        let lock = test.run(&["lock"]);
        lock.code(0);
        assert!(
            lock.stderr.contains("resolved to `acme-large-2024-08-06`")
                && lock.stderr.contains("model = \"acme-large-2024-08-06\""),
            "alias warning: {}",
            lock.stderr
        );
        (sim, test)
    };
    test.run(&["check"]).code(0);
    let scenario = reroute(
        sim.sim.scenario(),
        "acme-large",
        model("acme-large-2024-11-20", 4.0, (2.5, 10.0)),
        Reported::Honest,
    );
    sim.set(scenario);
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("served_model_mismatch");
    assert_eq!(finding.severity.as_deref(), Some("error"));
    assert_eq!(finding.evidence["unexpected"]["acme-large-2024-11-20"], 6);
    assert!(
        finding.message.contains("acme-large-2024-11-20"),
        "{}",
        finding.message
    );
}

#[test]
fn masked_reroute_is_caught_by_the_tokenizer() {
    let id = "acme-haiku-20251001";
    let (sim, test) = locked(
        ProviderKind::Anthropic,
        id,
        single(id, model(id, 3.5, (1.0, 5.0))),
    );
    let mut impostor = model("cheaper-model", 4.4, (1.0, 5.0));
    impostor.id = "cheaper-model".into();
    sim.set(reroute(
        sim.sim.scenario(),
        id,
        impostor,
        Reported::Requested,
    ));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    assert!(
        !pin.codes().contains(&"served_model_mismatch"),
        "the body still names {id}: {:?}",
        pin.codes()
    );
    let finding = pin.finding("tokenizer_changed");
    let probes = finding.evidence["probes"]
        .as_array()
        .expect("per-probe evidence");
    assert_eq!(probes.len(), 2);
    assert_ne!(probes[0]["locked"], probes[0]["now"]);
}

#[test]
fn openrouter_upstream_swap_is_reported() {
    let slug = "acme/sonnet-4.6";
    let mut served = model(slug, 3.8, (3.0, 15.0));
    served.upstream = Some("Anthropic".into());
    let (sim, test) = locked(ProviderKind::OpenRouter, slug, single(slug, served.clone()));
    served.upstream = Some("SomeQuantizedHost".into());
    sim.set(single(slug, served));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("upstream_mismatch");
    assert_eq!(finding.evidence["unexpected"]["SomeQuantizedHost"], 6);
    assert_eq!(
        report.pin("pin").upstreams.get("SomeQuantizedHost"),
        Some(&6)
    );
}

#[test]
fn reported_price_change_is_cost_changed() {
    let slug = "acme/mini";
    let (sim, test) = locked_with(
        ProviderKind::OpenRouter,
        slug,
        single(slug, model(slug, 4.0, (0.25, 2.0))),
        |pins| pins.each_pin("price", Value::bare("{ input = 0.25, output = 2.00 }")),
    );
    test.run(&["check"]).code(0);
    sim.set(single(slug, model(slug, 4.0, (0.40, 3.2))));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    assert_eq!(pin.codes(), vec!["cost_changed"], "only the price moved");
    let ratio = pin.finding("cost_changed").evidence["billed_vs_price"]["ratio"]
        .as_f64()
        .unwrap();
    assert!((ratio - 1.6).abs() < 0.01, "ratio {ratio}");
}

#[test]
fn price_change_without_a_list_price_is_judged_against_the_locked_effective_price() {
    let slug = "acme/scout";
    let (sim, test) = locked(
        ProviderKind::OpenRouter,
        slug,
        single(slug, model(slug, 4.0, (0.1, 0.3))),
    );
    let lock = test.read("modelpin.lock");
    assert!(lock.contains("\"source\": \"reported\""), "{lock}");
    sim.set(single(slug, model(slug, 4.0, (0.2, 0.6))));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    assert!(run.json().pin("pin").codes().contains(&"cost_changed"));
}

fn retired(kind: ProviderKind, model_id: &str) {
    let (sim, test) = locked(
        kind,
        model_id,
        single(model_id, model(model_id, 4.0, (1.0, 2.0))),
    );
    let mut scenario = sim.sim.scenario();
    scenario.routes.clear();
    sim.set(scenario);
    let before = sim.requests();
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    assert_eq!(pin.status, "drift");
    let finding = pin.finding("model_not_found");
    assert!(!pin.codes().contains(&"inconclusive"), "{:?}", pin.codes());
    assert!(
        finding.evidence["provider_message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert_eq!(
        sim.requests() - before,
        1,
        "the first refusal stops the pin's other calls"
    );
}

#[test]
fn retired_openai_model_404_is_model_not_found() {
    retired(ProviderKind::OpenAi, "gpt-4.5-preview");
}

#[test]
fn retired_anthropic_model_404_is_model_not_found() {
    retired(ProviderKind::Anthropic, "claude-3-opus-20240229");
}

#[test]
fn retired_gemini_model_404_is_model_not_found() {
    retired(ProviderKind::Gemini, "gemini-2.0-flash");
}

#[test]
fn withdrawn_openrouter_slug_400_is_model_not_found() {
    retired(ProviderKind::OpenRouter, "google/gemini-2.0-flash-exp:free");
}

#[test]
fn missing_azure_deployment_is_model_not_found() {
    retired(ProviderKind::Azure, "acme-large-2024-11-20");
}

#[test]
fn unparseable_200_is_inconclusive_exit_3() {
    let id = "acme-large-2024-08-06";
    let (sim, test) = locked(
        ProviderKind::OpenAi,
        id,
        single(id, model(id, 4.0, (2.5, 10.0))),
    );
    sim.set(fault(sim.sim.scenario(), id, None, FaultKind::Malformed));
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    let report = run.json();
    assert_eq!(report.status, "inconclusive");
    let finding = report.pin("pin").finding("inconclusive");
    assert_eq!(finding.severity, None);
    assert!(
        finding.message.contains("unparseable"),
        "{}",
        finding.message
    );
}

#[test]
fn refused_connection_is_inconclusive_exit_3() {
    let id = "acme-large-2024-08-06";
    let (sim, test) = locked(
        ProviderKind::OpenAi,
        id,
        single(id, model(id, 4.0, (2.5, 10.0))),
    );
    drop(sim);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    let report = run.json();
    let finding = report.pin("pin").finding("inconclusive");
    assert!(finding.message.contains("connect"), "{}", finding.message);
    assert_eq!(report.pin("pin").calls.ok, 0);
}

#[test]
fn wrong_key_is_inconclusive_not_drift() {
    let id = "gemini-2.5-flash";
    let (_sim, test) = locked(
        ProviderKind::Gemini,
        id,
        single(id, model(id, 4.0, (0.3, 2.5))),
    );
    let test = test.env(crate::harness::KEY_VAR, "a-wrong-key");
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    let report = run.json();
    assert!(
        report
            .pin("pin")
            .finding("inconclusive")
            .message
            .contains("auth")
    );
    assert!(
        !run.stdout.contains("a-wrong-key") && !run.stderr.contains("a-wrong-key"),
        "the key never shows"
    );
}

#[test]
fn check_without_a_lock_is_inconclusive_until_locked() {
    let id = "acme-large-2024-08-06";
    let sim = Sim::start(single(id, model(id, 4.0, (2.5, 10.0))));
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), id)
        .short()
        .test()
        .probes();
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    assert!(run.stderr.contains("run `modelpin lock`"), "{}", run.stderr);
    let report = run.json();
    assert_eq!(report.pin("pin").codes(), vec!["no_baseline"]);
    assert_eq!(report.pin("pin").status, "inconclusive");
    test.run(&["check", "--strict"]).code(3);
    test.run(&["lock"]).code(0);
    test.run(&["check"]).code(0);
}

#[test]
fn edited_probe_is_probe_changed_not_drift() {
    let id = "acme-large-2024-08-06";
    let (_sim, test) = locked(
        ProviderKind::OpenAi,
        id,
        single(id, model(id, 4.0, (2.5, 10.0))),
    );
    let test = test.file(
        "probes/arith.toml",
        &crate::harness::ARITH.replace("17 * 23", "17 * 24"),
    );
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    let report = run.json();
    let pin = report.pin("pin");
    assert_eq!(
        pin.codes(),
        vec!["probe_changed"],
        "a changed prompt changes token counts but is not drift"
    );
}

#[test]
fn json_report_is_byte_stable_apart_from_times() {
    let id = "acme-large-2024-08-06";
    // Same inputs: a model whose every answer is fixed, so two audits see the same bytes.
    let mut fixed = model(id, 4.0, (2.5, 10.0));
    fixed
        .answers
        .iter_mut()
        .for_each(|rule| rule.answers.truncate(1));
    let (_sim, test) = locked(ProviderKind::OpenAi, id, single(id, fixed));
    let strip = |text: String| -> String {
        text.lines()
            .filter(|l| !l.contains("\"started_at\"") && !l.contains("\"finished_at\""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let a = strip(test.run(&["check", "--format", "json"]).stdout);
    let b = strip(test.run(&["check", "--format", "json"]).stdout);
    assert_eq!(a, b);
}

#[test]
fn pin_filter_limits_the_run_and_unknown_pins_are_usage_errors() {
    let id = "acme-large-2024-08-06";
    let (_sim, test) = locked(
        ProviderKind::OpenAi,
        id,
        single(id, model(id, 4.0, (2.5, 10.0))),
    );
    test.run(&["check", "--pin", "pin"]).code(0);
    let run = test.run(&["check", "--pin", "nope"]);
    run.code(2);
    assert!(run.stderr.contains("no pin `nope`"), "{}", run.stderr);
}
