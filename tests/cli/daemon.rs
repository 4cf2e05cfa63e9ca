//! `modelpin daemon` as a real process: scheduled audits against the simulator, history and
//! metrics that follow a switch of the served model, clean shutdown, crash safety, one daemon
//! per store.

use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{Sim, Test};
use crate::support::daemon::{Daemon, history};
use crate::support::http::get;
use crate::support::pins::Pins;
use crate::support::tools::promtool_accepts;
use crate::support::wait::{DEADLINE, eventually};
use crate::world::{model, reroute, single};

const ID: &str = "acme-pro-001";

/// A locked project whose pin is audited every second.
fn project(sim: &Sim) -> Test {
    Pins::one(ProviderKind::Gemini, &sim.url(ProviderKind::Gemini), ID)
        .setting("timeout", "5s")
        .setting("budget", "30s")
        .daemon()
        .each_pin("samples", 2)
        .locked()
}

fn served(record: &crate::schema::Record) -> Vec<String> {
    record.pin.served_models.keys().cloned().collect()
}

#[test]
fn daemon_sees_a_switch_of_the_served_model_in_history_and_metrics() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = project(&sim);
    let mut daemon = Daemon::start(&test);
    daemon.wait_stored(1);
    let first = daemon.history(&test);
    assert!(!first.is_empty(), "an audit is stored: {}", daemon.log());
    assert_eq!(first[0].pin.status, "ok", "{first:?}");

    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        model("acme-flash-002", 3.3, (0.5, 3.0)),
        Reported::Honest,
    ));
    daemon.wait_records("history to show the new model", |records| {
        records
            .iter()
            .any(|r| served(r).contains(&"acme-flash-002".to_owned()))
    });
    let switched = daemon
        .history(&test)
        .iter()
        .any(|r| served(r).contains(&"acme-flash-002".to_owned()));
    assert!(switched, "history shows the new model: {}", daemon.log());
    let last = daemon.history(&test).pop().unwrap();
    assert_eq!(last.pin.status, "drift");

    let (status, head, body) = get(daemon.port(), "/metrics").expect("metrics answer");
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(
        body.contains("modelpin_served_model_mismatch{pin=\"pin\"} 1"),
        "{body}"
    );
    assert!(body.contains("served=\"acme-flash-002\""), "{body}");
    assert_eq!(
        daemon
            .scrape()
            .value("modelpin_served_model_mismatch", &[("pin", "pin")]),
        Some(1.0)
    );
    assert!(body.contains("# TYPE modelpin_audits_total counter"));
    promtool_accepts(&body);

    let (health, _, _) = get(daemon.port(), "/healthz").expect("healthz answers");
    assert_eq!(health, 200);

    daemon.signal("TERM");
    assert_eq!(
        daemon.wait_exit(Duration::from_secs(12)),
        Some(0),
        "{}",
        daemon.log()
    );
}

#[test]
fn sigterm_during_a_slow_audit_exits_0_within_12_seconds_with_history_intact() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = project(&sim);
    let mut daemon = Daemon::start(&test);
    daemon.wait_stored(1);
    let mut slow = sim.sim.scenario();
    slow.models.get_mut(ID).unwrap().latency_ms = 60_000;
    sim.set(slow);
    let seen = sim.requests();
    assert!(
        eventually(DEADLINE, || sim.requests() > seen),
        "a slow call is in flight"
    );
    // What the daemon reported as stored before it was asked to stop.
    let stored: Vec<String> = daemon.records().into_iter().map(|r| r.audit_id).collect();
    let stopping = Instant::now();
    daemon.signal("TERM");
    assert_eq!(
        daemon.wait_exit(Duration::from_secs(12)),
        Some(0),
        "{}",
        daemon.log()
    );
    assert!(stopping.elapsed() < Duration::from_secs(12));
    let records = history(&test);
    for id in &stored {
        assert!(records.iter().any(|r| &r.audit_id == id), "audit {id} kept");
    }
    let cut = records.last().unwrap();
    assert_eq!(
        cut.pin.status, "inconclusive",
        "the cancelled audit is recorded as inconclusive"
    );
}

#[test]
fn kill_9_then_restart_keeps_every_audit_reported_as_stored() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = project(&sim);
    let mut daemon = Daemon::start(&test);
    let reported = daemon.wait_stored(3);
    daemon.kill();
    let records = history(&test);
    for id in reported.iter().map(|r| &r.audit_id) {
        assert!(
            records.iter().any(|r| &r.audit_id == id),
            "audit {id} survived kill -9"
        );
    }
    // And the store opens again for a new daemon.
    let mut again = Daemon::start(&test);
    again.wait_more_stored(1);
    again.signal("TERM");
    assert_eq!(again.wait_exit(Duration::from_secs(12)), Some(0));
}

#[test]
fn a_second_daemon_on_the_same_store_is_refused() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = project(&sim);
    // Listening means the first daemon holds the store: it opens it before it binds.
    let _first = Daemon::start(&test);
    let run = test.run(&["daemon"]);
    run.code(2);
    assert!(
        run.stderr.contains("in use by a modelpin daemon (pid "),
        "{}",
        run.stderr
    );
}

#[test]
fn sighup_reloads_a_valid_config_and_keeps_the_old_one_when_invalid() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = project(&sim);
    let good = test.read("pins.toml");
    let daemon = Daemon::start(&test);
    let digest = daemon.wait_stored(1)[0].config_digest.clone();

    let test = test.pins("version = 1\nthis is not toml\n");
    daemon.signal("HUP");
    // The refusal changes nothing the daemon serves: only its log says the reload was refused.
    assert!(
        eventually(DEADLINE, || daemon
            .log()
            .contains("keeping the running config")),
        "{}",
        daemon.log()
    );
    let after = daemon.wait_more_stored(1);
    assert!(
        after.last().is_some_and(|r| r.config_digest == digest),
        "still auditing with the old config"
    );

    let second = good.replace("id = \"pin\"", "id = \"second\"");
    let test = test.pins(&format!(
        "{good}\n{}",
        &second[second.find("[[pin]]").unwrap()..]
    ));
    daemon.signal("HUP");
    daemon.wait_records("the new pin to be audited", |records| {
        records.iter().any(|r| r.pin.id == "second")
    });
    let audited_second = daemon
        .history(&test)
        .iter()
        .any(|r| r.pin.id == "second" && r.config_digest != digest);
    assert!(audited_second, "the new pin is scheduled: {}", daemon.log());
}
