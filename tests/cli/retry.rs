//! Calls that never hang and never retry blindly, through the simulator: each row of the retry
//! contract seen at the CLI, with the number of requests the provider actually received.

use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{FaultKind, Scenario, SimError};

use crate::harness::{Sim, Test};
use crate::support::pins::Pins;
use crate::world::{fault, model, single};

const ID: &str = "acme-large-2024-08-06";

fn scenario(kind_fault: Option<(Option<u32>, FaultKind)>) -> Scenario {
    let s = single(ID, model(ID, 4.0, (2.5, 10.0)));
    match kind_fault {
        Some((first, kind)) => fault(s, ID, first, kind),
        None => s,
    }
}

/// One probe, one sample: every request the simulator sees belongs to the one call.
fn project(sim: &Sim, kind: ProviderKind, (timeout, budget): (&str, &str)) -> Test {
    Pins::one(kind, &sim.url(kind), ID)
        .setting("timeout", timeout)
        .setting("budget", budget)
        .each_pin("samples", 1)
        .project()
}

/// `project` with a baseline locked against the healthy scenario, then `faulted` in place:
/// returns the requests the simulator had seen before the check.
fn locked(
    sim: &Sim,
    kind: ProviderKind,
    deadlines: (&str, &str),
    faulted: Scenario,
) -> (Test, usize) {
    let test = project(sim, kind, deadlines);
    sim.set(scenario(None));
    test.run(&["lock"]).code(0);
    sim.set(faulted);
    (test, sim.requests())
}

fn rate_limited(retry_after: &str) -> FaultKind {
    FaultKind::Error {
        class: SimError::RateLimited,
        headers: vec![("retry-after".into(), retry_after.into())],
    }
}

#[test]
fn retry_after_one_second_is_honoured_then_succeeds() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::OpenAi,
        ("5s", "30s"),
        scenario(Some((Some(1), rate_limited("1")))),
    );
    let started = Instant::now();
    let run = test.run(&["check", "--format", "json"]);
    let took = started.elapsed();
    run.code(0);
    assert!(
        took >= Duration::from_secs(1),
        "waited at least the asked second: {took:?}"
    );
    let report = run.json();
    let pin = report.pin("pin");
    assert_eq!((pin.calls.sent, pin.calls.ok, pin.calls.retried), (1, 1, 1));
    assert_eq!(sim.requests() - before, 2);
}

#[test]
fn retry_after_past_the_budget_stops_at_once_with_the_providers_words() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::OpenAi,
        ("5s", "60s"),
        scenario(Some((None, rate_limited("3600")))),
    );
    let started = Instant::now();
    let run = test.run(&["check", "--format", "json"]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "no sleeping on a one-hour ask"
    );
    run.code(3);
    assert_eq!(sim.requests() - before, 1);
    let report = run.json();
    let finding = report.pin("pin").finding("inconclusive");
    assert!(
        finding.message.contains("Rate limit reached for"),
        "provider message quoted: {}",
        finding.message
    );
    assert!(
        finding.message.contains("asked to wait 60m"),
        "{}",
        finding.message
    );
}

#[test]
fn anthropic_529_twice_then_200_succeeds() {
    let overloaded = FaultKind::Error {
        class: SimError::Overloaded,
        headers: vec![("x-should-retry".into(), "true".into())],
    };
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::Anthropic,
        ("5s", "30s"),
        scenario(Some((Some(2), overloaded))),
    );
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    assert_eq!(sim.requests() - before, 3);
    assert_eq!(run.json().pin("pin").calls.retried, 2);
}

#[test]
fn a_503_forever_gives_up_after_the_attempt_limit_within_the_budget() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::OpenAi,
        ("5s", "30s"),
        scenario(Some((
            None,
            FaultKind::Error {
                class: SimError::Overloaded,
                headers: vec![],
            },
        ))),
    );
    let started = Instant::now();
    let run = test.run(&["check", "--format", "json"]);
    // Three waits of full jitter under caps 1 s, 2 s and 4 s.
    assert!(
        started.elapsed() < Duration::from_secs(7 + 3),
        "{:?}",
        started.elapsed()
    );
    run.code(3);
    assert_eq!(sim.requests() - before, 4, "the default attempt limit");
    let finding = run
        .json()
        .pin("pin")
        .finding("inconclusive")
        .message
        .clone();
    assert!(finding.contains("gave up after 4 attempts"), "{finding}");
}

#[test]
fn x_should_retry_false_on_a_500_is_one_request() {
    let fault_kind = FaultKind::Error {
        class: SimError::Server,
        headers: vec![("x-should-retry".into(), "false".into())],
    };
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::OpenAi,
        ("5s", "30s"),
        scenario(Some((None, fault_kind))),
    );
    test.run(&["check"]).code(3);
    assert_eq!(sim.requests() - before, 1);
}

#[test]
fn a_connection_dropped_mid_body_is_retried_and_succeeds() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::OpenAi,
        ("5s", "30s"),
        scenario(Some((Some(1), FaultKind::DropMidBody))),
    );
    let run = test.run(&["check", "--format", "json"]);
    run.code(0);
    assert_eq!(sim.requests() - before, 2);
}

#[test]
fn a_server_that_never_answers_ends_within_timeout_times_attempts() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::OpenAi,
        ("1s", "60s"),
        scenario(Some((None, FaultKind::Hang))),
    );
    let started = Instant::now();
    let run = test.run(&["check", "--format", "json"]);
    let took = started.elapsed();
    run.code(3);
    // 4 attempts × 1 s, plus at most 1 + 2 + 4 s of backoff, plus start-up.
    assert!(took < Duration::from_secs(4 + 7 + 2), "{took:?}");
    assert_eq!(sim.requests() - before, 4);
    assert!(
        run.json()
            .pin("pin")
            .finding("inconclusive")
            .message
            .contains("timeout")
    );
}

#[test]
fn a_check_against_a_provider_that_hangs_every_call_finishes_inside_its_budget() {
    let sim = Sim::start(scenario(None));
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .setting("timeout", "60s")
        .setting("budget", "2s")
        .test()
        .probes();
    test.run(&["lock"]).code(0);
    sim.set(scenario(Some((None, FaultKind::Hang))));
    let started = Instant::now();
    let run = test.run(&["check", "--format", "json"]);
    let took = started.elapsed();
    run.code(3);
    assert!(
        took < Duration::from_secs(2 + 2),
        "budget 2 s, took {took:?}"
    );
    let report = run.json();
    let finding = report.pin("pin").finding("inconclusive");
    assert!(finding.message.contains("budget"), "{}", finding.message);
}

#[test]
fn an_oversized_body_is_unparseable_and_not_retried() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::OpenAi,
        ("5s", "30s"),
        scenario(Some((
            None,
            FaultKind::Oversized {
                bytes: 6 * 1024 * 1024,
            },
        ))),
    );
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    assert_eq!(sim.requests() - before, 1);
    assert!(
        run.json()
            .pin("pin")
            .finding("inconclusive")
            .message
            .contains("larger than")
    );
}

#[test]
fn malformed_json_is_unparseable_and_not_retried() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::Gemini,
        ("5s", "30s"),
        scenario(Some((None, FaultKind::Malformed))),
    );
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    assert_eq!(sim.requests() - before, 1);
}

#[test]
fn gemini_per_minute_limits_are_retried_but_an_exhausted_quota_is_not() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::Gemini,
        ("5s", "30s"),
        scenario(Some((
            Some(1),
            FaultKind::Error {
                class: SimError::RateLimited,
                headers: vec![],
            },
        ))),
    );
    test.run(&["check"]).code(0);
    assert_eq!(sim.requests() - before, 2);
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::Gemini,
        ("5s", "30s"),
        scenario(Some((
            None,
            FaultKind::Error {
                class: SimError::Quota,
                headers: vec![],
            },
        ))),
    );
    test.run(&["check"]).code(3);
    assert_eq!(sim.requests() - before, 1);
}

#[cfg(unix)]
#[test]
fn an_interrupted_check_drops_calls_in_flight_and_reports_them_cancelled() {
    let sim = Sim::start(scenario(None));
    let (test, before) = locked(
        &sim,
        ProviderKind::OpenAi,
        ("60s", "60s"),
        scenario(Some((None, FaultKind::Hang))),
    );
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("modelpin"))
        .current_dir(test.dir.path())
        .args(["check", "--format", "json"])
        .env(crate::harness::KEY_VAR, crate::harness::KEY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait until the call is in flight at the simulator, then interrupt.
    let started = Instant::now();
    while sim.requests() == before && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let output = child.wait_with_output().expect("exits");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "ends promptly after the interrupt"
    );
    assert_eq!(output.status.code(), Some(3));
    let report: crate::schema::Report =
        serde_json::from_slice(&output.stdout).expect("a report is still printed");
    let finding = report.pin("pin").finding("inconclusive");
    assert!(
        finding.message.contains("interrupted"),
        "{}",
        finding.message
    );
    assert_eq!(
        sim.requests() - before,
        1,
        "nothing was sent after the interrupt"
    );
}

/// A provider that answers 500 to everything: its circuit breaker opens after `breaker_failures`
/// failed attempts in a row, so the audit makes a handful of attempts instead of every call's
/// four, and the pin is inconclusive with the breaker named as the reason.
#[test]
fn a_provider_failing_everything_trips_its_breaker_after_a_few_attempts() {
    let sim = Sim::start(scenario(None));
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .setting("timeout", "5s")
        .setting("budget", "60s")
        .setting("concurrency", 2)
        .each_pin("samples", 10)
        .project();
    sim.set(scenario(None));
    test.run(&["lock"]).code(0);
    let server_error = FaultKind::Error {
        class: SimError::Server,
        headers: Vec::new(),
    };
    sim.set(scenario(Some((None, server_error))));
    let before = sim.requests();
    let run = test.run(&["check", "--format", "json"]);
    run.code(3);
    let attempts = sim.requests() - before;
    let report = run.json();
    let pin = report.pin("pin");
    let planned = report.pin("pin").calls.sent;
    // The first call alone uses its 4 attempts; the breaker (5 in a row) opens on the first
    // attempt of one of the 2 calls that follow it, and the other is not retried. Without a
    // breaker this was every planned call × 4.
    assert!(attempts <= 6, "{attempts} attempts: {:?}", pin.calls);
    assert!(planned <= 3, "{:?}", pin.calls);
    let finding = pin.finding("inconclusive");
    // Every planned call is accounted for: sent, or not made because of the breaker.
    let planned_line = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("check: 1 pin: "))
        .expect("the plan line");
    let all: u64 = planned_line.split(' ').next().unwrap().parse().unwrap();
    let not_made = all - planned;
    assert!(
        finding.message.ends_with(&format!(
            "; then the circuit breaker for provider `p` opened, so {not_made} calls were not made"
        )),
        "{}",
        finding.message
    );
    let action = finding.action.as_deref().unwrap_or_default();
    assert!(action.contains("status page"), "{action}");
}

/// The daemon keeps its breakers between audits: a provider failing everything opens the
/// breaker and later audits' calls are not made (counted on `/metrics`); once the provider is
/// back, the trial call after the cool-down closes it and audits measure again.
#[test]
fn the_daemon_s_breaker_stays_open_across_audits_and_closes_when_the_provider_is_back() {
    use crate::support::daemon::Daemon;
    let sim = Sim::start(scenario(None));
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .daemon()
        .setting("timeout", "2s")
        .setting("budget", "20s")
        .setting("concurrency", 2)
        .setting("breaker_cooldown", "3s")
        .each_pin("samples", 4)
        .project();
    test.run(&["lock"]).code(0);
    let server_error = FaultKind::Error {
        class: SimError::Server,
        headers: Vec::new(),
    };
    sim.set(scenario(Some((None, server_error))));
    let mut daemon = Daemon::start(&test);
    let provider = [("provider", "p")];
    let open = daemon.wait_scrape("the breaker open, calls not made", |s| {
        s.value("modelpin_breaker_open", &provider) == Some(1.0)
            && s.value("modelpin_breaker_calls_not_made_total", &provider) >= Some(1.0)
    });
    assert!(open.value("modelpin_breaker_trips_total", &provider) >= Some(1.0));
    assert_eq!(
        open.value(
            "modelpin_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );
    // Back: the next trial call gets through and the pin is measured again.
    sim.set(scenario(None));
    daemon.wait_records("an ok audit after the provider is back", |records| {
        records.last().is_some_and(|r| r.pin.status == "ok")
    });
    let closed = daemon.scrape();
    assert_eq!(closed.value("modelpin_breaker_open", &provider), Some(0.0));
    daemon.signal("TERM");
    assert_eq!(daemon.wait_exit(Duration::from_secs(12)), Some(0));
}
