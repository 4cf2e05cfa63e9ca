//! The daemon under faults, as a user sees them: a receiver or Alertmanager down and back (what
//! it holds afterwards must be the current truth), a dead channel beside a live one, a backlog, a
//! crash at each step of an audit's commit, a disk that fills and frees (tmpfs), start-up
//! refusals by cause, reloads that need a restart, and promtool on the metrics and rules.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::support::daemon::{Background, Daemon, history};
use crate::support::drift::{ID, clean_sim, pins, project, reroute_now, restore};
use crate::support::http::get;
use crate::support::metrics::Scrape;
use crate::support::pins::{Channel, Value};
use crate::support::receivers::{Alertmanager, Silent, Webhook};
use crate::support::tools::{program, promtool_accepts};
use crate::support::wait::{DEADLINE, eventually, poll};

fn webhook(name: &str, url: &str, repeat: &str) -> Channel {
    Channel::webhook(name, url).set("repeat", repeat)
}

/// Regression: Alertmanager down while a drift was fixed got the resolve first and then the
/// stale firings queued during the outage, and showed the alert active for five more minutes.
#[test]
fn after_an_alertmanager_outage_a_fixed_drift_is_not_active_again() {
    let dir = tempfile::tempdir().unwrap();
    let Some(am) = Alertmanager::start(dir.path()) else {
        return;
    };
    let sim = clean_sim();
    let test = project(&sim, 1, vec![Channel::alertmanager("am", am.port)]);
    let daemon = Daemon::start(&test);
    reroute_now(&sim);
    assert!(
        eventually(DEADLINE, || !am.active().is_empty()),
        "the drift is active in Alertmanager: {}",
        daemon.log()
    );
    let down = am.stop();
    // Every audit re-pushes the firing alert; with Alertmanager down they queue.
    let retries = daemon.notifications("am", "retried");
    daemon.wait_notifications("am", "retried", retries + 3);
    restore(&sim);
    daemon.wait_more_stored(3);
    let delivered_before = daemon.notifications("am", "delivered");
    let am = Alertmanager::start_on(dir.path(), down).unwrap();
    daemon.wait_notifications("am", "delivered", delivered_before + 1);
    assert!(
        daemon.notifications("am", "delivered") > delivered_before,
        "something is delivered after the outage: {}",
        daemon.log()
    );
    // Six more audits of the fixed pin, each pushed, and the alert stays resolved throughout.
    let until = daemon.records().len() + 6;
    let watched = poll(DEADLINE, || {
        assert!(
            am.active().is_empty(),
            "a fixed drift is active again: {:?}\n{}",
            am.active(),
            daemon.log()
        );
        (daemon.records().len() >= until).then_some(())
    });
    assert!(watched.is_some(), "six more audits: {}", daemon.log());
}

/// A webhook that was down while the alert kept repeating and was then fixed hears, when it is
/// back, only the resolve: the queued firings were superseded, and nothing arrives after it.
#[test]
fn a_webhook_back_from_an_outage_hears_only_the_latest_truth() {
    let hook = Webhook::start();
    let sim = clean_sim();
    let test = project(&sim, 1, vec![webhook("hook", &hook.url(), "1s")]);
    let daemon = Daemon::start(&test);
    reroute_now(&sim);
    assert!(
        eventually(DEADLINE, || !hook.hits().is_empty()),
        "{}",
        daemon.log()
    );
    let down = hook.stop();
    let retries = daemon.notifications("hook", "retried");
    daemon.wait_notifications("hook", "retried", retries + 3);
    assert!(
        daemon.notifications("hook", "retried") >= retries + 3,
        "firings queue while the receiver is down: {}",
        daemon.log()
    );
    restore(&sim);
    daemon.wait_more_stored(2);
    let delivered = daemon.notifications("hook", "delivered");
    let hook = Webhook::on(down);
    daemon.wait_notifications("hook", "delivered", delivered + 1);
    assert!(!hook.hits().is_empty(), "{}", daemon.log());
    // Four more audits of the fixed pin, and every delivery counted is at the receiver.
    daemon.wait_more_stored(4);
    let statuses: Vec<String> = hook
        .hits()
        .iter()
        .map(|h| h.json()["status"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(statuses, ["resolved"], "{}", daemon.log());
    assert_eq!(
        daemon.notifications("hook", "delivered"),
        delivered + 1,
        "one delivery after the outage"
    );
}

/// Regression: delivery was serial, so a channel that accepts and never answers cost every other
/// channel a timeout per queued notification.
#[test]
fn a_dead_channel_beside_a_live_one_costs_the_live_one_nothing() {
    const PINS: usize = 12;
    let live = Webhook::start();
    let dead = Silent::start();
    let sim = clean_sim();
    let alerts = vec![
        webhook("live", &live.url(), "1h"),
        webhook("dead", &dead.url(), "1h"),
    ];
    let test = project(&sim, PINS, alerts);
    let daemon = Daemon::start(&test);
    daemon.wait_stored(PINS);
    reroute_now(&sim);
    let started = Instant::now();
    let all = eventually(Duration::from_secs(30), || live.hits().len() >= PINS);
    let took = started.elapsed();
    let pins: BTreeSet<String> = live
        .hits()
        .iter()
        .map(|h| h.json()["pin"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(all, "{} of {PINS} reached the live receiver", pins.len());
    eprintln!("measured: {PINS} firings reached the live channel in {took:?} beside a dead one");
    // One audit of every pin plus delivery; serial delivery needed 2 s per dead attempt.
    assert!(
        took < Duration::from_secs(8),
        "{took:?}; serial delivery would need {} s",
        2 * PINS
    );
    assert_eq!(pins.len(), PINS);
}

/// Regression: a backlog was sent one notification at a time (680 at 0.2 s each took 165 s);
/// now a channel keeps several in flight, so the backlog drains at the receiver's speed.
#[test]
fn a_backlog_drains_with_several_notifications_in_flight() {
    const PINS: usize = 16;
    let each = Duration::from_millis(500);
    let hook = Webhook::slow(each);
    let sim = clean_sim();
    let test = project(&sim, PINS, vec![webhook("hook", &hook.url(), "1h")]);
    let daemon = Daemon::start(&test);
    daemon.wait_stored(PINS);
    reroute_now(&sim);
    assert!(
        eventually(DEADLINE, || !hook.hits().is_empty()),
        "{}",
        daemon.log()
    );
    assert!(
        eventually(DEADLINE, || hook.hits().len() >= PINS),
        "{}",
        daemon.log()
    );
    // Each request takes half a second to answer: a channel sending one at a time never has
    // two open at once, whatever the machine's speed.
    assert!(
        hook.most_in_flight() >= 2,
        "at most {} notification in flight at once",
        hook.most_in_flight()
    );
}

/// Kills the daemon (abort, as `kill -9`) at each step of the first drifted audit's commit, then
/// restarts it: the receiver gets exactly one firing notification, and it comes from the first
/// audit in history — no audit is stored without its alert evaluation, none evaluated twice.
#[test]
fn a_crash_at_each_step_of_an_audit_commit_leaves_all_of_it_or_none() {
    let mut kept = Vec::new();
    for point in ["before-commit", "after-commit-before-flush", "after-flush"] {
        let hook = Webhook::start();
        let sim = clean_sim();
        let test = project(&sim, 1, vec![webhook("hook", &hook.url(), "1h")]);
        reroute_now(&sim);
        let mut crashed = Daemon::start_with(&test, &[], &[("MODELPIN_FAULT", point)]);
        let code = crashed.wait_exit(DEADLINE);
        assert_eq!(code, Some(-1), "killed by the fault: {}", crashed.log());
        // Only the log tells which step the process died at; the store shows what it left.
        assert!(
            crashed
                .log()
                .contains(&format!("fault injected: aborting at {point}")),
            "{}",
            crashed.log()
        );
        let left = history(&test);
        let mut again = Daemon::start(&test);
        again.wait_notifications("hook", "delivered", 1);
        assert!(!hook.hits().is_empty(), "{point}: {}", again.log());
        // Audits go on after the delivery: any second firing would have been queued by now.
        again.wait_more_stored(3);
        again.signal("TERM");
        assert_eq!(again.wait_exit(Duration::from_secs(12)), Some(0));
        let records = history(&test);
        let hits = hook.hits();
        let ids: BTreeSet<&str> = hits.iter().filter_map(|h| h.header("webhook-id")).collect();
        assert_eq!(ids.len(), 1, "{point}: one firing notification: {hits:?}");
        let first = &records[0].audit_id;
        assert_eq!(
            hits[0].json()["auditId"],
            first.as_str(),
            "{point}: the notification comes from the first stored audit"
        );
        let survived = left.iter().any(|r| &r.audit_id == first);
        kept.push((point, survived));
    }
    eprintln!("measured: crashed audit kept in history per fault point: {kept:?}");
    assert_eq!(kept[0], ("before-commit", false));
    assert_eq!(kept[2], ("after-flush", true));
}

/// A tmpfs mounted for one test; unmounted when dropped. `None` (after a notice) where the test
/// may not mount, which includes most CI containers.
struct Tmpfs {
    path: std::path::PathBuf,
}

impl Tmpfs {
    fn mount(path: &std::path::Path, options: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(path)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("notice: cannot mount a tmpfs here (needs root); skipping this test");
            return None;
        }
        Some(Tmpfs {
            path: path.to_owned(),
        })
    }

    /// Writes a file until the filesystem is full.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write as _;
        let filler = self.path.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while file.write_all(&chunk).is_ok() {}
        let _ = file.write_all(&[0u8; 512]);
        let _ = file.sync_all();
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .status();
    }
}

/// Regression: after a full disk every audit failed until a restart, and `/healthz` said 200.
#[test]
fn a_full_disk_makes_healthz_503_and_heals_without_a_restart() {
    let sim = clean_sim();
    let test = project(&sim, 4, vec![]);
    let Some(fs) = Tmpfs::mount(&test.path("store"), "size=8m") else {
        return;
    };
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    daemon.wait_stored(1);
    let filler = fs.fill();
    // Audits held up by the full disk may first make a pin overdue (also a 503); the store's
    // own failure is the reason once its first write has failed.
    let unhealthy = || get(port, "/healthz").filter(|(status, _, _)| *status == 503);
    let mut reason = String::new();
    assert!(
        eventually(DEADLINE, || {
            reason = unhealthy().map(|(_, _, r)| r).unwrap_or_default();
            reason.contains("store writes failing")
        }),
        "healthz turns 503 naming the store while writes fail (last: {reason}): {}",
        daemon.log()
    );
    let failed_at = Instant::now();
    // The disk stays full for a few failed writes, each retried, before space is freed.
    let failures = |s: &Scrape| s.sum("modelpin_store_write_failures_total", &[]);
    let now = failures(&daemon.scrape());
    daemon.wait_scrape("three more failed writes", |s| failures(s) >= now + 3.0);
    std::fs::remove_file(filler).unwrap();
    let freed = Instant::now();
    assert!(
        eventually(DEADLINE, || get(port, "/healthz")
            .is_some_and(|(status, _, _)| status == 200)),
        "healthy again without a restart: {}",
        daemon.log()
    );
    let healed = freed.elapsed();
    daemon.wait_more_stored(2);
    eprintln!(
        "measured: unhealthy for {:?} in all; healthy {healed:?} after space was freed",
        failed_at.elapsed()
    );
    // Every audit the daemon finished (its counter) is in history: none was lost to the disk.
    let finished = |s: &Scrape| s.count("modelpin_audits_total", &[]);
    let reported = poll(DEADLINE, || {
        let records = daemon.records();
        let scrape = daemon.scrape();
        (records.len() as u64 == finished(&scrape)).then_some(records)
    });
    let reported = reported.unwrap_or_else(|| {
        panic!(
            "history holds {} audits, the daemon finished {}",
            daemon.records().len(),
            finished(&daemon.scrape())
        )
    });
    let records = daemon.history(&test);
    for id in reported.iter().map(|r| &r.audit_id) {
        assert!(
            records.iter().any(|r| &r.audit_id == id),
            "audit {id} reported as stored is in history"
        );
    }
}

/// Start-up refusals name the cause and offer `--reset-store` only for a corrupt store.
#[test]
fn a_full_or_read_only_store_at_start_gets_advice_that_fits() {
    let sim = clean_sim();
    let test = project(&sim, 1, vec![]);
    let Some(fs) = Tmpfs::mount(&test.path("store"), "size=1m") else {
        return;
    };
    fs.fill();
    let run = test.run(&["daemon"]);
    run.code(2);
    assert!(run.stderr.contains("the disk is full"), "{}", run.stderr);
    assert!(!run.stderr.contains("--reset-store"), "{}", run.stderr);
    drop(fs);
    let Some(_ro) = Tmpfs::mount(&test.path("store"), "ro,size=1m") else {
        return;
    };
    let run = test.run(&["daemon"]);
    run.code(2);
    assert!(run.stderr.contains("read-only"), "{}", run.stderr);
    assert!(!run.stderr.contains("--reset-store"), "{}", run.stderr);
}

/// Regression: a daemon refused because `check --notify` held the store said "a daemon is
/// already running on it".
#[test]
fn a_store_held_by_check_notify_is_reported_as_such() {
    let dead = Silent::start();
    let sim = clean_sim();
    // A receiver that never answers, tried with 10 s deadlines: `check --notify` holds the store
    // for two attempts (over 20 s), longer than a second process waits for it (5 s).
    let test = pins(&sim, 1)
        .setting("timeout", "10s")
        .alert(webhook("dead", &dead.url(), "1h"))
        .locked();
    reroute_now(&sim);
    let _check = Background::start(&test, &["check", "--notify"]);
    assert!(eventually(DEADLINE, || std::fs::read_to_string(
        test.path("store/holder")
    )
    .is_ok_and(|h| h.contains("check --notify"))));
    let run = test.run(&["daemon"]);
    run.code(2);
    assert!(
        run.stderr
            .contains("in use by `modelpin check --notify` (pid "),
        "{}",
        run.stderr
    );
}

/// Regression: SIGHUP with a changed `store` or `metrics` logged "reloaded" and silently kept
/// the old ones.
#[test]
fn sighup_names_the_settings_that_need_a_restart() {
    let sim = clean_sim();
    let test = project(&sim, 1, vec![]);
    let daemon = Daemon::start(&test);
    daemon.wait_stored(1);
    let _test = test.pins(&pins(&sim, 1).setting("store", "elsewhere").to_toml());
    daemon.signal("HUP");
    // The warning is the behaviour under test: the running daemon keeps the old store, so
    // nothing it serves changes; only the operator's log says why.
    assert!(
        eventually(DEADLINE, || daemon
            .log()
            .contains("apply only after a restart")),
        "{}",
        daemon.log()
    );
    let warning = daemon
        .log()
        .lines()
        .find(|l| l.contains("apply only after a restart"))
        .unwrap()
        .to_owned();
    assert!(warning.contains("settings=store"), "{warning}");
}

/// `/metrics` for a pin with a retirement date passes `promtool check metrics`, and the example
/// alerting rules pass `promtool check rules` and their unit tests.
#[test]
fn promtool_accepts_a_retirement_date_and_the_example_rules() {
    if program("promtool", &["--version"]).is_none() {
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for args in [
        ["check", "rules", "examples/prometheus-rules.yml"],
        ["test", "rules", "tests/fixtures/prometheus-rules.test.yml"],
    ] {
        let out = std::process::Command::new("promtool")
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let sim = clean_sim();
    let retires = (chrono::Utc::now() + chrono::Duration::days(20)).date_naive();
    let test = project(&sim, 1, vec![]);
    let test = test.pins(
        &pins(&sim, 1)
            .each_pin("retires_on", Value::bare(&retires.to_string()))
            .to_toml(),
    );
    let daemon = Daemon::start(&test);
    daemon.wait_stored(1);
    let (_, _, body) = get(daemon.port(), "/metrics").unwrap();
    let midnight = retires.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp();
    assert!(
        body.contains(&format!(
            "modelpin_retirement_timestamp_seconds{{model=\"{ID}\",pin=\"pin\"}} {midnight}"
        )),
        "{body}"
    );
    assert!(body.contains("modelpin_audits_skipped_total{pin=\"pin\"} 0"));
    promtool_accepts(&body);
}
