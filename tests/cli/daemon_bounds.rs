//! The daemon's HTTP surface under load and without trust: paged history, a bearer token for
//! `/api/*`, idle connections closed, and no listener off loopback unless asked for.

use std::net::TcpStream;
use std::time::Duration;

use modelpin::provider::ProviderKind;

use crate::daemon::{Daemon, free_port, get, history, project, until};
use crate::harness::{Sim, Test, one_pin_with};
use crate::world::{model, single};

const ID: &str = "acme-pro-001";

fn sim() -> Sim {
    Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))))
}

/// A GET with extra request header lines (each ending in `\r\n`); status, head and body.
fn get_with(port: u16, path: &str, headers: &str) -> Option<(u16, String, String)> {
    let reply = crate::status_page::fetch(port, path, headers)?;
    let body = reply.text();
    Some((reply.status, reply.head, body))
}

fn link_of(head: &str) -> Option<String> {
    let line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("link:"))?;
    let target = line.split_once('<')?.1.split_once('>')?.0;
    Some(target.to_owned())
}

#[test]
fn history_comes_in_pages_that_link_to_the_next_and_the_cli_reads_them_all() {
    let sim = sim();
    let port = free_port();
    let test = project(&sim, port);
    let daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(30), || daemon.stored_ids().len() >= 3),
        "{}",
        daemon.log()
    );
    let (status, head, body) = get(port, "/api/history?limit=1").expect("daemon answers");
    assert_eq!(status, 200, "{head}");
    let page: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(page.len(), 1);
    let next = link_of(&head).expect("a Link to the next page");
    let (_, head2, body2) = get(port, &next).unwrap();
    let page2: Vec<serde_json::Value> = serde_json::from_str(&body2).unwrap();
    assert_eq!(page2.len(), 1);
    assert_ne!(page[0], page2[0], "the next page moves on");
    assert!(link_of(&head2).is_some());
    let (status, _, _) = get(port, "/api/history?cursor=zz").unwrap();
    assert_eq!(status, 400, "a bad cursor is a client error");
    let stored = daemon.stored_ids().len();
    assert!(
        history(&test).len() >= stored,
        "`modelpin history` follows every page"
    );
}

#[test]
fn api_needs_the_bearer_token_when_one_is_configured() {
    let sim = sim();
    let port = free_port();
    let test = project(&sim, port);
    let pins = test.read("pins.toml").replace(
        "store = \"store\"",
        "store = \"store\"\napi_token_env = \"MODELPIN_API_TOKEN\"",
    );
    let test = test
        .pins(&pins)
        .env("MODELPIN_API_TOKEN", "tok-0123456789abcdef");
    let daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(30), || !daemon.stored_ids().is_empty()),
        "{}",
        daemon.log()
    );
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
    assert!(!history(&test).is_empty(), "the CLI sends the token");
}

#[cfg(target_os = "linux")]
#[test]
fn idle_connections_are_capped_and_closed() {
    let sim = sim();
    let port = free_port();
    let test = project(&sim, port);
    let daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(30), || get(port, "/healthz").is_some()),
        "{}",
        daemon.log()
    );
    let fds = || std::fs::read_dir(format!("/proc/{}/fd", daemon.pid())).map_or(0, Iterator::count);
    let before = fds();
    let idle: Vec<TcpStream> = (0..1100)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let during = fds();
    assert!(
        during <= before + 128 + 8,
        "{} idle connections hold {} descriptors (was {before})",
        idle.len(),
        during
    );
    assert!(
        until(Duration::from_secs(15), || get(port, "/healthz")
            .is_some_and(|(s, _, _)| s == 200)),
        "the daemon serves again once idle connections time out"
    );
    // They time out together but close one by one: give the last ones a moment.
    assert!(
        until(Duration::from_secs(5), || fds() <= before + 8),
        "idle connections were closed ({} descriptors, was {before})",
        fds()
    );
    drop(idle);
}

#[test]
fn a_listener_off_loopback_needs_an_explicit_setting_and_is_logged() {
    let sim = sim();
    let port = free_port();
    let settings = format!("schedule = \"0 0 * * * *\"\nmetrics = \"0.0.0.0:{port}\"");
    let pins = one_pin_with(
        &settings,
        ProviderKind::Gemini,
        &sim.url(ProviderKind::Gemini),
        ID,
        "samples = 1",
    );
    let test = Test::new()
        .pins(&pins)
        .file("probes/arith.toml", crate::harness::ARITH);
    let run = test.run(&["daemon"]);
    run.code(2);
    assert!(
        run.stderr.contains("which is not loopback") && run.stderr.contains("metrics_public"),
        "{}",
        run.stderr
    );
    let test = test.pins(&pins.replace(
        "metrics = ",
        "metrics_public = true\nstore = \"store\"\nmetrics = ",
    ));
    let daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(20), || daemon
            .log()
            .contains("metrics_public")),
        "{}",
        daemon.log()
    );
    assert!(daemon.log().contains("WARN"), "{}", daemon.log());
}

#[test]
fn rust_log_filters_the_daemon_log() {
    let sim = sim();
    let port = free_port();
    let test = project(&sim, port).env("RUST_LOG", "warn");
    let quiet = Daemon::start(&test);
    let port2 = free_port();
    let loud_test = project(&sim, port2).env("RUST_LOG", "modelpin=debug");
    let loud = Daemon::start(&loud_test);
    assert!(
        until(Duration::from_secs(30), || loud
            .log()
            .contains("stored audit")),
        "{}",
        loud.log()
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !quiet.log().contains(" INFO "),
        "RUST_LOG=warn drops INFO: {}",
        quiet.log()
    );
    assert!(get(port, "/healthz").is_some(), "the quiet daemon runs");
}
