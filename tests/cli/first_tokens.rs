//! The first-token tier at the CLI, on the simulator: `lock` finds border inputs and says which
//! tests each pin has; `check` asks them for one token and catches a changed sampler and
//! changed weights behind the same ID, which leave every answer readable as before.

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{AnswerRule, Reported, SimModel};

use crate::harness::{Sim, Test};
use crate::support::lockfile::unpack;
use crate::support::pins::Pins;
use crate::world::{model, reroute, single};

const ID: &str = "acme-chat-2026-03-01";

fn rule(prompt: &str, answers: &[(&str, f64)]) -> AnswerRule {
    AnswerRule {
        prompt_contains: prompt.into(),
        answers: answers.iter().map(|(a, w)| ((*a).to_owned(), *w)).collect(),
    }
}

/// Answers of at most four characters: one token each for this tokenizer, so a one-token call
/// returns the whole answer.
fn honest() -> SimModel {
    let mut m = model(ID, 4.0, (1.0, 2.0));
    m.answers.extend([
        rule(
            "Name a color.",
            &[("Red", 0.4), ("Blue", 0.3), ("Teal", 0.2), ("Gold", 0.1)],
        ),
        rule(
            "Name an animal.",
            &[("Cat", 0.35), ("Dog", 0.35), ("Owl", 0.2), ("Fox", 0.1)],
        ),
        rule(
            "Name a fruit.",
            &[("Fig", 0.5), ("Kiwi", 0.25), ("Lime", 0.15), ("Pear", 0.1)],
        ),
    ]);
    m
}

fn project(sim: &Sim, kind: ProviderKind) -> Test {
    Pins::one(kind, &sim.url(kind), ID)
        .short()
        .each_pin("first_tokens", true)
        .each_pin("samples", 10)
        .test()
        .probes()
}

fn lock_json(test: &Test) -> serde_json::Value {
    serde_json::from_str(&test.read("modelpin.lock")).unwrap()
}

#[test]
fn lock_finds_border_inputs_and_check_states_their_calls() {
    let sim = Sim::start(single(ID, honest()));
    let test = project(&sim, ProviderKind::OpenAi);
    let lock = test.run(&["lock"]);
    lock.code(0);
    assert!(
        lock.stderr
            .contains("of them one-token (first-token tier: "),
        "the plan line counts the tier's calls before any is made:\n{}",
        lock.stderr
    );
    assert!(
        lock.stderr
            .contains("logprobs (top 10) and sampling tests too"),
        "{}",
        lock.stderr
    );
    let locked = lock_json(&test);
    let tier = &locked["pins"]["pin"]["first_tokens"];
    let inputs = tier["inputs"].as_object().unwrap();
    let prompts: Vec<&str> = inputs
        .values()
        .map(|i| i["prompt"].as_str().unwrap())
        .collect();
    for wanted in ["Name a color.", "Name an animal.", "Name a fruit."] {
        assert!(prompts.contains(&wanted), "{prompts:?}");
    }
    assert!(
        !prompts.contains(&"Name a planet."),
        "a candidate whose first token never varies is no border input: {prompts:?}"
    );
    assert_eq!(tier["top_logprobs"], 10);
    for (id, input) in inputs {
        let samples = unpack(&locked["samples"]["pin"]["first_tokens"][id]);
        assert_eq!(samples["tokens"].as_array().unwrap().len(), 160);
        assert_eq!(samples["top"].as_array().unwrap().len(), 160);
        assert_eq!(
            input["calls"], 160,
            "the contract counts the calls its blob holds"
        );
    }
    let check = test.run(&["check", "--format", "json"]);
    check.code(0);
    let n = inputs.len() as u64;
    assert!(
        check
            .stderr
            .contains(&format!("{} of them one-token (first-token tier: ", n * 32)),
        "{}",
        check.stderr
    );
    let report = check.json();
    let pin = report.pin("pin");
    let tests: Vec<&str> = pin.behaviour.iter().map(|t| t.test.as_str()).collect();
    for wanted in ["first_tokens", "logprobs", "sampling"] {
        assert!(tests.contains(&wanted), "{tests:?}");
    }
    assert_eq!(pin.calls.sent, 20 + n * 32, "two probes × 10, and the tier");

    // The tier's calls per input are the pin's to choose, without a new lock.
    let pins = test.read("pins.toml");
    assert!(pins.contains("first_tokens = true"), "{pins}");
    std::fs::write(
        test.path("pins.toml"),
        pins.replace(
            "first_tokens = true",
            "first_tokens = true\nfirst_token_samples = 5",
        ),
    )
    .unwrap();
    let fewer = test.run(&["check", "--format", "json"]);
    fewer.code(0);
    assert!(
        fewer
            .stderr
            .contains(&format!("{} of them one-token (first-token tier: ", n * 5)),
        "{}",
        fewer.stderr
    );
    assert_eq!(fewer.json().pin("pin").calls.sent, 20 + n * 5);
}

#[test]
fn a_provider_that_samples_colder_than_it_reports_is_caught() {
    let sim = Sim::start(single(ID, honest()));
    let test = project(&sim, ProviderKind::OpenAi);
    test.run(&["lock"]).code(0);
    let mut colder = honest();
    // Four-token answers leave a temperature little to move; a real model's long tail shows 0.7
    // (`real_model.rs`).
    colder.sampling_temperature = Some(0.3);
    sim.set(reroute(sim.sim.scenario(), ID, colder, Reported::Requested));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    assert_eq!(pin.codes(), vec!["behavior_drift"]);
    let sampling = pin.behaviour.iter().find(|t| t.test == "sampling").unwrap();
    assert!(sampling.rejected, "{:?}", pin.behaviour);
    let logprobs = pin.behaviour.iter().find(|t| t.test == "logprobs").unwrap();
    assert!(
        !logprobs.rejected,
        "the reported numbers did not move: {:?}",
        pin.behaviour
    );
    // The headline is the test with the smallest adjusted p: with 160 baseline calls per input
    // the colder draws also tip the border inputs' first tokens, and either names sampling.
    let message = &pin.finding("behavior_drift").message;
    assert!(
        message.contains("samples its reported probabilities differently from how it did at the lock")
            || message.contains("the first tokens on border inputs shifted, so the serving stack changed: weights, quantization, kernels or sampling"),
        "{message}"
    );
}

#[test]
fn weights_that_moved_are_caught_by_the_reported_logprobs() {
    let sim = Sim::start(single(ID, honest()));
    let test = project(&sim, ProviderKind::OpenAi);
    test.run(&["lock"]).code(0);
    let mut requantized = honest();
    for rule in &mut requantized.answers {
        if let [first, second, ..] = rule.answers.as_mut_slice() {
            first.1 -= 0.05;
            second.1 += 0.05;
        }
    }
    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        requantized,
        Reported::Requested,
    ));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    let logprobs = pin.behaviour.iter().find(|t| t.test == "logprobs").unwrap();
    assert!(logprobs.rejected, "{:?}", pin.behaviour);
    assert!(
        pin.finding("behavior_drift")
            .message
            .contains("the serving stack changed"),
        "{}",
        pin.finding("behavior_drift").message
    );
}

#[test]
fn without_logprobs_the_tier_is_first_tokens_alone_and_lock_says_why() {
    let sim = Sim::start(single(ID, honest()));
    let test = project(&sim, ProviderKind::Anthropic);
    let lock = test.run(&["lock"]);
    lock.code(0);
    assert!(
        lock.stderr
            .contains("no logprob or sampling test: no logprobs in this provider's API"),
        "{}",
        lock.stderr
    );
    let tier = &lock_json(&test)["pins"]["pin"]["first_tokens"];
    assert_eq!(tier["top_logprobs"], 0);
    let report = test.run(&["check", "--format", "json"]).json();
    let tests: Vec<String> = report
        .pin("pin")
        .behaviour
        .iter()
        .map(|t| t.test.clone())
        .collect();
    assert!(tests.contains(&"first_tokens".to_owned()), "{tests:?}");
    assert!(!tests.contains(&"sampling".to_owned()), "{tests:?}");
}

#[test]
fn a_pin_can_turn_the_tier_off() {
    let sim = Sim::start(single(ID, honest()));
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .short()
        .each_pin("samples", 10)
        .each_pin("first_tokens", false)
        .test()
        .probes();
    let lock = test.run(&["lock"]);
    lock.code(0);
    assert!(
        lock.stderr
            .contains("no first-token tier: off for this pin (`first_tokens = false`)"),
        "{}",
        lock.stderr
    );
    assert!(!lock.stderr.contains("one-token"), "{}", lock.stderr);
    // A lock asks each probe 4 × `samples` times; an audit, `samples`.
    assert_eq!(sim.requests(), 80, "only the probes were called");
    let check = test.run(&["check", "--format", "json"]);
    check.code(0);
    assert_eq!(check.json().pin("pin").calls.sent, 20);
}

#[test]
fn a_provider_that_stops_reporting_logprobs_leaves_the_pin_inconclusive() {
    let sim = Sim::start(single(ID, honest()));
    let test = project(&sim, ProviderKind::OpenAi);
    test.run(&["lock"]).code(0);
    let locked = lock_json(&test);
    assert_eq!(locked["pins"]["pin"]["first_tokens"]["top_logprobs"], 10);
    // The same model and answers behind an API without logprobs (the Messages shape), checked
    // against the lock recorded with them.
    let lockfile = test.read("modelpin.lock");
    let anthropic = project(&sim, ProviderKind::Anthropic).file("modelpin.lock", &lockfile);
    let run = anthropic.run(&["check", "--format", "json"]);
    run.code(3);
    let report = run.json();
    let pin = report.pin("pin");
    assert!(
        pin.findings
            .iter()
            .any(|f| f.message.contains("reported logprobs at the lock")),
        "{:?}",
        pin.findings
    );
}
