//! Daemons on one real PostgreSQL server (`[settings] store = "postgres://…"`): one leads (audits,
//! sends notifications), the others stand by and serve the shared store; PostgreSQL restarted
//! under the fleet shows on `/healthz` (503) and both recover without a restart.
//!
//! Everything is awaited through `/healthz`, `/metrics` and `/api/history`, never time or logs;
//! the durations printed as `measured:` are what those polls saw.

use std::time::{Duration, Instant};

use crate::harness::{Sim, Test};
use crate::support::daemon::Daemon;
use crate::support::drift::{clean_sim, pins};
use crate::support::pins::Channel;
use crate::support::postgres::Postgres;
use crate::support::wait::{DEADLINE, eventually, wait_until};

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
