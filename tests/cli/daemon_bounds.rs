//! The daemon's HTTP surface under load and without trust: paged history, a bearer token for
//! `/api/*`, idle connections closed, and no listener off loopback unless asked for.

use std::net::TcpStream;
use std::time::Duration;

use modelpin::provider::ProviderKind;

use crate::harness::Sim;
use crate::support::daemon::Daemon;
use crate::support::http::{fetch, get, next_link};
use crate::support::pins::Pins;
use crate::support::wait::{DEADLINE, eventually};
use crate::world::{model, single};

const ID: &str = "acme-pro-001";

fn sim() -> Sim {
    Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))))
}

/// A pin audited every second.
fn pins(sim: &Sim) -> Pins {
    Pins::one(ProviderKind::Gemini, &sim.url(ProviderKind::Gemini), ID)
        .setting("timeout", "5s")
        .setting("budget", "30s")
        .daemon()
        .each_pin("samples", 2)
}

/// A GET with extra request header lines (each ending in `\r\n`); status, head and body.
fn get_with(port: u16, path: &str, headers: &str) -> Option<(u16, String, String)> {
    let reply = fetch(port, path, headers)?;
    let body = reply.text();
    Some((reply.status, reply.head, body))
}

#[test]
fn history_comes_in_pages_that_link_to_the_next_and_the_cli_reads_them_all() {
    let sim = sim();
    let test = pins(&sim).locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    daemon.wait_stored(3);
    let (status, head, body) = get(port, "/api/history?limit=1").expect("daemon answers");
    assert_eq!(status, 200, "{head}");
    let page: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(page.len(), 1);
    let next = next_link(&head).expect("a Link to the next page");
    let (_, head2, body2) = get(port, &next).unwrap();
    let page2: Vec<serde_json::Value> = serde_json::from_str(&body2).unwrap();
    assert_eq!(page2.len(), 1);
    assert_ne!(page[0], page2[0], "the next page moves on");
    assert!(next_link(&head2).is_some());
    let (status, _, _) = get(port, "/api/history?cursor=zz").unwrap();
    assert_eq!(status, 400, "a bad cursor is a client error");
    let stored = daemon.records().len();
    assert!(
        daemon.history(&test).len() >= stored,
        "`modelpin history` follows every page"
    );
}

#[test]
fn api_needs_the_bearer_token_when_one_is_configured() {
    let sim = sim();
    let test = pins(&sim)
        .setting("api_token_env", "MODELPIN_API_TOKEN")
        .locked()
        .env("MODELPIN_API_TOKEN", "tok-0123456789abcdef");
    let daemon = Daemon::start(&test).token("tok-0123456789abcdef");
    let port = daemon.port();
    daemon.wait_stored(1);
    let (status, head, _) = get(port, "/api/history").unwrap();
    assert_eq!(status, 401, "{head}");
    let wrong = get_with(port, "/api/history", "Authorization: Bearer nope\r\n").unwrap();
    assert_eq!(wrong.0, 401);
    let right = get_with(
        port,
        "/api/history",
        "Authorization: Bearer tok-0123456789abcdef\r\n",
    )
    .unwrap();
    assert_eq!(right.0, 200);
    assert_eq!(get(port, "/metrics").unwrap().0, 200, "metrics stay open");
    assert!(!daemon.history(&test).is_empty(), "the CLI sends the token");
}

#[cfg(target_os = "linux")]
#[test]
fn idle_connections_are_capped_and_closed() {
    let sim = sim();
    let test = pins(&sim).locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    assert!(
        eventually(DEADLINE, || get(port, "/healthz").is_some()),
        "{}",
        daemon.log()
    );
    let fds = || std::fs::read_dir(format!("/proc/{}/fd", daemon.pid())).map_or(0, Iterator::count);
    let before = fds();
    let idle: Vec<TcpStream> = (0..1100)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    // The daemon takes connections up to its cap and leaves the rest in the backlog: wait until
    // it has taken what it will (its descriptors stop growing), then hold it to the cap.
    let mut last = fds();
    let settled = eventually(DEADLINE, || {
        std::thread::sleep(Duration::from_millis(100));
        let now = fds();
        let same = now == last && now > before;
        last = now;
        same
    });
    let during = fds();
    assert!(settled, "the daemon took the connections it will");
    assert!(
        during <= before + 128 + 8,
        "{} idle connections hold {} descriptors (was {before})",
        idle.len(),
        during
    );
    assert!(
        eventually(DEADLINE, || get(port, "/healthz")
            .is_some_and(|(s, _, _)| s == 200)),
        "the daemon serves again once idle connections time out"
    );
    // They time out together but close one by one: give the last ones a moment.
    assert!(
        eventually(DEADLINE, || fds() <= before + 8),
        "idle connections were closed ({} descriptors, was {before})",
        fds()
    );
    drop(idle);
}

#[test]
fn a_listener_off_loopback_needs_an_explicit_setting_and_is_logged() {
    let sim = sim();
    let pins = Pins::one(ProviderKind::Gemini, &sim.url(ProviderKind::Gemini), ID)
        .setting("schedule", "0 0 * * * *")
        .setting("metrics", "0.0.0.0:0")
        .each_pin("samples", 1);
    let test = pins.project();
    let run = test.run(&["daemon"]);
    run.code(2);
    assert!(
        run.stderr.contains("which is not loopback") && run.stderr.contains("metrics_public"),
        "{}",
        run.stderr
    );
    let test = test.pins(
        &pins
            .setting("metrics_public", true)
            .setting("store", "store")
            .to_toml(),
    );
    // The warning is the behaviour under test: a log line is what the operator is shown.
    let daemon = Daemon::start(&test);
    let log = daemon.log();
    assert!(log.contains("metrics_public"), "{log}");
    assert!(log.contains("WARN"), "{log}");
}

#[cfg(target_os = "linux")]
#[test]
fn rust_log_filters_the_daemon_log() {
    let sim = sim();
    let test = pins(&sim).locked().env("RUST_LOG", "warn");
    let quiet = Daemon::start_unannounced(&test);
    let loud_test = pins(&sim).locked().env("RUST_LOG", "modelpin=debug");
    let loud = Daemon::start(&loud_test);
    loud.wait_stored(1);
    // The quiet daemon has audited too, so it had INFO lines to drop.
    quiet.wait_stored(1);
    assert!(loud.log().contains("stored audit"), "{}", loud.log());
    assert!(
        !quiet.log().contains(" INFO "),
        "RUST_LOG=warn drops INFO: {}",
        quiet.log()
    );
    assert!(
        get(quiet.port(), "/healthz").is_some(),
        "the quiet daemon runs"
    );
}
