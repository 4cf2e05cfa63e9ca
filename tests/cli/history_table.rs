//! `modelpin history` as a person reads it: a header row, the newest audit first, columns that
//! line up, and no trailing spaces.

use std::time::Duration;

use modelpin::provider::ProviderKind;

use crate::harness::{ARITH, Sim, Test, one_pin_with};
use crate::support::daemon::Daemon;
use crate::support::wait::eventually;
use crate::world::{model, single};

const ID: &str = "acme-pro-001";

#[test]
fn history_has_a_header_row_newest_first_and_no_trailing_spaces() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = Test::new()
        .pins(&one_pin_with(
            "timeout = \"5s\"\nschedule = \"* * * * * *\"\nmetrics = \"127.0.0.1:0\"\nstore = \"store\"",
            ProviderKind::Gemini,
            &sim.url(ProviderKind::Gemini),
            ID,
            "samples = 1",
        ))
        .file("probes/arith.toml", ARITH);
    test.run(&["lock"]).code(0);
    let mut daemon = Daemon::start(&test);
    let three = eventually(Duration::from_secs(20), || {
        daemon
            .get("/api/history")
            .and_then(|r| serde_json::from_str::<Vec<serde_json::Value>>(&r.text()).ok())
            .is_some_and(|records| records.len() >= 3)
    });
    assert!(three, "three audits stored: {}", daemon.log());
    daemon.signal("TERM");
    assert_eq!(
        daemon.wait_exit(Duration::from_secs(20)),
        Some(0),
        "{}",
        daemon.log()
    );

    let run = test.run(&["history"]);
    run.code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("STARTED (UTC)        PIN") && lines[0].ends_with("FINDINGS"),
        "a header row: {}",
        run.stdout
    );
    assert!(
        lines.iter().all(|l| !l.ends_with(' ')),
        "no trailing spaces: {:?}",
        run.stdout
    );
    let started: Vec<&str> = lines[1..].iter().map(|l| &l[..19]).collect();
    assert!(started.len() >= 3, "{}", run.stdout);
    let mut newest_first = started.clone();
    newest_first.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(started, newest_first, "newest first: {}", run.stdout);
    let status_at = lines[0].find("STATUS").unwrap();
    assert!(
        lines[1..].iter().all(|l| l[status_at..].starts_with("ok")),
        "the columns line up under their header: {}",
        run.stdout
    );
}
