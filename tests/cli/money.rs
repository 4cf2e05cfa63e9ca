//! Spend a user can trust: a pin without a `price` is named before the first call as one the
//! spend cap cannot hold, and every output says "unpriced" (JSON `null`, JUnit `<skipped/>`)
//! rather than a zero that reads as free. GitHub annotations carry what to do.

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{KEY_VAR, SETTINGS, Sim, Test, one_pin_with};
use crate::world::{model, reroute, single};

const ID: &str = "acme-large-2024-08-06";
const SWAP: &str = "acme-small-2024-09-01";

/// One pin on the simulator, with `extra` in its table (a `price`, say); not locked.
fn project(extra: &str) -> (Sim, Test) {
    let sim = Sim::start(single(ID, model(ID, 4.0, (2.5, 10.0))));
    let test = Test::new()
        .pins(&one_pin_with(
            SETTINGS,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            extra,
        ))
        .probes();
    (sim, test)
}

/// A locked unpriced pin whose model is then served by another one (drift).
fn unpriced_drift() -> (Sim, Test) {
    let (sim, test) = project("");
    test.run(&["lock"]).code(0);
    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        model(SWAP, 4.0, (0.5, 2.0)),
        Reported::Honest,
    ));
    (sim, test)
}

#[test]
fn an_unpriced_pin_is_named_before_the_first_call_as_one_the_spend_cap_cannot_limit() {
    let (sim, test) = unpriced_drift();
    let before = sim.requests();
    let run = test.run(&["check", "--max-cost", "0.50", "--format", "json"]);
    run.code(1);
    let warning = run
        .stderr
        .lines()
        .find(|l| l.starts_with("warning: 1 pin has no `price` (pin)"))
        .unwrap_or_else(|| panic!("a warning about the unpriced pin:\n{}", run.stderr));
    assert!(
        warning.contains("the spend cap ($0.50) cannot limit it"),
        "{warning}"
    );
    let plan = run.stderr.find("check: 1 pin: 6 calls planned").unwrap();
    assert!(
        plan < run.stderr.find(warning).unwrap(),
        "the warning follows the plan, before any call: {}",
        run.stderr
    );
    assert!(sim.requests() > before, "the check still runs");
    let report = run.json();
    assert_eq!(report.pin("pin").cost_usd, None);
    assert_eq!(report.summary.cost_usd, None, "no pin priced: no total");
    assert_eq!(report.summary.unpriced_pins, ["pin"]);

    let human = test.run(&["check"]);
    assert!(
        human.stdout.contains("· unpriced · exit 1"),
        "the total says unpriced, not $0.0000:\n{}",
        human.stdout
    );
}

#[test]
fn junit_skips_the_cost_case_of_an_unpriced_pin_and_github_says_unpriced_and_what_to_do() {
    let (_sim, test) = unpriced_drift();
    let junit = test.run(&["check", "--format", "junit"]);
    junit.code(1);
    let cost = junit
        .stdout
        .split("<testcase ")
        .find(|c| c.contains("name=\"cost\""))
        .unwrap_or_else(|| panic!("a cost testcase:\n{}", junit.stdout));
    let cost = cost.split("</testcase>").next().unwrap();
    assert!(
        cost.contains("<skipped message=\"unpriced"),
        "the cost case is skipped, not passed: {cost}"
    );

    let summary = test.path("summary.md");
    let test = test.env("GITHUB_STEP_SUMMARY", &summary.to_string_lossy());
    let github = test.run(&["check", "--format", "github"]);
    github.code(1);
    let error = github
        .stdout
        .lines()
        .find(|l| l.starts_with("::error ") && l.contains("served_model_mismatch"))
        .unwrap_or_else(|| panic!("an error annotation:\n{}", github.stdout));
    assert!(
        error.contains("%0A→ if `acme-small-2024-09-01` is a change you accept"),
        "the annotation carries what to do: {error}"
    );
    assert!(
        github
            .stdout
            .contains("::notice title=modelpin::checked config")
    );
    assert!(github.stdout.contains("drift (1 pin)"), "{}", github.stdout);
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("| unpriced |"), "{md}");
    assert!(
        md.contains("6 calls, ") && md.contains(", unpriced; exit 1."),
        "{md}"
    );
    assert!(!md.contains("$0.0000"), "{md}");
    assert!(
        md.contains("  → if `"),
        "the summary lists what to do: {md}"
    );
}

#[test]
fn a_priced_and_an_unpriced_pin_total_the_priced_one_and_name_the_other() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (2.5, 10.0))));
    let pins = format!(
        "version = 1\n\n[settings]\ntimeout = \"3s\"\n\n[providers.p]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"{KEY_VAR}\"\n\n[[pin]]\nid = \"priced\"\nprovider = \"p\"\nmodel = \"{ID}\"\nprobes = [\"probes/*.toml\"]\nsamples = 3\nprice = {{ input = 2.5, output = 10.0 }}\n\n[[pin]]\nid = \"free-ride\"\nprovider = \"p\"\nmodel = \"{ID}\"\nprobes = [\"probes/*.toml\"]\nsamples = 3\n",
        sim.url(ProviderKind::OpenAi)
    );
    let test = Test::new().pins(&pins).probes();
    let lock = test.run(&["lock"]);
    lock.code(0);
    assert!(
        lock.stderr.contains("about $") && lock.stderr.contains(" for the 1 pin priced,"),
        "{}",
        lock.stderr
    );
    assert!(
        lock.stderr
            .contains("warning: 1 pin has no `price` (free-ride)"),
        "{}",
        lock.stderr
    );
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    let report = run.json();
    let priced = report.pin("priced").cost_usd.expect("priced");
    assert!(priced > 0.0);
    assert_eq!(
        report.summary.cost_usd,
        Some(priced),
        "the priced pin's cost"
    );
    assert_eq!(report.summary.unpriced_pins, ["free-ride"]);
    let human = test.run(&["check"]);
    assert!(
        human.stdout.contains(" + 1 pin unpriced · exit 0"),
        "{}",
        human.stdout
    );
}

/// Before the first lock: the plan counts the pin it will not call, and a priced pin that sent
/// nothing cost $0.0000 — known, not "unpriced".
#[test]
fn a_priced_pin_without_a_baseline_is_one_pin_that_cost_nothing() {
    let (sim, test) = project("price = { input = 2.5, output = 10.0 }");
    let run = test.run(&["check"]);
    run.code(3);
    assert!(
        run.stderr
            .contains("check: 1 pin: 0 calls planned (no baseline for it: none is called)"),
        "{}",
        run.stderr
    );
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("pin "))
        .expect("the pin's row");
    assert!(row.trim_end().ends_with("$0.0000"), "{}", run.stdout);
    assert!(!run.stdout.contains("unpriced"), "{}", run.stdout);
    assert_eq!(sim.requests(), 0);
    let json = test.run(&["check", "--format", "json"]).json();
    assert_eq!(json.pin("pin").cost_usd, Some(0.0));
}

/// A pin whose `price` was removed after its lock is priced at the lock's recorded price
/// everywhere: the plan's estimate, the spend cap and the report agree on one figure.
#[test]
fn a_pin_priced_only_by_its_lock_is_estimated_capped_and_reported_at_that_price() {
    let (sim, test) = project("price = { input = 2.5, output = 10.0 }");
    test.run(&["lock"]).code(0);
    let pins = test
        .read("pins.toml")
        .replace("price = { input = 2.5, output = 10.0 }", "");
    let test = test.file("pins.toml", &pins);
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    assert!(!run.stderr.contains("unpriced"), "{}", run.stderr);
    let estimated: f64 = run
        .stderr
        .split("about $")
        .nth(1)
        .and_then(|rest| rest.split([',', ')']).next())
        .and_then(|usd| usd.parse().ok())
        .unwrap_or_else(|| panic!("an estimate in dollars: {}", run.stderr));
    let report = run.json();
    let pin = report.pin("pin");
    let tokens = &pin.tokens;
    let at_lock = (tokens.input as f64 * 2.5 + tokens.output as f64 * 10.0) / 1e6;
    let reported = pin.cost_usd.expect("priced by the lock");
    assert!((reported - at_lock).abs() < 1e-6, "{reported} vs {at_lock}");
    // The cap holds that price too: a cap below the estimate sends nothing.
    let before = sim.requests();
    let refused = test.run(&["check", "--max-cost", &format!("{:.4}", estimated / 2.0)]);
    refused.code(2);
    assert!(
        refused.stderr.contains("over the spend cap")
            && refused.stderr.contains("nothing was sent"),
        "{}",
        refused.stderr
    );
    assert_eq!(sim.requests(), before);
}

/// The first figure of `line` after `after`, up to a space, comma or parenthesis.
fn figure_after(line: &str, after: &str) -> f64 {
    line.split(after)
        .nth(1)
        .and_then(|rest| rest.split([',', ' ', ')']).next()?.parse().ok())
        .unwrap_or_else(|| panic!("no figure after {after:?} in {line}"))
}

/// The plan line `check` prints before it calls: its calls and USD for one audit.
fn plan_of(run: &crate::harness::Run) -> (u64, f64) {
    let plan = run
        .stderr
        .lines()
        .find(|l| l.starts_with("check: 1 pin: "))
        .unwrap_or_else(|| panic!("a plan line:\n{}", run.stderr));
    let calls = figure_after(plan, "check: 1 pin: ") as u64;
    (calls, figure_after(plan, "about $"))
}

/// The daemon says at start what its schedules will spend a day and a month: hourly, with a
/// behaviour budget paying for a behaviour audit every 6 hours, 4 behaviour audits (the plan
/// `check` prints) and 20 identity checks (the plan `check --no-probes` prints) a day; `lock` and
/// `check` say the same.
#[test]
fn the_daemon_states_its_spend_a_day_and_a_month_from_the_audit_plan() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (2.5, 10.0))));
    let pins = |budget: u64| {
        let settings = format!(
            "{SETTINGS}\nschedule = \"0 0 * * * *\"\nmetrics = \"127.0.0.1:0\"\nstore = \"store\"\nbehavior_calls_per_day = {budget}"
        );
        one_pin_with(
            &settings,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "price = { input = 2.5, output = 10.0 }",
        )
    };
    let test = Test::new().pins(&pins(300)).probes();
    test.run(&["lock"]).code(0);
    let behaviour = test.run(&["check"]);
    let identity = test.run(&["check", "--no-probes"]);
    let ((calls, usd), (identity_calls, identity_usd)) = (plan_of(&behaviour), plan_of(&identity));
    assert!(identity_calls < calls, "{identity_calls} vs {calls}");
    // A day pays for the extra calls of 4 behaviour audits: one every 6 hours.
    let test = test.pins(&pins(4 * (calls - identity_calls)));
    let lock = test.run(&["lock"]);
    lock.code(0);
    let check = test.run(&["check"]);
    check.code(0);
    let mut daemon = crate::support::daemon::Daemon::start(&test);
    let log = daemon.log();
    let said = log
        .lines()
        .find(|l| l.contains("planned spend at these schedules"))
        .unwrap_or_else(|| panic!("no spend line:\n{log}"));
    let split = format!(
        "24 audits a day, 4 of them behaviour audits ({} calls) and the rest identity only ({} calls): about {} calls",
        4 * calls,
        20 * identity_calls,
        4 * calls + 20 * identity_calls
    );
    assert!(said.contains(&split), "{said}\n(wanted: {split})");
    // The plan lines round one audit to $0.0001; the daemon counts unrounded, so its month is
    // within 720 such roundings of 120 behaviour audits and 600 identity checks.
    let day = figure_after(said, "tokens a day, about $");
    let month = figure_after(said, "a day and $");
    assert!((month - day * 30.0).abs() < 0.01, "{said}");
    let planned = 30.0 * (4.0 * usd + 20.0 * identity_usd);
    assert!(
        (month - planned).abs() <= 0.00005 * 720.0 + 0.005,
        "{said}: expected about ${planned:.2} a month"
    );
    // `lock` and `check` say the same day and month before anything runs unattended.
    for (command, run) in [("lock", &lock), ("check", &check)] {
        let line = run
            .stderr
            .lines()
            .find(|l| l.contains("watched by `modelpin daemon` at these schedules: "))
            .unwrap_or_else(|| panic!("{command} states no daily spend:\n{}", run.stderr));
        assert!(line.contains(&split), "{command}: {line}");
        assert!(
            line.contains(&format!("and ${month:.2} a month (30 days)")),
            "{command}: {line} (daemon: {said})"
        );
    }
    daemon.kill();
}
