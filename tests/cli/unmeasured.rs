//! What cannot be measured is said, never read as ok or as zero: an absurd token count, and a
//! check with nothing to compare its answers with (which then spends nothing).

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::FaultKind;

use crate::harness::{ARITH, SETTINGS, Sim, Test, one_pin_with};
use crate::world::{fault, model, single};

const ID: &str = "acme-pro-001";

/// A chat completion reporting `completion_tokens` as given.
fn body(completion_tokens: &str) -> String {
    format!(
        r#"{{"id":"c","object":"chat.completion","model":"{ID}","choices":[{{"index":0,"message":{{"role":"assistant","content":"391"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":21,"completion_tokens":{completion_tokens},"total_tokens":22}}}}"#
    )
}

fn priced(sim: &Sim) -> Test {
    Test::new()
        .pins(&one_pin_with(
            SETTINGS,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 5\nprice = { input = 1.0, output = 2.0 }",
        ))
        .file("probes/arith.toml", ARITH)
}

#[test]
fn an_absurd_completion_token_count_is_unmeasured_never_zero() {
    let answering = |completion_tokens: &str| {
        fault(
            single(ID, model(ID, 4.0, (1.0, 2.0))),
            ID,
            None,
            FaultKind::Raw {
                status: 200,
                body: body(completion_tokens),
                headers: Vec::new(),
            },
        )
    };
    let sim = Sim::start(answering("1"));
    let test = priced(&sim);
    test.run(&["lock"]).code(0);
    sim.set(answering("1e11"));
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let findings = report["pins"][0]["findings"].as_array().unwrap();
    let unmeasured = findings
        .iter()
        .map(|f| f["message"].as_str().unwrap_or_default())
        .find(|m| m.contains("token count no call can have"))
        .unwrap_or_else(|| panic!("no finding names the count: {findings:?}"));
    assert!(
        unmeasured.contains("`completion_tokens` = 100000000000"),
        "{unmeasured}"
    );
    // The spend cap cannot count such a call: the remaining calls are not made (the lock made
    // 20, 4 × `samples`; the models lookups 2; the audit plans 5).
    assert!(
        sim.requests() < 2 + 20 + 5,
        "calls went on after an uncountable one: {}",
        sim.requests()
    );
    assert!(
        run.stdout
            .contains("the audit's spend cap ($1.00) can no longer be kept"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_count_inside_the_bound_is_read_as_it_is() {
    let sim = Sim::start(fault(
        single(ID, model(ID, 4.0, (1.0, 2.0))),
        ID,
        None,
        FaultKind::Raw {
            status: 200,
            body: body("3"),
            headers: Vec::new(),
        },
    ));
    let test = priced(&sim);
    test.run(&["lock"]).code(0);
    let run = test.run(&["check", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["pins"][0]["tokens"]["output"], 15, "{}", run.stdout);
}

#[test]
fn check_before_any_lock_makes_no_provider_call_and_says_to_lock() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = Test::new()
        .pins(&one_pin_with(
            SETTINGS,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 4\nretires_on = 2099-01-01",
        ))
        .file("probes/arith.toml", ARITH);
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    assert_eq!(sim.requests(), 0, "no generation call was made");
    assert!(
        run.stderr.contains("no provider call is made")
            && run.stderr.contains("run `modelpin lock`"),
        "{}",
        run.stderr
    );
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let pin = &report["pins"][0];
    assert_eq!(pin["status"], "inconclusive");
    assert_eq!(pin["calls"]["sent"], 0);
    let codes: Vec<&str> = pin["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"no_baseline"), "{codes:?}");
    assert!(
        codes.contains(&"deprecation_scheduled"),
        "what needs no call is still reported: {codes:?}"
    );
    let message = pin["findings"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("none of its 4 planned calls were made")
            && message.contains("run `modelpin lock --pin pin`"),
        "{message}"
    );
}

#[test]
fn a_pin_missing_from_the_lock_spends_nothing_while_locked_pins_are_checked() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let one = one_pin_with(
        SETTINGS,
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "samples = 2",
    );
    let test = Test::new().pins(&one).file("probes/arith.toml", ARITH);
    test.run(&["lock"]).code(0);
    let second = one[one.find("[[pin]]").unwrap()..].replace("id = \"pin\"", "id = \"new\"");
    let test = test.pins(&format!("{one}\n{second}"));
    let before = sim.requests();
    let run = test.run(&["check"]);
    run.code(3);
    assert_eq!(sim.requests() - before, 2, "only the locked pin was called");
    assert!(
        run.stderr.contains("no baseline in modelpin.lock for new"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_absurd_count_on_an_unpriced_pin_is_unmeasured_and_stops_nothing() {
    let answering = fault(
        single(ID, model(ID, 4.0, (1.0, 2.0))),
        ID,
        None,
        FaultKind::Raw {
            status: 200,
            body: body("1"),
            headers: Vec::new(),
        },
    );
    let sim = Sim::start(answering.clone());
    let test = Test::new()
        .pins(&one_pin_with(
            SETTINGS,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 5",
        ))
        .file("probes/arith.toml", ARITH);
    test.run(&["lock"]).code(0);
    let mut absurd = answering;
    absurd.routes.get_mut(ID).unwrap().faults[0].kind = FaultKind::Raw {
        status: 200,
        body: body("1e11"),
        headers: Vec::new(),
    };
    sim.set(absurd);
    let before = sim.requests();
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    // Its calls were never counted against the cap (it has no price), so none is stopped.
    assert_eq!(sim.requests() - before, 5, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("5 of 5 answers reported a token count no call can have"),
        "{}",
        run.stdout
    );
}
