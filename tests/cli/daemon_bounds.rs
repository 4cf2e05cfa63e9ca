//! The daemon's HTTP surface under load and without trust: paged history, a bearer token for
//! `/api/*`, idle connections closed, and no listener off loopback unless asked for.

use std::net::TcpStream;
use std::time::Duration;

use chrono::{DateTime, Utc};
use modelpin::provider::ProviderKind;

use crate::harness::Sim;
use crate::schema::Record;
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

/// Every record of `path`'s pages, each page `(records, Link target)`; every answer a 200.
fn pages(port: u16, path: &str) -> Vec<(Vec<Record>, Option<String>)> {
    let mut pages = Vec::new();
    let mut path = Some(path.to_owned());
    while let Some(at) = path {
        let (status, head, body) = get(port, &at).expect("daemon answers");
        assert_eq!(status, 200, "{at}: {head}\n{body}");
        let page: Vec<Record> = serde_json::from_str(&body).unwrap();
        path = next_link(&head);
        pages.push((page, path.clone()));
        assert!(pages.len() < 1000, "the Link headers go round");
    }
    pages
}

/// Every record of `path`'s pages, page after page.
fn records(port: u16, path: &str) -> Vec<Record> {
    pages(port, path)
        .into_iter()
        .flat_map(|(page, _)| page)
        .collect()
}

fn started(record: &Record) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(&record.started_at)
        .unwrap()
        .with_timezone(&Utc)
}

/// A refusal: the status, and a one-line plain-text body.
#[track_caller]
fn refused(port: u16, path: &str, status: u16) -> String {
    let (got, head, body) = get(port, path).expect("daemon answers");
    assert_eq!(got, status, "{path}: {head}\n{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain"),
        "{head}"
    );
    assert!(
        body.ends_with('\n') && body.trim_end().lines().count() == 1,
        "{body:?}"
    );
    body
}

#[test]
fn history_takes_durations_pages_newest_first_and_names_what_it_refuses() {
    let sim = sim();
    let test = pins(&sim).locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    daemon.wait_stored(3);
    let before = Utc::now();
    daemon.wait_more_stored(1);

    // `since` as `modelpin history --since` takes it: that long ago.
    let recent = records(port, "/api/history?since=1m");
    assert!(
        !recent.is_empty(),
        "an audit stored just now started within a minute"
    );
    let minute = chrono::Duration::minutes(1);
    assert!(recent.iter().all(|r| started(r) >= before - minute));
    assert!(records(port, "/api/history?since=0s").is_empty());
    let body = refused(port, "/api/history?since=yesterday%1b%5b2J", 400);
    assert!(
        body.contains("`since`") && body.contains("`yesterday\\u{1b}[2J`"),
        "{body}"
    );
    assert!(body.contains("`7d`") && body.contains("RFC 3339"), "{body}");
    let body = refused(port, "/api/history?order=newest", 400);
    assert!(
        body.contains("`order`") && body.contains("`desc`"),
        "{body}"
    );
    let body = refused(port, "/api/history?limit=many", 400);
    assert!(
        body.contains("`limit`") && body.contains("`many`"),
        "{body}"
    );
    assert!(!body.contains("deserialize"), "{body}");

    // Newest first, page by page: every record once, each Link keeping the order.
    let newest = pages(port, "/api/history?order=desc&limit=2");
    assert!(newest.len() >= 2, "more than one page");
    for (page, link) in &newest {
        assert!(page.len() <= 2);
        if let Some(link) = link {
            assert!(
                link.contains("order=desc") && link.contains("cursor="),
                "{link}"
            );
        }
    }
    let newest: Vec<Record> = newest.into_iter().flat_map(|(page, _)| page).collect();
    assert!(newest.windows(2).all(|w| started(&w[0]) >= started(&w[1])));
    // Audits go on meanwhile: oldest first holds what newest first did, and maybe more after.
    let oldest = daemon.records();
    let ids = |records: &[Record]| -> Vec<String> {
        records.iter().map(|r| r.audit_id.clone()).collect()
    };
    let mut reversed = ids(&newest);
    reversed.reverse();
    assert_eq!(ids(&oldest[..reversed.len()]), reversed);
}

#[test]
fn an_unknown_pin_is_a_404_and_a_removed_one_keeps_its_history() {
    let sim = sim();
    let test = pins(&sim).locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    daemon.wait_stored(1);
    let body = refused(port, "/api/history?pin=nope", 404);
    assert_eq!(body, "no pin `nope` in pins.toml or in the store\n");

    // pins.toml renames the pin; until the daemon reloads it, the new pin is unknown there,
    // and `modelpin history` reads that as no audits yet.
    let renamed = test
        .read("pins.toml")
        .replace("id = \"pin\"", "id = \"second\"");
    let test = test.pins(&renamed);
    let run = daemon.history_run(&test, &["--pin", "second", "--format", "json"]);
    run.code(0);
    assert_eq!(run.stdout.trim(), "[]", "{}", run.stderr);
    daemon.signal("HUP");
    daemon.wait_records("the renamed pin to be audited", |records| {
        records.iter().any(|r| r.pin.id == "second")
    });
    let removed = records(port, "/api/history?pin=pin");
    assert!(
        !removed.is_empty(),
        "the removed pin's records are still served"
    );
    assert!(removed.iter().all(|r| r.pin.id == "pin"));
    let second = daemon.history_run(&test, &["--pin", "second", "--format", "json"]);
    second.code(0);
    assert!(second.stdout.contains("\"second\""), "{}", second.stdout);
    refused(port, "/api/history?pin=nope", 404);
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
