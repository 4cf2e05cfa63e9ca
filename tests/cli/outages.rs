//! The daemon under faults, as a user sees them: a receiver or Alertmanager down and back (what
//! it holds afterwards must be the current truth), a dead channel beside a live one, a backlog, a
//! crash at each step of an audit's commit, a disk that fills and frees (tmpfs), start-up
//! refusals by cause, reloads that need a restart, and promtool on the metrics and rules.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::daemon::{Daemon, free_port, get, history, until};
use crate::harness::{ARITH, Sim, Test, one_pin_with};
use crate::receivers::{Alertmanager, Silent, Webhook};
use crate::world::{model, reroute, single};

const ID: &str = "acme-pro-001";

/// A locked project of `pins` pins (`pin`, `pin-2`, …) on one simulated model, audited every
/// second, with the given `[alerts.*]` tables.
pub fn project(sim: &Sim, pins: usize, alerts: &str) -> Test {
    project_with(sim, pins, "", alerts)
}

pub fn project_with(sim: &Sim, pins: usize, settings_extra: &str, alerts: &str) -> Test {
    let settings = format!(
        "timeout = \"2s\"\nbudget = \"20s\"\nschedule = \"* * * * * *\"\nmetrics = \"127.0.0.1:{}\"\nstore = \"store\"\n{settings_extra}",
        free_port()
    );
    let mut toml = one_pin_with(
        &settings,
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "samples = 1",
    );
    for n in 2..=pins {
        let _ = write!(
            toml,
            "\n[[pin]]\nid = \"pin-{n}\"\nprovider = \"p\"\nmodel = \"{ID}\"\nprobes = [\"probes/*.toml\"]\nsamples = 1\n"
        );
    }
    let test = Test::new()
        .pins(&format!("{toml}\n{alerts}"))
        .file("probes/arith.toml", ARITH);
    test.run(&["lock"]).code(0);
    test
}

pub fn webhook(name: &str, url: &str, repeat: &str) -> String {
    format!("[alerts.{name}]\nkind = \"webhook\"\nurl = \"{url}\"\nrepeat = \"{repeat}\"\n")
}

pub fn alertmanager(name: &str, port: u16) -> String {
    format!("[alerts.{name}]\nkind = \"alertmanager\"\nurl = \"http://127.0.0.1:{port}\"\n")
}

pub fn reroute_now(sim: &Sim) {
    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        model("acme-cheap-002", 3.1, (0.1, 0.2)),
        Reported::Honest,
    ));
}

pub fn restore(sim: &Sim) {
    sim.set(single(ID, model(ID, 4.0, (1.0, 2.0))));
}

/// A simulator serving the pinned model as locked.
pub fn clean_sim() -> Sim {
    Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))))
}

/// Audits the log says were stored after the first `mark`.
fn stored_since(daemon: &Daemon, mark: usize) -> usize {
    daemon.stored_ids().len().saturating_sub(mark)
}

/// The sum of one metric family's samples whose line contains every `parts`.
fn metric(port: u16, name: &str, parts: &[&str]) -> f64 {
    let Some((_, _, body)) = get(port, "/metrics") else {
        return 0.0;
    };
    body.lines()
        .filter(|l| l.starts_with(name) && parts.iter().all(|p| l.contains(p)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn metrics_port(test: &Test) -> u16 {
    let pins = test.read("pins.toml");
    let at = pins
        .find("metrics = \"127.0.0.1:")
        .expect("metrics setting")
        + 21;
    pins[at..].split('"').next().unwrap().parse().unwrap()
}

/// Regression: Alertmanager down while a drift was fixed got the resolve first and then the
/// stale firings queued during the outage, and showed the alert active for five more minutes.
#[test]
fn after_an_alertmanager_outage_a_fixed_drift_is_not_active_again() {
    let dir = tempfile::tempdir().unwrap();
    let Some(am) = Alertmanager::start(dir.path()) else {
        return;
    };
    let port = am.port;
    let sim = clean_sim();
    let test = project(&sim, 1, &alertmanager("am", port));
    let daemon = Daemon::start(&test);
    reroute_now(&sim);
    assert!(
        until(Duration::from_secs(20), || !am.active().is_empty()),
        "the drift is active in Alertmanager: {}",
        daemon.log()
    );
    drop(am);
    // Every audit re-pushes the firing alert; with Alertmanager down they queue.
    let retries = daemon.log().matches("will retry").count();
    assert!(
        until(Duration::from_secs(20), || daemon
            .log()
            .matches("will retry")
            .count()
            >= retries + 3),
        "{}",
        daemon.log()
    );
    restore(&sim);
    let mark = daemon.stored_ids().len();
    assert!(until(Duration::from_secs(20), || stored_since(
        &daemon, mark
    ) >= 3));
    let delivered_before = metric(
        metrics_port(&test),
        "modelpin_notifications_total",
        &["result=\"delivered\""],
    );
    let am = Alertmanager::start_on(dir.path(), port).unwrap();
    assert!(
        until(Duration::from_secs(40), || metric(
            metrics_port(&test),
            "modelpin_notifications_total",
            &["result=\"delivered\""]
        ) > delivered_before),
        "something is delivered after the outage: {}",
        daemon.log()
    );
    let watching = Instant::now();
    while watching.elapsed() < Duration::from_secs(6) {
        assert!(
            am.active().is_empty(),
            "a fixed drift is active again: {:?}\n{}",
            am.active(),
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A webhook that was down while the alert kept repeating and was then fixed hears, when it is
/// back, only the resolve: the queued firings were superseded, and nothing arrives after it.
#[test]
fn a_webhook_back_from_an_outage_hears_only_the_latest_truth() {
    let port = free_port();
    let hook = Webhook::start(port, None);
    let sim = clean_sim();
    let url = format!("http://127.0.0.1:{port}/hook");
    let test = project(&sim, 1, &webhook("hook", &url, "1s"));
    let daemon = Daemon::start(&test);
    reroute_now(&sim);
    assert!(
        until(Duration::from_secs(20), || !hook.hits().is_empty()),
        "{}",
        daemon.log()
    );
    drop(hook);
    let retries = daemon.log().matches("will retry").count();
    assert!(
        until(Duration::from_secs(20), || daemon
            .log()
            .matches("will retry")
            .count()
            >= retries + 3),
        "firings queue while the receiver is down: {}",
        daemon.log()
    );
    restore(&sim);
    let mark = daemon.stored_ids().len();
    assert!(until(Duration::from_secs(20), || stored_since(
        &daemon, mark
    ) >= 2));
    let hook = Webhook::start(port, None);
    assert!(
        until(Duration::from_secs(40), || !hook.hits().is_empty()),
        "{}",
        daemon.log()
    );
    std::thread::sleep(Duration::from_secs(4));
    let statuses: Vec<String> = hook
        .hits()
        .iter()
        .map(|h| h.json()["status"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(statuses, ["resolved"], "{}", daemon.log());
}

/// Regression: delivery was serial, so a channel that accepts and never answers cost every other
/// channel a timeout per queued notification.
#[test]
fn a_dead_channel_beside_a_live_one_costs_the_live_one_nothing() {
    const PINS: usize = 12;
    let live = Webhook::start(0, None);
    let dead = Silent::start();
    let sim = clean_sim();
    let alerts = format!(
        "{}{}",
        webhook("live", &live.url(), "1h"),
        webhook("dead", &dead.url(), "1h")
    );
    let test = project(&sim, PINS, &alerts);
    let daemon = Daemon::start(&test);
    assert!(until(Duration::from_secs(30), || daemon.stored_ids().len()
        >= PINS));
    reroute_now(&sim);
    let started = Instant::now();
    let all = until(Duration::from_secs(30), || live.hits().len() >= PINS);
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
    let test = project(&sim, PINS, &webhook("hook", &hook.url(), "1h"));
    let daemon = Daemon::start(&test);
    assert!(until(Duration::from_secs(30), || daemon.stored_ids().len()
        >= PINS));
    reroute_now(&sim);
    assert!(
        until(Duration::from_secs(30), || !hook.hits().is_empty()),
        "{}",
        daemon.log()
    );
    let started = Instant::now();
    assert!(
        until(Duration::from_secs(60), || hook.hits().len() >= PINS),
        "{}",
        daemon.log()
    );
    let took = started.elapsed();
    eprintln!("measured: {PINS} notifications at {each:?} per request drained in {took:?}");
    let serial = each * u32::try_from(PINS - 1).unwrap();
    assert!(took < serial / 2, "{took:?} (one at a time: {serial:?})");
}

/// Kills the daemon (abort, as `kill -9`) at each step of the first drifted audit's commit, then
/// restarts it: the receiver gets exactly one firing notification, and it comes from the first
/// audit in history — no audit is stored without its alert evaluation, none evaluated twice.
#[test]
fn a_crash_at_each_step_of_an_audit_commit_leaves_all_of_it_or_none() {
    let mut kept = Vec::new();
    for point in ["before-commit", "after-commit-before-flush", "after-flush"] {
        let hook = Webhook::start(0, None);
        let sim = clean_sim();
        let test = project(&sim, 1, &webhook("hook", &hook.url(), "1h"));
        reroute_now(&sim);
        let mut crashed = Daemon::start_with(&test, &[("MODELPIN_FAULT", point)]);
        let code = crashed.wait(Duration::from_secs(30));
        assert_eq!(code, Some(-1), "killed by the fault: {}", crashed.log());
        assert!(
            crashed
                .log()
                .contains(&format!("fault injected: aborting at {point}")),
            "{}",
            crashed.log()
        );
        let mut again = Daemon::start(&test);
        assert!(
            until(Duration::from_secs(30), || !hook.hits().is_empty()),
            "{point}: {}",
            again.log()
        );
        std::thread::sleep(Duration::from_secs(3));
        again.signal("TERM");
        assert_eq!(again.wait(Duration::from_secs(12)), Some(0));
        let records = history(&test);
        let hits = hook.hits();
        let ids: BTreeSet<&str> = hits.iter().filter_map(|h| h.header("webhook-id")).collect();
        assert_eq!(ids.len(), 1, "{point}: one firing notification: {hits:?}");
        let first = &records[0]["audit_id"];
        assert_eq!(
            hits[0].json()["auditId"],
            *first,
            "{point}: the notification comes from the first stored audit"
        );
        let survived = !again
            .stored_ids()
            .contains(&first.as_str().unwrap().to_owned());
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
    let test = project(&sim, 4, "");
    let Some(fs) = Tmpfs::mount(&test.path("store"), "size=8m") else {
        return;
    };
    let port = metrics_port(&test);
    let daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(20), || !daemon.stored_ids().is_empty()),
        "{}",
        daemon.log()
    );
    let filler = fs.fill();
    let unhealthy = || get(port, "/healthz").filter(|(status, _, _)| *status == 503);
    assert!(
        until(Duration::from_secs(30), || unhealthy().is_some()),
        "healthz turns 503 while writes fail: {}",
        daemon.log()
    );
    let (_, _, reason) = unhealthy().unwrap();
    assert!(reason.contains("store writes failing"), "{reason}");
    let failed_at = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    std::fs::remove_file(filler).unwrap();
    let freed = Instant::now();
    assert!(
        until(Duration::from_secs(60), || get(port, "/healthz")
            .is_some_and(|(status, _, _)| status == 200)),
        "healthy again without a restart: {}",
        daemon.log()
    );
    let healed = freed.elapsed();
    let mark = daemon.stored_ids().len();
    assert!(
        until(Duration::from_secs(20), || stored_since(&daemon, mark) >= 2),
        "{}",
        daemon.log()
    );
    eprintln!(
        "measured: unhealthy for {:?} in all; healthy {healed:?} after space was freed",
        failed_at.elapsed()
    );
    let records = history(&test);
    for id in daemon.stored_ids() {
        assert!(
            records.iter().any(|r| r["audit_id"] == id.as_str()),
            "audit {id} reported as stored is in history"
        );
    }
}

/// Start-up refusals name the cause and offer `--reset-store` only for a corrupt store.
#[test]
fn a_full_or_read_only_store_at_start_gets_advice_that_fits() {
    let sim = clean_sim();
    let test = project(&sim, 1, "");
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
    let test = project(&sim, 1, &webhook("dead", &dead.url(), "1h"));
    // A receiver that never answers, tried with 10 s deadlines: `check --notify` holds the store
    // for two attempts (over 20 s), longer than a second process waits for it (5 s).
    let pins = test
        .read("pins.toml")
        .replace("timeout = \"2s\"", "timeout = \"10s\"");
    std::fs::write(test.path("pins.toml"), pins).unwrap();
    reroute_now(&sim);
    let _check = Daemon::spawn(&test, &["check", "--notify"], &[]);
    assert!(until(Duration::from_secs(20), || std::fs::read_to_string(
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
    let test = project(&sim, 1, "");
    let daemon = Daemon::start(&test);
    assert!(until(Duration::from_secs(20), || !daemon
        .stored_ids()
        .is_empty()));
    let pins = test
        .read("pins.toml")
        .replace("store = \"store\"", "store = \"elsewhere\"");
    std::fs::write(test.path("pins.toml"), pins).unwrap();
    daemon.signal("HUP");
    assert!(
        until(Duration::from_secs(10), || daemon
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
    if crate::receivers::program("promtool", &["--version"]).is_none() {
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
    let test = project(&sim, 1, "");
    let pins = test.read("pins.toml").replace(
        "samples = 1",
        &format!("samples = 1\nretires_on = {retires}"),
    );
    std::fs::write(test.path("pins.toml"), pins).unwrap();
    let port = metrics_port(&test);
    let daemon = Daemon::start(&test);
    assert!(until(Duration::from_secs(20), || !daemon
        .stored_ids()
        .is_empty()));
    let (_, _, body) = get(port, "/metrics").unwrap();
    let midnight = retires.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp();
    assert!(
        body.contains(&format!(
            "modelpin_retirement_timestamp_seconds{{model=\"{ID}\",pin=\"pin\"}} {midnight}"
        )),
        "{body}"
    );
    assert!(body.contains("modelpin_audits_skipped_total{pin=\"pin\"} 0"));
    crate::daemon::promtool_accepts(&body);
}
