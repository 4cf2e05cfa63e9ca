//! Two daemons auditing the same pins for availability, sending through a two-peer Alertmanager
//! cluster (real `prometheus-alertmanager`, gossip on loopback) to one webhook: the cluster,
//! not modelpin, deduplicates, so one drift reaches the receiver once and its resolve once.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::daemon::{Daemon, free_port, until};
use crate::outages::{alertmanager, clean_sim, project, reroute_now, restore};
use crate::receivers::{Alertmanager, Webhook};

/// Alertmanager's webhook bodies received so far, as (status, alert count).
fn notifications(hook: &Webhook) -> Vec<(String, usize)> {
    hook.hits()
        .iter()
        .map(|h| {
            let body = h.json();
            let status = body["status"].as_str().unwrap_or_default().to_owned();
            (status, body["alerts"].as_array().map_or(0, Vec::len))
        })
        .collect()
}

fn count(hook: &Webhook, status: &str) -> usize {
    notifications(hook)
        .iter()
        .filter(|(s, _)| s == status)
        .count()
}

#[test]
fn a_daemon_pair_through_an_alertmanager_cluster_notifies_once() {
    let dir = tempfile::tempdir().unwrap();
    let hook = Webhook::start(0, None);
    let (g1, g2) = (free_port(), free_port());
    let started = Instant::now();
    let Some(am1) = Alertmanager::start_peer(dir.path(), &hook.url(), g1, &[g2]) else {
        return;
    };
    let am2 = Alertmanager::start_peer(dir.path(), &hook.url(), g2, &[g1]).unwrap();
    assert!(
        until(Duration::from_secs(30), || am1.peers() == 2
            && am2.peers() == 2),
        "the peers see each other"
    );
    eprintln!(
        "measured: two-peer cluster formed in {:?}",
        started.elapsed()
    );
    // Each daemon sends to every peer, as Alertmanager's clients should.
    let channels = format!(
        "{}{}",
        alertmanager("am1", am1.port),
        alertmanager("am2", am2.port)
    );
    let sim = clean_sim();
    let (a, b) = (project(&sim, 1, &channels), project(&sim, 1, &channels));
    let (first, second) = (Daemon::start(&a), Daemon::start(&b));
    assert!(until(Duration::from_secs(20), || !first
        .stored_ids()
        .is_empty()
        && !second.stored_ids().is_empty()));
    reroute_now(&sim);
    let drifted = Instant::now();
    assert!(
        until(Duration::from_secs(30), || count(&hook, "firing") > 0),
        "{}",
        first.log()
    );
    eprintln!("measured: drift to the receiver in {:?}", drifted.elapsed());
    std::thread::sleep(Duration::from_secs(8));
    restore(&sim);
    let fixed = Instant::now();
    assert!(
        until(Duration::from_secs(30), || count(&hook, "resolved") > 0),
        "{:?}",
        notifications(&hook)
    );
    eprintln!("measured: resolve to the receiver in {:?}", fixed.elapsed());
    std::thread::sleep(Duration::from_secs(8));
    let seen = notifications(&hook);
    let am_logs = format!(
        "{}\n----\n{}",
        std::fs::read_to_string(dir.path().join(format!("am-data-{g1}.log"))).unwrap_or_default(),
        std::fs::read_to_string(dir.path().join(format!("am-data-{g2}.log"))).unwrap_or_default()
    );
    assert_eq!(count(&hook, "firing"), 1, "one firing: {seen:?}\n{am_logs}");
    assert_eq!(
        count(&hook, "resolved"),
        1,
        "one resolve: {seen:?}\n{am_logs}"
    );
}

/// `daemon --pins GLOB` splits one pins.toml across daemons: each audits only its share.
#[test]
fn pins_split_across_daemons_by_glob() {
    let sim = clean_sim();
    let (a, b) = (project(&sim, 3, ""), project(&sim, 3, ""));
    let first = Daemon::spawn(&a, &["daemon", "--pins", "pin-*"], &[]);
    let second = Daemon::spawn(&b, &["daemon", "--pins", "pin"], &[]);
    assert!(until(Duration::from_secs(20), || first.stored_ids().len()
        >= 4
        && second.stored_ids().len() >= 2));
    let pins = |test| -> BTreeSet<String> {
        crate::daemon::history(test)
            .iter()
            .map(|r| r["pin"]["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(pins(&a), BTreeSet::from(["pin-2".into(), "pin-3".into()]));
    assert_eq!(pins(&b), BTreeSet::from(["pin".into()]));
    let none = a.run(&["daemon", "--pins", "nothing-*"]);
    none.code(2);
    assert!(
        none.stderr.contains("no pin in") && none.stderr.contains("matches --pins nothing-*"),
        "{}",
        none.stderr
    );
}
