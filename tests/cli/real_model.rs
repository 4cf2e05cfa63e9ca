//! Silent swaps on a real model at the default configuration: the pins.toml `modelpin init`
//! writes (only `id`, `provider`, `model` and its six probes; no `samples`, no tier settings),
//! locked once on SmolLM2-135M-Instruct served by llama-cpp-python's own, unmodified server, then
//! checked while each variant of tests/realmodel/stack.py answers behind the same model ID (the
//! swaps are made around the real server: another model file, a rewritten request). The
//! unchanged model passes, also when it answers from two numeric paths at random (locked and
//! checked so); another family, a hidden system message, requantized weights and a forced
//! sampling temperature are each caught. Missing llama-cpp-python fails under CI and skips
//! elsewhere.

use std::path::Path;

use crate::harness::{KEY_VAR, Run, Test};
use crate::schema::Report;
use crate::support::real_model::{MODEL_ID, Server};

/// What `modelpin init` writes for one OpenAI-compatible pin, pointed at the server.
fn pins(base_url: &str) -> String {
    format!(
        r#"version = 1

[providers.local]
kind = "openai-compatible"
base_url = "{base_url}"
api_key_env = "{KEY_VAR}"

[[pin]]
id = "smollm2"
provider = "local"
model = "{MODEL_ID}"
probes = ["probes/*.toml"]
"#
    )
}

/// A project holding `pins.toml` and the probes `modelpin init` ships.
fn project(server: &Server) -> Test {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("probes");
    let mut test = Test::new().pins(&pins(&server.base_url()));
    for entry in std::fs::read_dir(&shipped).expect("probes/ ships with the crate") {
        let path = entry.expect("probe file").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let probe = std::fs::read_to_string(&path).expect("probe text");
        test = test.file(&format!("probes/{name}"), &probe);
    }
    test
}

/// Every sampled call so far carried a seed of its own: the server's unseeded stream is the
/// same in both replicas, started alike.
fn every_draw_its_own_seed(spent: &serde_json::Value) {
    let sampled = spent["sampled"].as_u64().unwrap();
    assert!(sampled > 1_000, "{spent}");
    assert_eq!(spent["seeded"], sampled, "{spent}");
    assert!(
        spent["seeds"].as_u64().unwrap() + 2 >= sampled,
        "distinct seeds (a repeat in a few thousand draws of 2³¹ is rare): {spent}"
    );
}

fn check(test: &Test, server: &Server, variant: &str) -> (Run, Report) {
    check_with(test, server, variant, &[])
}

/// `check` with more arguments while `variant` answers.
fn check_with(test: &Test, server: &Server, variant: &str, more: &[&str]) -> (Run, Report) {
    server.set_variant(variant);
    let args: Vec<&str> = ["check", "--format", "json"]
        .into_iter()
        .chain(more.iter().copied())
        .collect();
    let run = test.run(&args);
    let report = run.json();
    (run, report)
}

/// The behaviour tests that rejected, by name.
fn rejected(report: &Report) -> Vec<String> {
    report
        .pin("smollm2")
        .behaviour
        .iter()
        .filter(|t| t.rejected)
        .map(|t| t.test.clone())
        .collect()
}

#[test]
fn swaps_behind_one_id_are_caught_and_the_unchanged_model_passes() {
    let Some(server) = Server::start() else {
        return;
    };
    let test = project(&server);
    let lock = test.run(&["lock"]);
    lock.code(0);
    assert!(
        lock.stderr
            .contains("tiers smollm2: first tokens on 8 border inputs"),
        "lock says which tiers the pin has:\n{}",
        lock.stderr
    );
    assert!(
        lock.stderr
            .contains("logprobs (top 10) and sampling tests too"),
        "{}",
        lock.stderr
    );

    let (run, report) = check(&test, &server, "base");
    assert_eq!(run.code, 0, "the unchanged model passes:\n{}", run.stdout);
    let pin = report.pin("smollm2");
    for tier in ["first_tokens", "logprobs", "sampling"] {
        assert!(
            pin.behaviour.iter().any(|t| t.test == tier),
            "{tier} measured: {:?}",
            pin.behaviour
        );
    }
    let spent = server.stats();
    assert!(spent["calls"].as_u64().unwrap() > 0, "{spent}");
    every_draw_its_own_seed(&spent);

    // Another family and a hidden system message change what a prompt costs. The identity
    // check sees it (one call a probe): the pretrained Gemma never stops before `max_tokens`,
    // and a whole audit of it takes minutes on two cores (its behaviour tests are measured in
    // bench/real_model.py).
    for (variant, more) in [("family", &["--no-probes"][..]), ("system", &[][..])] {
        let (run, report) = check_with(&test, &server, variant, more);
        assert_eq!(run.code, 1, "{variant} is caught:\n{}", run.stdout);
        let codes = report.pin("smollm2").codes();
        assert!(codes.contains(&"tokenizer_changed"), "{variant}: {codes:?}");
    }

    // Requantized weights: same tokenizer, same prices; the first-token logprobs moved.
    let (run, report) = check(&test, &server, "requant");
    assert_eq!(
        run.code, 1,
        "requantized weights are caught:\n{}",
        run.stdout
    );
    let pin = report.pin("smollm2");
    assert!(pin.codes().contains(&"behavior_drift"), "{:?}", pin.codes());
    assert!(
        rejected(&report).iter().any(|t| t == "logprobs"),
        "{:?}",
        pin.behaviour
    );

    // Sampling at 0.7 where 1.0 was asked: the logprobs are the same; the draws are not. On
    // this server one audit catches it 7 times in 8 (BENCHMARKS.md); the sampling test's own
    // p-value is small every time, and one of up to three audits flags it.
    let mut caught = false;
    for _ in 0..3 {
        let (run, report) = check(&test, &server, "temperature");
        let pin = report.pin("smollm2");
        let sampling = pin.behaviour.iter().find(|t| t.test == "sampling").unwrap();
        assert!(sampling.p_value <= 0.01, "{:?}", pin.behaviour);
        let tests = rejected(&report);
        assert!(
            !tests.iter().any(|t| t == "logprobs"),
            "logprobs are reported before sampling: {tests:?}"
        );
        if run.code == 1 && tests.iter().any(|t| t == "sampling") {
            caught = true;
            break;
        }
        assert_eq!(run.code, 0, "{}", run.stdout);
    }
    assert!(
        caught,
        "the forced temperature is caught in one of three audits"
    );

    // The second null: locked and checked while the same file answers from two numeric paths,
    // one at random per call. Its logprobs jitter from call to call; nothing changed.
    server.set_variant("jitter");
    let jitter = project(&server);
    jitter.run(&["lock"]).code(0);
    let (run, report) = check(&jitter, &server, "jitter");
    assert_eq!(
        run.code, 0,
        "a jittering numeric path is no change:\n{}",
        run.stdout
    );
    let tiers: Vec<&str> = report
        .pin("smollm2")
        .behaviour
        .iter()
        .map(|t| t.test.as_str())
        .collect();
    assert!(
        ["first_tokens", "logprobs", "sampling"]
            .iter()
            .all(|t| tiers.contains(t)),
        "{tiers:?}"
    );
    let spent = server.stats();
    assert!(
        spent["by_server"]["base_b"].as_u64().unwrap() > 0,
        "{spent}"
    );
}
