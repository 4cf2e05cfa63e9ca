//! What the default human report shows of each finding: the message, the two or three evidence
//! lines that decide it (`-v` for all), and advice that fits the pin — a pin already on a dated
//! snapshot is not told to pin one.

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{SETTINGS, Sim, Test, one_pin_with};
use crate::world::{model, reroute, single};

const SWAP: &str = "acme-small-2024-09-01";

/// `requested` locked, then served by another model.
fn drifting(requested: &str) -> (Sim, Test) {
    let sim = Sim::start(single(requested, model(requested, 4.0, (2.5, 10.0))));
    let test = Test::new()
        .pins(&one_pin_with(
            SETTINGS,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            requested,
            "price = { input = 2.5, output = 10.0 }",
        ))
        .probes();
    test.run(&["lock"]).code(0);
    sim.set(reroute(
        sim.sim.scenario(),
        requested,
        model(SWAP, 2.0, (0.5, 2.0)),
        Reported::Honest,
    ));
    (sim, test)
}

/// The lines printed under the finding `code`, up to its `→` line.
fn finding_block<'a>(stdout: &'a str, code: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .skip_while(|l| !l.contains(&format!(" {code}: ")))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('→'))
        .collect()
}

#[test]
fn the_default_view_shows_the_lines_that_decide_a_finding_and_v_shows_all() {
    let (_sim, test) = drifting("acme-large-2024-08-06");
    let run = test.run(&["check"]);
    run.code(1);
    let mismatch = finding_block(&run.stdout, "served_model_mismatch");
    assert_eq!(mismatch.len(), 3, "{}", run.stdout);
    assert_eq!(mismatch[0], format!("        unexpected.{SWAP}: 6"));
    assert_eq!(mismatch[1], "        accepted: acme-large-2024-08-06");
    assert!(
        mismatch[2].starts_with("        … 2 more evidence lines (`-v` shows all"),
        "{}",
        mismatch[2]
    );
    for block in ["tokenizer_changed", "cost_changed"] {
        let lines = finding_block(&run.stdout, block);
        assert!(
            (2..=4).contains(&lines.len()),
            "{block}: {lines:#?}\n{}",
            run.stdout
        );
    }
    assert!(
        !run.stdout.contains(": none\n"),
        "no empty values: {}",
        run.stdout
    );
    let verbose = test.run(&["-v", "check"]);
    let all = finding_block(&verbose.stdout, "served_model_mismatch");
    assert!(
        all.iter()
            .any(|l| l.trim_start().starts_with("requested: "))
            && !all.iter().any(|l| l.contains('…')),
        "{all:#?}"
    );
}

#[test]
fn only_a_pin_not_on_a_dated_snapshot_is_told_to_pin_one() {
    let (_sim, dated) = drifting("acme-large-2024-08-06");
    let run = dated.run(&["check"]);
    let advice = run
        .stdout
        .lines()
        .find(|l| l.contains("→ if `acme-small"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(!advice.contains("pin a dated snapshot"), "{advice}");
    assert!(
        advice.contains("`acme-large-2024-08-06` is already a dated snapshot"),
        "{advice}"
    );

    let (_sim, alias) = drifting("acme-large");
    let run = alias.run(&["check"]);
    let advice = run
        .stdout
        .lines()
        .find(|l| l.contains("→ if `acme-small"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        advice.contains("otherwise pin a dated snapshot"),
        "{advice}"
    );
}
