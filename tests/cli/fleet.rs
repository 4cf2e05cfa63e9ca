//! Daemons on one real PostgreSQL server (`[settings] store = "postgres://…"`): one leads (audits,
//! sends notifications), the others stand by and serve the shared store; kill -9 the leader and
//! a standby takes the lease within two lease intervals, carries on the schedule, repeats no
//! stored audit and delivers the dead leader's outbox once; PostgreSQL restarted under the
//! fleet shows on `/healthz` (503) and both recover without a restart.
//!
//! Everything is awaited through `/healthz`, `/metrics` and `/api/history`, never time or logs;
//! the durations printed as `measured:` are what those polls saw.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::harness::{Sim, Test};
use crate::support::daemon::Daemon;
use modelpin::sim::scenario::Reported;

use crate::support::drift::{ID, clean_sim, pins, reroute_now};
use crate::support::pins::Channel;
use crate::support::ports::ClosedPort;
use crate::support::postgres::Postgres;
use crate::support::receivers::Webhook;
use crate::support::relay::Relay;
use crate::support::wait::{DEADLINE, eventually, wait_until};
use crate::world::{model, reroute};

/// Pins of the failover test.
const PINS: usize = 2;

/// The fleet's lease in these tests: short, so a failover is seconds.
const LEASE: Duration = Duration::from_secs(2);

/// `n` pins audited every second into database `db` of `pg`, alerting `channels`; locked.
fn fleet(sim: &Sim, n: usize, pg: &Postgres, db: &str, channels: Vec<Channel>) -> Test {
    pg.create_database(db);
    channels
        .into_iter()
        .fold(pins(sim, n), crate::support::pins::Pins::alert)
        .setting("store", pg.url(db))
        .setting("lease", format!("{}s", LEASE.as_secs()))
        .locked()
}

/// What `/healthz` says: its status and body.
fn health(daemon: &Daemon) -> Option<(u16, String)> {
    daemon.get("/healthz").map(|r| (r.status, r.text()))
}

/// `leader` or `standby` once `/healthz` answers 200 naming one.
fn role(daemon: &Daemon) -> Option<&'static str> {
    let (status, body) = health(daemon)?;
    if status != 200 {
        return None;
    }
    ["leader", "standby"]
        .into_iter()
        .find(|role| body.contains(role))
}

#[track_caller]
fn wait_role(daemon: &Daemon, want: &str) {
    let seen = crate::support::wait::poll(DEADLINE, || role(daemon).filter(|r| *r == want));
    assert!(
        seen.is_some(),
        "the daemon did not become {want}: /healthz {:?}\n{}",
        health(daemon),
        daemon.log()
    );
}

/// A gauge of whole numbers (`modelpin_leader`, `modelpin_lease_term`); -1 when absent.
fn gauge(daemon: &Daemon, name: &str) -> i64 {
    daemon
        .scrape()
        .value(name, &[])
        .map_or(-1, |v| v.round() as i64)
}

fn ids(daemon: &Daemon) -> Vec<String> {
    daemon.records().into_iter().map(|r| r.audit_id).collect()
}

/// Provider calls per stored audit while `daemon` stores `more` audits.
fn calls_per_audit(sim: &Sim, daemon: &Daemon, more: usize) -> f64 {
    let (calls, audits) = (sim.requests(), daemon.records().len());
    let after = daemon.wait_more_stored(more).len();
    (sim.requests() - calls) as f64 / (after - audits) as f64
}

/// The standby serves the shared store: the leader's history, and the status pages.
fn standby_serves_the_store(leader: &Daemon, standby: &Daemon) {
    let seen = ids(leader);
    assert!(
        eventually(DEADLINE, || {
            let served: BTreeSet<String> = ids(standby).into_iter().collect();
            seen.iter().all(|id| served.contains(id))
        }),
        "the standby's /api/history holds the leader's audits"
    );
    let page = standby.get("/").expect("the standby's status page");
    assert_eq!(page.status, 200);
    assert!(page.text().contains("pin-2"), "{}", page.text());
    let pin_page = standby.get("/pins/pin").expect("the standby's pin page");
    assert_eq!(pin_page.status, 200);
}

/// Drifts every pin and waits until each one's firing notification is stored (with its audit)
/// and was tried at the receiver (down).
fn drift_queued(sim: &Sim, leader: &Daemon) {
    reroute_now(sim);
    leader.wait_records("a drift stored for every pin", |records| {
        (1..=PINS).all(|i| {
            let id = if i == 1 {
                "pin".to_owned()
            } else {
                format!("pin-{i}")
            };
            records
                .iter()
                .any(|r| r.pin.id == id && r.has_finding("served_model_mismatch"))
        })
    });
    leader.wait_notifications("hook", "retried", 1);
}

/// The drifted model answers a second late: an audit is under way for that long.
fn slow_answers(sim: &Sim) {
    let mut slow = model("acme-cheap-002", 3.1, (0.1, 0.2));
    slow.latency_ms = 1000;
    sim.set(reroute(sim.sim.scenario(), ID, slow, Reported::Honest));
}

#[test]
fn a_fleet_has_one_leader_and_a_standby_takes_over_after_kill_9() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    // The receiver is down until after the failover: the dead leader's notifications wait in
    // the outbox for the new leader.
    let down = ClosedPort::new();
    let sim = clean_sim();
    let hook = Channel::webhook("hook", &down.url("/hook")).set("repeat", "1h");
    let test = fleet(&sim, PINS, &pg, "fleet", vec![hook]);

    let mut first = Daemon::start(&test);
    wait_role(&first, "leader");
    first.wait_stored(PINS);
    let alone = calls_per_audit(&sim, &first, 6);

    let second = Daemon::start(&test);
    wait_role(&second, "standby");
    assert_eq!(role(&first), Some("leader"), "one leader: {}", first.log());
    assert_eq!(gauge(&first, "modelpin_leader"), 1);
    assert_eq!(gauge(&second, "modelpin_leader"), 0);
    let term = gauge(&first, "modelpin_lease_term");
    assert!(term >= 1, "the leader's term: {term}");
    // The standby has read the lease: the same term.
    second.wait_scrape("the standby's lease term", |s| {
        s.value("modelpin_lease_term", &[])
            .is_some_and(|v| v.round() as i64 == term)
    });

    standby_serves_the_store(&first, &second);

    // Two daemons cost the provider what one does: the standby probes nothing.
    let fleet_calls = calls_per_audit(&sim, &first, 6);
    eprintln!(
        "measured: provider calls per stored audit, one daemon {alone:.2}, a fleet of two {fleet_calls:.2}"
    );
    assert!(
        fleet_calls <= alone * 1.5,
        "the fleet probes twice: {fleet_calls:.2} calls per audit against {alone:.2} alone"
    );

    // A drift: every pin's firing notification is committed with its audit, and waits.
    drift_queued(&sim, &first);

    // Killed mid-audit: each answer now takes a second, and a call has just arrived.
    slow_answers(&sim);
    let calls = sim.requests();
    wait_until(DEADLINE, "a provider call under way", || {
        (sim.requests() > calls).then_some(())
    });
    first.kill();
    let killed = Instant::now();
    let stored_by_the_dead = ids(&second);
    wait_role(&second, "leader");
    let took_over = killed.elapsed();
    assert!(
        took_over <= LEASE * 2,
        "the standby led {took_over:?} after the kill, more than two leases ({:?})\n{}",
        LEASE * 2,
        second.log()
    );
    assert_eq!(
        gauge(&second, "modelpin_lease_term"),
        term + 1,
        "the next term"
    );
    second.wait_stored(stored_by_the_dead.len() + 1);
    let first_audit = killed.elapsed();
    eprintln!(
        "measured: kill -9 to the standby leading {took_over:?}, to its first audit stored {first_audit:?} (lease {LEASE:?}, schedule every second)"
    );

    // The dead leader's outbox is delivered by the new one, once.
    let hook = Webhook::on(down);
    second.wait_notifications("hook", "delivered", PINS as u64);
    second.wait_more_stored(2 * PINS);
    let firing: Vec<String> = hook
        .hits()
        .iter()
        .filter(|h| h.json()["status"] == "firing")
        .map(|h| h.json()["pin"].as_str().unwrap_or_default().to_owned())
        .collect();
    let distinct: BTreeSet<&String> = firing.iter().collect();
    assert_eq!(
        (firing.len(), distinct.len()),
        (PINS, PINS),
        "each pin's firing delivered once: {firing:?}\n{}",
        second.log()
    );

    // Nothing the dead leader stored was lost or stored again.
    let after = ids(&second);
    let unique: BTreeSet<&String> = after.iter().collect();
    assert_eq!(unique.len(), after.len(), "an audit stored twice");
    assert!(
        stored_by_the_dead.iter().all(|id| unique.contains(id)),
        "an audit the dead leader stored is gone"
    );
}

/// Whether process `pid` is stopped (SIGSTOP): its state in `/proc/PID/stat` is `T`.
#[cfg(target_os = "linux")]
fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T'))
    })
}

/// The leader frozen (SIGSTOP) inside an audit's write transaction, holding the lock on the lease
/// row that a takeover must wait for: the server ends the idle session after a third of a lease,
/// so the standby leads within two leases of the freeze, as after a kill -9.
#[cfg(target_os = "linux")]
#[test]
fn a_leader_frozen_inside_a_write_transaction_blocks_no_failover() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    let sim = clean_sim();
    let test = fleet(&sim, PINS, &pg, "frozen", vec![]);
    // The leader stops itself inside its eighth commit's transaction (debug builds' fault point).
    let mut first = Daemon::start_with(&test, &[], &[("MODELPIN_FAULT", "stop-inside-commit:8")]);
    wait_role(&first, "leader");
    let second = Daemon::start(&test);
    wait_role(&second, "standby");
    let pid = first.pid();
    wait_until(DEADLINE, "the leader frozen inside a commit", || {
        stopped(pid).then_some(())
    });
    let frozen = Instant::now();
    wait_role(&second, "leader");
    let took_over = frozen.elapsed();
    eprintln!(
        "measured: leader frozen inside a write transaction to the standby leading {took_over:?} (lease {LEASE:?})"
    );
    assert!(
        took_over <= LEASE * 2,
        "the standby led {took_over:?} after the freeze, more than two leases\n{}",
        second.log()
    );
    let stored = second.records().len();
    second.wait_stored(stored + 1);
    first.kill();
}

/// A leader frozen (SIGSTOP) past its lease resumes (SIGCONT) after a standby took over: it
/// makes no provider call before learning it lost the lease. Each member calls a provider of its
/// own here, so the old leader's calls can be counted apart.
#[cfg(target_os = "linux")]
#[test]
fn a_leader_resumed_after_losing_the_lease_spends_no_call() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    let sim = clean_sim();
    let test = fleet(&sim, PINS, &pg, "resumed", vec![]);
    let own = clean_sim();
    let pins = test.read("pins.toml");
    let moved = pins.replace(
        &sim.url(modelpin::provider::ProviderKind::OpenAi),
        &own.url(modelpin::provider::ProviderKind::OpenAi),
    );
    assert_ne!(moved, pins);
    std::fs::write(test.path("own.toml"), moved).unwrap();
    let mut first = Daemon::start_with(&test, &["--config", "own.toml"], &[]);
    wait_role(&first, "leader");
    first.wait_stored(PINS);
    let second = Daemon::start(&test);
    wait_until(DEADLINE, "the second member standing by", || {
        health(&second).filter(|(_, body)| body.contains("standby"))
    });
    first.signal("STOP");
    let stored = second.records().len();
    wait_until(DEADLINE, "the second member leading and auditing", || {
        (gauge(&second, "modelpin_leader") == 1 && second.records().len() >= stored + PINS)
            .then_some(())
    });
    let calls = own.requests();
    first.signal("CONT");
    wait_until(DEADLINE, "the resumed member standing by", || {
        (gauge(&first, "modelpin_leader") == 0).then_some(())
    });
    // Two more seconds of its schedule: still nothing, as a standby.
    let more = second.records().len();
    second.wait_stored(more + 2 * PINS);
    assert_eq!(
        own.requests(),
        calls,
        "the resumed leader called its provider\n{}",
        first.log()
    );
    first.kill();
}

/// A member started with another pins.toml than the leader's says so on `/healthz` (503) until
/// it runs the same one.
#[test]
fn a_member_with_another_pins_toml_says_so_on_healthz() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    let sim = clean_sim();
    let test = fleet(&sim, PINS, &pg, "digests", vec![]);
    let first = Daemon::start(&test);
    wait_role(&first, "leader");
    let other = test
        .read("pins.toml")
        .replace("timeout = \"2s\"", "timeout = \"3s\"");
    assert_ne!(other, test.read("pins.toml"));
    std::fs::write(test.path("other.toml"), other).unwrap();
    let second = Daemon::start_with(&test, &["--config", "other.toml"], &[]);
    let (status, body) = wait_until(
        DEADLINE,
        "the other member's /healthz naming the mismatch",
        || health(&second).filter(|(_, body)| body.contains("another pins.toml")),
    );
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("standby"), "{body}");
    assert_eq!(role(&first), Some("leader"));
}

#[test]
fn postgres_restarted_under_a_fleet_shows_on_healthz_and_both_recover() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    let sim = clean_sim();
    let test = fleet(&sim, 1, &pg, "restart", Vec::new());
    let first = Daemon::start(&test);
    wait_role(&first, "leader");
    let second = Daemon::start(&test);
    wait_role(&second, "standby");
    assert_eq!(gauge(&first, "modelpin_leader"), 1);
    assert_eq!(gauge(&second, "modelpin_leader"), 0);
    first.wait_stored(2);

    pg.stop();
    let stopped = Instant::now();
    for daemon in [&first, &second] {
        let (status, body) = wait_until(DEADLINE, "/healthz 503 with PostgreSQL down", || {
            health(daemon).filter(|(status, _)| *status == 503)
        });
        assert_eq!(status, 503);
        assert!(body.contains("store"), "{body}");
        assert!(!body.contains("password"), "{body}");
    }
    eprintln!(
        "measured: PostgreSQL stopped to both /healthz 503 in {:?}",
        stopped.elapsed()
    );

    pg.start_again();
    let started = Instant::now();
    assert!(
        eventually(DEADLINE, || {
            let roles = [role(&first), role(&second)];
            roles.iter().all(Option::is_some)
                && roles.iter().filter(|r| **r == Some("leader")).count() == 1
        }),
        "one leader and one standby again: {:?} {:?}\n{}\n{}",
        health(&first),
        health(&second),
        first.log(),
        second.log()
    );
    let recovered = started.elapsed();
    // The schedule carries on, whoever leads; read through either.
    first.wait_more_stored(2);
    eprintln!(
        "measured: PostgreSQL back to one leader and one standby healthy in {recovered:?}, audits stored again after {:?}",
        started.elapsed()
    );
}

/// The leader's link to PostgreSQL cut (a relay that passes nothing and resets nothing, as a
/// dropped network does): it stands down within one lease, the standby leads within two, the
/// cut-off daemon says on `/healthz` that its store is unreachable instead of claiming to lead,
/// healed it comes back as the standby without a restart, and no audit is stored twice.
#[test]
fn the_leader_cut_off_from_postgres_is_replaced_and_comes_back_as_standby() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    let sim = clean_sim();
    let test = fleet(&sim, 1, &pg, "cut", Vec::new());
    let relay = Relay::to(pg.port);
    let through = pg
        .url("cut")
        .replace(&format!(":{}/", pg.port), &format!(":{}/", relay.port));
    with_store(&test, "pins-cut.toml", &through, &pg.url("cut"));
    let first = Daemon::start_with(&test, &["--config", "pins-cut.toml"], &[]);
    wait_role(&first, "leader");
    first.wait_stored(2);
    let second = Daemon::start(&test);
    wait_role(&second, "standby");

    relay.cut();
    let cut = Instant::now();
    // It stands down by its own clock: no longer a leader (no more probes) before the lease
    // it last renewed can run out.
    first.wait_scrape("the cut-off daemon standing down", |s| {
        s.value("modelpin_leader", &[]) == Some(0.0)
    });
    let stood_down = cut.elapsed();
    assert!(
        stood_down < LEASE,
        "the cut-off daemon still led {stood_down:?} after the cut\n{}",
        first.log()
    );
    wait_role(&second, "leader");
    let took_over = cut.elapsed();
    assert!(
        took_over <= LEASE * 2,
        "the standby led {took_over:?} after the cut, more than two leases\n{}",
        second.log()
    );
    let (status, body) = wait_until(DEADLINE, "the cut-off daemon's /healthz 503", || {
        health(&first).filter(|(status, _)| *status == 503)
    });
    assert!(body.contains("store"), "{status} {body}");
    let said = cut.elapsed();
    let stored = ids(&second).len();
    second.wait_stored(stored + 2);
    eprintln!(
        "measured: link cut to the cut-off daemon standing down {stood_down:?}, to the standby leading {took_over:?}, to the cut-off daemon's /healthz 503 {said:?} (lease {LEASE:?})"
    );

    relay.heal();
    let healed = Instant::now();
    wait_role(&first, "standby");
    eprintln!(
        "measured: link healed to the cut-off daemon standing by {:?}",
        healed.elapsed()
    );
    assert_eq!(role(&second), Some("leader"), "{}", second.log());
    second.wait_stored(ids(&second).len() + 2);
    let after = ids(&second);
    let unique: BTreeSet<&String> = after.iter().collect();
    assert_eq!(unique.len(), after.len(), "an audit stored twice");
}

/// The audits in a `modelpin history --format json` run, by ID.
fn history_ids(run: &crate::harness::Run) -> BTreeSet<String> {
    run.code(0);
    let records: Vec<serde_json::Value> = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("history is not a list: {e}\n{}", run.stdout));
    records
        .iter()
        .map(|r| r["audit_id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `pins.toml` with its store `was` swapped for `store`, written as `name`.
fn with_store(test: &Test, name: &str, store: &str, was: &str) {
    let pins = test.read("pins.toml");
    let moved = pins.replace(
        &format!("store = \"{was}\""),
        &format!("store = \"{store}\""),
    );
    assert_ne!(moved, pins, "pins.toml names store = \"store\"");
    std::fs::write(test.path(name), moved).expect("write a copy of pins.toml");
}

#[test]
fn store_copy_moves_history_alert_state_and_outbox_to_postgres_and_back() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    pg.create_database("copied");
    let url = pg.url("copied");
    // A single daemon on sled, its receiver down: each pin's firing waits in the outbox.
    let down = ClosedPort::new();
    let sim = clean_sim();
    let hook = Channel::webhook("hook", &down.url("/hook")).set("repeat", "1h");
    let test = pins(&sim, PINS)
        .alert(hook)
        .setting("store", "store")
        .locked();
    let mut daemon = Daemon::start(&test);
    daemon.wait_stored(PINS);
    drift_queued(&sim, &daemon);
    daemon.signal("TERM");
    assert_eq!(daemon.wait_exit(DEADLINE), Some(0), "{}", daemon.log());
    let on_sled = history_ids(&test.run(&["history", "--since", "1d", "--format", "json"]));
    assert!(on_sled.len() >= 2 * PINS, "{on_sled:?}");

    // sled → PostgreSQL: every audit, each pin's alert state, the outbox with its pending entries.
    let run = test.run(&["store", "copy", "store", &url]);
    run.code(0);
    let said = format!("copied {} audits, {PINS} alert states", on_sled.len());
    assert!(run.stdout.contains(&said), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("verified"), "{}", run.stdout);
    let pending = |run: &crate::harness::Run| {
        let out = &run.stdout;
        let at = out.find(" pending)").expect("a count of pending entries");
        out[..at]
            .rsplit('(')
            .next()
            .and_then(|n| n.trim().parse::<usize>().ok())
            .expect("a number of pending entries")
    };
    assert!(pending(&run) >= PINS, "{}", run.stdout);
    with_store(&test, "pins.pg.toml", &url, "store");
    let on_pg = history_ids(&test.run(&[
        "--config",
        "pins.pg.toml",
        "history",
        "--since",
        "1d",
        "--format",
        "json",
    ]));
    assert_eq!(
        on_pg, on_sled,
        "history read from PostgreSQL after the copy"
    );

    // A store that holds anything is never copied into.
    let again = test.run(&["store", "copy", "store", &url]);
    again.code(2);
    assert!(again.stderr.contains("not empty"), "{}", again.stderr);
    let counted = pg.sql("copied", "SELECT count(*) FROM modelpin_audits");
    assert_eq!(
        counted,
        on_sled.len().to_string(),
        "the refused copy wrote nothing"
    );

    // PostgreSQL → a new sled store: the same again.
    let back = test.run(&["store", "copy", &url, "back"]);
    back.code(0);
    assert!(back.stdout.contains(&said), "{}", back.stdout);
    assert_eq!(pending(&back), pending(&run));
    with_store(&test, "pins.back.toml", "back", "store");
    let on_back = history_ids(&test.run(&[
        "--config",
        "pins.back.toml",
        "history",
        "--since",
        "1d",
        "--format",
        "json",
    ]));
    assert_eq!(on_back, on_sled, "history read from the sled copy");

    // The copied outbox is live: a daemon on PostgreSQL delivers each pin's firing once, and
    // the copied alert state keeps it from firing again.
    let hook = Webhook::on(down);
    let running = Daemon::start_with(&test, &["--config", "pins.pg.toml"], &[]);
    running.wait_notifications("hook", "delivered", PINS as u64);
    running.wait_more_stored(2 * PINS);
    let firing = hook
        .hits()
        .iter()
        .filter(|h| h.json()["status"] == "firing")
        .count();
    assert_eq!(firing, PINS, "each pin's copied firing delivered once");
}

/// A store with rows that no longer decode is not copied: a copy would leave them behind and
/// still count as verified.
#[test]
fn store_copy_refuses_a_store_whose_rows_do_not_all_decode() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    let sim = clean_sim();
    let test = fleet(&sim, 1, &pg, "damaged", Vec::new());
    let mut daemon = Daemon::start(&test);
    daemon.wait_stored(1);
    daemon.signal("TERM");
    assert_eq!(daemon.wait_exit(DEADLINE), Some(0), "{}", daemon.log());
    pg.sql(
        "damaged",
        "INSERT INTO modelpin_audits VALUES ('pin', 1000, 'bad', false, convert_to('{\"not\": 1', 'UTF8'));
         INSERT INTO modelpin_alert_state VALUES (convert_to('pin-x', 'UTF8'), convert_to('[', 'UTF8'))",
    );
    let run = test.run(&["store", "copy", &pg.url("damaged"), "copy"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("holds 2 audits, alert states or outbox entries that do not decode"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing was copied"), "{}", run.stderr);
    assert!(!test.path("copy").exists(), "no store was made at DST");
}

/// Traffic firing notifications the receiver got.
fn traffic_firing(hook: &Webhook) -> usize {
    hook.hits()
        .iter()
        .filter(|h| h.json()["status"] == "firing")
        .count()
}

#[test]
fn spans_posted_to_a_standby_are_judged_once_by_the_leader_and_alert_once() {
    use crate::support::traffic::{request, span};
    use prost::Message as _;

    let Some(pg) = Postgres::start() else {
        return;
    };
    pg.create_database("traffic");
    let other = "acme-flash-002";
    let sim = crate::harness::Sim::start(crate::world::single(ID, model(ID, 4.0, (1.25, 10.0))));
    let hook = Webhook::start();
    let test = crate::support::traffic::pins(&sim)
        .setting("store", pg.url("traffic"))
        .setting("lease", format!("{}s", LEASE.as_secs()))
        .traffic("interval", "1s")
        .alert(Channel::webhook("hook", &hook.url()).set("repeat", "1h"))
        .locked();
    let leader = Daemon::start(&test);
    wait_role(&leader, "leader");
    let standby = Daemon::start(&test);
    wait_role(&standby, "standby");
    let post = |daemon: &Daemon, first: u64, served: &str| {
        let spans = (first..first + 5).map(|i| span(i, ID, served)).collect();
        let body = request(spans).encode_to_vec();
        let answer = crate::support::http::post(
            daemon.port(),
            "/v1/traces",
            &["Content-Type: application/x-protobuf"],
            &body,
        )
        .expect("the receiver answers");
        assert_eq!(answer.status, 200, "{}", answer.head);
    };

    // Spans sent to the standby only: the leader judges them.
    post(&standby, 0, other);
    let records = leader.wait_records("the leader's traffic verdict", |records| {
        records
            .iter()
            .any(|r| r.is_traffic() && r.has_finding("served_model_mismatch"))
    });
    let verdicts = records.iter().filter(|r| r.is_traffic()).count();
    assert_eq!(verdicts, 1, "one verdict for one batch");
    leader.wait_scrape("the leader's traffic gauge", |s| {
        s.value("modelpin_traffic_served_model_mismatch", &[("pin", "pin")]) == Some(1.0)
    });
    leader.wait_notifications("hook", "delivered", 1);
    // The standby accepted them and judged nothing.
    let standby_scrape = standby.scrape();
    assert_eq!(
        standby_scrape.value("modelpin_traffic_served_model_mismatch", &[("pin", "pin")]),
        None,
        "the standby judged traffic"
    );
    assert_eq!(
        standby_scrape.count(
            "modelpin_traffic_spans_received_total",
            &[("result", "matched")]
        ),
        5,
        "the standby counts the spans it accepted"
    );

    // More to both members, some served honestly: one window at the leader holds each span
    // once, whichever member took it, and the drift still fires once.
    post(&standby, 5, other);
    post(&leader, 10, ID);
    let records = standby.wait_records("the verdict over all three batches", |records| {
        records
            .iter()
            .any(|r| r.is_traffic() && r.pin.served_models.len() == 2)
    });
    let last = records
        .iter()
        .rfind(|r| r.is_traffic() && r.pin.served_models.len() == 2)
        .expect("the verdict");
    assert_eq!(
        last.pin.served_models,
        [(other.to_owned(), 10), (ID.to_owned(), 5)]
            .into_iter()
            .collect(),
        "each span judged once"
    );
    assert_eq!(
        pg.sql("traffic", "SELECT count(*) FROM modelpin_spans"),
        "0",
        "the leader took every batch from the inbox"
    );
    assert_eq!(traffic_firing(&hook), 1, "one firing notification");
    assert_eq!(standby.notifications("hook", "delivered"), 0);
}

/// The TLS test's database password.
const PASSWORD: &str = "fleet-db-secret-4417";

#[test]
#[allow(clippy::too_many_lines)] // one server, seven ways to reach it, in the order a user tries them
fn tls_modes_work_against_a_real_server_and_a_refusal_names_why_without_the_password() {
    let Some(pg) = Postgres::start() else {
        return;
    };
    let tls = pg.enable_tls("fleet", PASSWORD);
    pg.sql("postgres", "CREATE DATABASE tls OWNER fleet");
    let sim = clean_sim();
    let test = pins(&sim, 1)
        .setting("store", "store")
        .locked()
        .env("PGPASSWORD", PASSWORD)
        .env("FLEET_DB_PASSWORD", PASSWORD)
        .env("WRONG_DB_PASSWORD", "not-the-password");
    let url = |host: &str, query: &str| format!("postgres://fleet@{host}:{}/tls?{query}", pg.port);
    let n = std::cell::Cell::new(0);
    // pins.toml on `store`, with `extra` in [settings]; the file's name.
    let config = |store: &str, extra: &str| {
        n.set(n.get() + 1);
        let name = format!("pins.tls-{}.toml", n.get());
        let pins = test.read("pins.toml");
        let moved = pins.replace(
            "store = \"store\"",
            &format!("store = \"{store}\"\n{extra}"),
        );
        assert_ne!(moved, pins);
        std::fs::write(test.path(&name), moved).expect("write a pins.toml");
        name
    };
    let history = |name: &str| {
        test.run(&[
            "--config", name, "history", "--since", "1d", "--format", "json",
        ])
    };
    let ca = tls.ca.display().to_string();

    // verify-ca with the right CA: a daemon stores its audits over TLS, the password from the
    // variable `store_password_env` names.
    let verify_ca = config(
        &url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}")),
        "store_password_env = \"FLEET_DB_PASSWORD\"",
    );
    let daemon = Daemon::start_with(&test, &["--config", &verify_ca], &[]);
    wait_role(&daemon, "leader");
    let stored = daemon.wait_stored(1);
    let connections = pg.sql(
        "postgres",
        "SELECT string_agg(ssl::text, ',') FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE usename = 'fleet'",
    );
    assert!(
        !connections.is_empty() && connections.split(',').all(|ssl| ssl == "true"),
        "the daemon's connections, each encrypted: {connections:?}"
    );
    drop(daemon);
    let stored: BTreeSet<String> = stored.into_iter().map(|r| r.audit_id).collect();

    // verify-full to the name the certificate holds, and require (PGPASSWORD): both read it.
    for (query, what) in [
        (
            format!("sslmode=verify-full&sslrootcert={ca}"),
            "verify-full",
        ),
        ("sslmode=require".to_owned(), "require"),
    ] {
        let run = history(&config(&url("127.0.0.1", &query), ""));
        let ids = history_ids(&run);
        assert!(
            stored.is_subset(&ids),
            "{what}: {ids:?} lacks {stored:?}\n{}",
            run.stderr
        );
    }

    // Refused, each saying why and what to do (the help chosen by the server's SQLSTATE or the
    // error under the client's), none showing the password.
    let other = tls.other_ca.display().to_string();
    let nothing = ClosedPort::new();
    for (store, extra, why, help) in [
        (
            url(
                "localhost",
                &format!("sslmode=verify-full&sslrootcert={ca}"),
            ),
            "",
            "certificate",
            "sslrootcert",
        ),
        (
            url(
                "127.0.0.1",
                &format!("sslmode=verify-ca&sslrootcert={other}"),
            ),
            "",
            "certificate",
            "sslrootcert",
        ),
        (
            url("127.0.0.1", "sslmode=disable"),
            "",
            "pg_hba.conf",
            "pg_hba.conf admits",
        ),
        (
            url("127.0.0.1", "sslmode=require"),
            "store_password_env = \"WRONG_DB_PASSWORD\"",
            "password authentication failed",
            "PGPASSWORD",
        ),
        (
            url("127.0.0.1", "sslmode=require").replace("/tls?", "/no_such_db?"),
            "",
            "does not exist",
            "createdb",
        ),
        (
            format!(
                "postgres://fleet@127.0.0.1:{}/tls?sslmode=disable",
                nothing.port()
            ),
            "",
            "refused",
            "listens at the URL's host and port",
        ),
    ] {
        let run = history(&config(&store, extra));
        eprintln!(
            "measured: {store} {extra} → exit {}: {}",
            run.code,
            run.stderr.trim()
        );
        assert_ne!(run.code, 0, "{store} {extra}: {}", run.stdout);
        let help_line = run.stderr.lines().find(|l| l.contains("= help: "));
        assert!(
            run.stderr.contains(why)
                && run.stderr.contains("fleet@")
                && help_line.is_some_and(|l| l.contains(help)),
            "{store} {extra}: the refusal names the store, says {why:?} and what to do ({help:?}):\n{}",
            run.stderr
        );
        for shown in [&run.stdout, &run.stderr] {
            assert!(!shown.contains(PASSWORD), "the password shown:\n{shown}");
        }
    }
}
