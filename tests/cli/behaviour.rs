//! Behaviour statistics at the CLI: a masked swap that only the answers give away, the
//! false-alarm rate of an unchanged model over many audits, and the small-baseline warning.

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{AnswerRule, Reported};

use crate::harness::{Sim, Test};
use crate::schema::Record;
use crate::support::daemon::Daemon;
use crate::support::pins::Pins;
use crate::world::{model, reroute, single};

const ID: &str = "acme-chat-2026-03-01";

/// The pinned model: right on arithmetic, a spread of city names.
fn honest() -> modelpin::sim::scenario::SimModel {
    let mut m = model(ID, 4.0, (1.0, 2.0));
    m.answers = vec![
        AnswerRule {
            prompt_contains: "17 * 23".into(),
            answers: vec![("391".into(), 0.97), ("391.".into(), 0.03)],
        },
        AnswerRule {
            prompt_contains: "Australia".into(),
            answers: vec![
                ("Sydney".into(), 0.6),
                ("Melbourne".into(), 0.3),
                ("Brisbane".into(), 0.1),
            ],
        },
    ];
    m
}

fn project(sim: &Sim) -> Test {
    project_asking(sim, 10)
}

/// The project with each probe asked `samples` times an audit.
fn project_asking(sim: &Sim, samples: u32) -> Test {
    Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .short()
        .each_pin("samples", samples)
        .test()
        .probes()
}

/// Another model behind the same ID, same tokenizer and price: only its answers differ.
fn impostor() -> modelpin::sim::scenario::SimModel {
    let mut impostor = honest();
    impostor.id = "acme-chat-small".into();
    impostor.answers = vec![
        AnswerRule {
            prompt_contains: "17 * 23".into(),
            answers: vec![("391".into(), 0.4), ("The answer is 391".into(), 0.6)],
        },
        AnswerRule {
            prompt_contains: "Australia".into(),
            answers: vec![("Sydney".into(), 0.95), ("Perth".into(), 0.05)],
        },
    ];
    impostor
}

fn swap_in(sim: &Sim, model: modelpin::sim::scenario::SimModel) {
    sim.set(reroute(sim.sim.scenario(), ID, model, Reported::Requested));
}

#[test]
fn a_masked_swap_with_the_same_id_and_tokenizer_is_caught_by_behaviour() {
    let sim = Sim::start(single(ID, honest()));
    // 20 answers a probe: enough that the swap's p-value is far below 0.001 whatever the
    // permutations draw, not at the permutation tests' floor.
    let test = project_asking(&sim, 20);
    test.run(&["lock", "--samples", "30"]).code(0);
    test.run(&["check"]).code(0);
    swap_in(&sim, impostor());
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    assert_eq!(
        pin.codes(),
        vec!["behavior_drift"],
        "nothing but the answers changed"
    );
    let evidence = &pin.finding("behavior_drift").evidence;
    assert!(evidence["seed"].is_u64(), "the seed is in the evidence");
    assert!(
        evidence["tests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["rejected"] == true)
    );
    assert!(
        pin.behaviour
            .iter()
            .any(|t| t.rejected && t.adjusted_p.is_some_and(|p| p < 0.001))
    );

    // Resolved as the daemon's look at a late audit: the same verdict, the strongest test's
    // p-value told apart far below what alpha needed.
    let most_permutations = |evidence: &serde_json::Value| {
        evidence["tests"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["calibration"]["permutations"].as_u64())
            .max()
            .unwrap()
    };
    let smallest = |pin: &crate::schema::Pin| {
        pin.behaviour
            .iter()
            .filter_map(|t| t.adjusted_p)
            .fold(1.0, f64::min)
    };
    let deep = test.run(&["check", "--format", "json", "--resolve", "1e-5"]);
    deep.code(1);
    let deep = deep.json();
    let deep_pin = deep.pin("pin");
    assert_eq!(deep_pin.codes(), vec!["behavior_drift"]);
    let deep_evidence = &deep_pin.finding("behavior_drift").evidence;
    assert!(
        most_permutations(deep_evidence) > 50 * most_permutations(evidence),
        "{} vs {}",
        most_permutations(deep_evidence),
        most_permutations(evidence)
    );
    assert!(
        smallest(deep_pin) < 1e-4 && smallest(deep_pin) < smallest(pin) / 10.0,
        "{} vs {}",
        smallest(deep_pin),
        smallest(pin)
    );
    for bad in ["0", "1", "1.5", "often"] {
        let run = test.run(&["check", "--resolve", bad]);
        run.code(2);
        assert!(
            run.stderr.contains("--resolve") && run.stderr.contains("between 0 and 1"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn an_unchanged_model_gives_no_more_false_drift_verdicts_than_alpha_predicts() {
    const RUNS: usize = 200;
    let sim = Sim::start(single(ID, honest()));
    let test = project(&sim);
    test.run(&["lock", "--samples", "30"]).code(0);
    let drifts: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    (0..RUNS / 4)
                        .filter(|_| test.run(&["check", "-q"]).code == 1)
                        .count()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    // alpha = 0.001 per pin per audit: 0.2 false alarms expected in 200 audits, and
    // P(3 or more) = 0.001 under Binomial(200, 0.001).
    assert!(
        drifts <= 2,
        "{drifts} false drift verdicts in {RUNS} unchanged audits"
    );
}

#[test]
fn locking_a_baseline_too_small_to_ever_reject_says_so() {
    let sim = Sim::start(single(ID, honest()));
    let pins = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .setting("timeout", "3s")
        .each_pin("samples", 2);
    let test = pins.test().probes();
    let run = test.run(&["lock", "--samples", "1"]);
    run.code(0);
    assert!(
        run.stderr
            .contains("no behaviour test can reject at alpha 0.001"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--samples"), "{}", run.stderr);
    // A baseline of 30 answers per probe is enough for every test.
    let run = pins
        .each_pin("samples", 10)
        .test()
        .probes()
        .run(&["lock", "--samples", "30"]);
    run.code(0);
    assert!(!run.stderr.contains("cannot reject"), "{}", run.stderr);
}

#[test]
fn answers_in_a_script_the_baseline_never_wrote_are_a_finding() {
    let sim = Sim::start(single(ID, honest()));
    let test = project(&sim);
    test.run(&["lock"]).code(0);
    // A serving fault behind the same ID: the same city names, with Thai letters in them.
    let mut garbled = honest();
    garbled.answers[1].answers = vec![
        ("Sydney ภาษาไทย".into(), 0.6),
        ("Melbourne ภาษาไทย".into(), 0.3),
        ("Brisbane 中文".into(), 0.1),
    ];
    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        garbled.clone(),
        Reported::Requested,
    ));
    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let pin = report.pin("pin");
    assert!(pin.codes().contains(&"script_changed"), "{:?}", pin.codes());
    let finding = pin.finding("script_changed");
    assert!(finding.message.contains("Thai"), "{}", finding.message);
    assert_eq!(finding.evidence["of"], 20, "{}", finding.evidence);
    assert!(finding.evidence["p_value"].as_f64().unwrap() < 0.001);
    assert_eq!(finding.evidence["baseline"], serde_json::json!(["Latin"]));

    // One stray letter in twenty answers is what an unchanged model at temperature 1 may do.
    garbled.answers[1].answers = vec![("Sydney".into(), 0.95), ("Sydney 中".into(), 0.05)];
    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        garbled,
        Reported::Requested,
    ));
    let quiet = (0..5)
        .map(|_| test.run(&["check", "--format", "json"]).json())
        .filter(|r| !r.pin("pin").codes().contains(&"script_changed"))
        .count();
    assert!(quiet >= 4, "{quiet} of 5 audits without a finding");
}

#[test]
fn a_drift_says_what_moved_in_words_in_the_terminal_and_in_the_json() {
    // Always right on arithmetic at the lock; a spread of city names.
    let mut right = honest();
    right.answers[0].answers = vec![("391".into(), 1.0)];
    let sim = Sim::start(single(ID, right.clone()));
    let test = project(&sim);
    test.run(&["lock", "--samples", "30"]).code(0);
    // Behind the same ID: always wrong, and a city name carrying a newline, a workflow command
    // and a right-to-left override.
    let mut wrong = right;
    wrong.id = "acme-chat-small".into();
    wrong.answers[0].answers = vec![("392".into(), 1.0)];
    wrong.answers[1].answers = vec![("Perth\u{202e}\n::error::pwned".into(), 1.0)];
    sim.set(reroute(sim.sim.scenario(), ID, wrong, Reported::Requested));

    let human = test.run(&["check"]);
    human.code(1);
    let out = &human.stdout;
    assert!(
        out.contains("\n        arith: pass rate 100 % → 0 %\n"),
        "the pass rate's move, a line of its own:\n{out}"
    );
    assert!(
        out.contains(r#""Perth\u{202e}\n::error::pwned" 0 % → 100 %"#),
        "the answer that moved, escaped:\n{out}"
    );
    assert!(!out.contains('\u{202e}'), "{out}");
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with("::")),
        "no provider text begins a line:\n{out}"
    );

    let run = test.run(&["check", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("behavior_drift");
    let moved: Vec<&str> = finding.evidence["what_moved"]
        .as_array()
        .expect("what_moved lines")
        .iter()
        .map(|l| l.as_str().expect("a line"))
        .collect();
    assert_eq!(moved[0], "arith: pass rate 100 % → 0 %", "{moved:?}");
    assert!(
        finding.message.starts_with(
            "the answers changed: arith: pass rate 100 % → 0 % (the pass rate dropped; p = "
        ),
        "{}",
        finding.message
    );
    assert!(
        evidence_keeps_its_fields(&finding.evidence),
        "{}",
        finding.evidence
    );
}

/// The verdict's fields are all still there next to `what_moved`.
fn evidence_keeps_its_fields(evidence: &serde_json::Value) -> bool {
    ["alpha", "seed", "drift", "tests", "skipped"]
        .iter()
        .all(|k| evidence.get(k).is_some())
}

/// Why the record's `behavior_drift` stands, as its accumulated evidence says.
fn drift_cause(record: &Record) -> String {
    let finding = record
        .pin
        .findings
        .iter()
        .find(|f| f.code == "behavior_drift")
        .unwrap_or_else(|| panic!("no behavior_drift: {:?}", record.pin.findings));
    finding.evidence["accumulated"]["cause"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn weighed(records: &[Record]) -> Vec<&Record> {
    records
        .iter()
        .filter(|r| r.pin.lifetime.is_some())
        .collect()
}

/// The daemon's side of the same swap: the evidence since the lock counts on across a restart;
/// a swap in the first days after a lock is caught by the audit's own look (at alpha/8 for audits
/// 2 to 72) and the alarm stands; a new lock starts afresh, and its first audit alarms on a
/// change already there. (A later audit alarms on its own only at the later level, 1.4e-5 at
/// the defaults, and is held back above it: `alert::lifetime`'s tests.)
#[test]
fn the_daemon_keeps_its_evidence_across_a_restart_and_looks_on_its_own_early_after_a_lock() {
    let sim = Sim::start(single(ID, honest()));
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .short()
        .daemon()
        // Every tick a behaviour audit (the budget's own test is below).
        .setting("behavior_calls_per_day", 100_000_000)
        .each_pin("samples", 20)
        .test()
        .probes();
    test.run(&["lock", "--samples", "30"]).code(0);
    let daemon = Daemon::start(&test);
    let clean = daemon.wait_records("3 weighed audits", |r| weighed(r).len() >= 3);
    for (i, r) in weighed(&clean).iter().enumerate() {
        let life = r.pin.lifetime.as_ref().unwrap();
        assert_eq!(life.audits, i as u64 + 1, "counted since the lock");
        assert_eq!(r.pin.status, "ok", "{:?}", r.pin.findings);
        assert!(life.alarm.is_none());
        // Every second: 31.5 million audits a year at 0.01 false alarms a year.
        assert!(life.threshold > 3e9, "threshold {}", life.threshold);
        assert!(life.conformal_p.is_some_and(|p| p > 0.0 && p <= 1.0));
        // Its own look: alpha for the first after the lock, alpha/8 for the next 71.
        let look = if i == 0 { 0.001 } else { 0.000_125 };
        assert_eq!(life.look, Some(look), "audit {}", i + 1);
    }

    // Restarted on the same store: the evidence goes on from where it was.
    let before: Vec<String> = daemon
        .records()
        .iter()
        .map(|r| r.audit_id.clone())
        .collect();
    let counted = daemon
        .records()
        .iter()
        .filter_map(|r| r.pin.lifetime.as_ref().map(|l| l.audits))
        .max()
        .unwrap();
    drop(daemon);
    let daemon = Daemon::start(&test);
    let records = daemon.wait_records("an audit after the restart", |r| {
        weighed(r).iter().any(|r| !before.contains(&r.audit_id))
    });
    let next = weighed(&records)
        .into_iter()
        .find(|r| !before.contains(&r.audit_id))
        .unwrap();
    assert_eq!(
        next.pin.lifetime.as_ref().unwrap().audits,
        counted + 1,
        "the evidence was kept across the restart"
    );

    // Swapped a few audits after the lock: an early audit's own look alarms, and it stands.
    let clean: Vec<String> = daemon
        .records()
        .iter()
        .map(|r| r.audit_id.clone())
        .collect();
    swap_in(&sim, impostor());
    let records = daemon.wait_records("2 audits after the swap", |r| {
        r.iter().filter(|r| !clean.contains(&r.audit_id)).count() >= 3
    });
    // The first may have started before the swap.
    let swapped: Vec<&Record> = records
        .iter()
        .filter(|r| !clean.contains(&r.audit_id))
        .skip(1)
        .collect();
    for r in &swapped {
        assert_eq!(r.pin.status, "drift", "{:?}", r.pin.findings);
        let life = r.pin.lifetime.as_ref().unwrap();
        let alarm = life.alarm.as_ref().expect("an alarm");
        assert_eq!(alarm.cause, "early_audit");
        assert_eq!(alarm.look, Some(0.000_125));
        assert!(alarm.audits > 1 && alarm.audits <= 72, "{}", alarm.audits);
        assert_eq!(drift_cause(r), "early_audit");
    }
    let old = swapped[0].lock_digest.clone();
    drop(daemon);

    // Locked again on what answers now, then the honest model back: the first audit after the
    // new lock sees the change on its own and alarms, and the alarm stands.
    test.run(&["lock", "--samples", "30"]).code(0);
    swap_in(&sim, honest());
    let daemon = Daemon::start(&test);
    let records = daemon.wait_records("2 audits after the new lock", |r| {
        r.iter().filter(|r| r.lock_digest != old).count() >= 2
    });
    let after: Vec<&Record> = records.iter().filter(|r| r.lock_digest != old).collect();
    let first = after[0].pin.lifetime.as_ref().unwrap();
    assert_eq!(first.audits, 1, "a new lock starts the evidence afresh");
    let alarm = first.alarm.as_ref().expect("the first audit alarms");
    assert_eq!(alarm.cause, "first_audit");
    for r in &after {
        assert_eq!(r.pin.status, "drift");
        assert_eq!(drift_cause(r), "first_audit");
    }
}

/// Whether the daemon's audit `r` was a behaviour audit; asserts it is one of the two kinds, as
/// the record shows them: behaviour tests and no next behaviour audit, or identity only (one
/// call a probe, no behaviour test) with the time the next behaviour audit may run.
fn behaviour_audit(r: &Record, identity_calls: u64) -> bool {
    let life = r.pin.lifetime.as_ref().expect("weighed against the lock");
    let behaviour = life.next_behaviour.is_none();
    if behaviour {
        assert!(!r.pin.behaviour.is_empty(), "{:?}", r.pin);
        assert!(r.pin.calls.sent > identity_calls, "{:?}", r.pin.calls);
    } else {
        assert!(r.pin.behaviour.is_empty(), "{:?}", r.pin.behaviour);
        assert_eq!(r.pin.calls.sent, identity_calls, "one call a probe");
        assert_eq!(life.conformal_p, None, "the evidence stood still");
    }
    assert_eq!(r.pin.status, "ok", "{:?}", r.pin.findings);
    behaviour
}

/// The daemon's behaviour budget: audited every second at the default 300 calls a day, a pin
/// gets a behaviour audit on its first tick after a lock and identity checks after it, for hours;
/// when the last behaviour audit ran is kept across a restart and a `store copy`, and a new lock
/// buys one at once.
#[test]
fn between_behaviour_audits_the_daemon_checks_identity_only_and_keeps_its_rhythm() {
    let sim = Sim::start(single(ID, honest()));
    let pins = |store: &str| {
        Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
            .short()
            .daemon()
            .setting("store", store)
            .each_pin("samples", 20)
    };
    let test = pins("store").test().probes();
    test.run(&["lock", "--samples", "30"]).code(0);
    let identity = test.run(&["check", "--no-probes", "--format", "json"]);
    identity.code(0);
    let identity_calls = identity.json().pin("pin").calls.sent;

    let daemon = Daemon::start(&test);
    let records = daemon.wait_records("4 audits", |r| r.len() >= 4);
    let kinds: Vec<bool> = records
        .iter()
        .map(|r| behaviour_audit(r, identity_calls))
        .collect();
    assert!(kinds[0], "the first tick after the lock buys behaviour");
    assert!(!kinds[1..].iter().any(|b| *b), "{kinds:?}");
    let seen: Vec<String> = records.iter().map(|r| r.audit_id.clone()).collect();
    drop(daemon);

    // Restarted, then moved to another store: still identity only.
    let daemon = Daemon::start(&test);
    let after = |seen: &[String], daemon: &Daemon| {
        let records = daemon.wait_records("2 audits more", |r| {
            r.iter().filter(|r| !seen.contains(&r.audit_id)).count() >= 2
        });
        for r in records.iter().filter(|r| !seen.contains(&r.audit_id)) {
            assert!(!behaviour_audit(r, identity_calls), "{r:?}");
        }
        records.into_iter().map(|r| r.audit_id).collect::<Vec<_>>()
    };
    let seen = after(&seen, &daemon);
    drop(daemon);
    test.run(&["store", "copy", "store", "copied"]).code(0);
    let test = test.pins(&pins("copied").to_toml());
    let daemon = Daemon::start(&test);
    let seen = after(&seen, &daemon);
    drop(daemon);

    // A new lock: its first tick is a behaviour audit again.
    test.run(&["lock", "--samples", "30"]).code(0);
    let daemon = Daemon::start(&test);
    let records = daemon.wait_records("an audit after the new lock", |r| {
        r.iter().any(|r| !seen.contains(&r.audit_id))
    });
    let first = records
        .iter()
        .find(|r| !seen.contains(&r.audit_id))
        .unwrap();
    assert!(behaviour_audit(first, identity_calls), "{first:?}");
}
