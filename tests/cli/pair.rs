//! Two daemons auditing the same pins for availability, sending through a two-peer Alertmanager
//! cluster (real `prometheus-alertmanager`, gossip on loopback) to one webhook: the cluster,
//! not modelpin, deduplicates, so one drift reaches the receiver once and its resolve once.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::support::daemon::Daemon;
use crate::support::drift::{clean_sim, project, reroute_now, restore};
use crate::support::pins::Channel;
use crate::support::receivers::{Alertmanager, Webhook};
use crate::support::wait::{DEADLINE, eventually};

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

/// Each peer has run its notification pipeline (one notification-log query per flush) at least
/// twice more than in `before`, or has no group left to flush: a notification either peer was
/// going to send for what it knew at `before` has been sent.
fn flushed_since(peers: &[&Alertmanager], before: &[f64]) -> bool {
    peers.iter().zip(before).all(|(am, queries)| {
        am.metric("alertmanager_nflog_queries_total") >= queries + 2.0
            || am.metric("alertmanager_dispatcher_aggregation_groups") == 0.0
    })
}

fn queries(peers: &[&Alertmanager]) -> Vec<f64> {
    peers
        .iter()
        .map(|am| am.metric("alertmanager_nflog_queries_total"))
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
    let hook = Webhook::start();
    let started = Instant::now();
    let Some(am1) = Alertmanager::start_peer(dir.path(), &hook.url(), &[]) else {
        return;
    };
    let am2 = Alertmanager::start_peer(dir.path(), &hook.url(), &[&am1]).unwrap();
    assert!(
        eventually(DEADLINE, || am1.peers() == 2 && am2.peers() == 2),
        "the peers see each other"
    );
    eprintln!(
        "measured: two-peer cluster formed in {:?}",
        started.elapsed()
    );
    // Each daemon sends to every peer, as Alertmanager's clients should.
    let channels = || {
        vec![
            Channel::alertmanager("am1", am1.port),
            Channel::alertmanager("am2", am2.port),
        ]
    };
    let sim = clean_sim();
    let (a, b) = (project(&sim, 1, channels()), project(&sim, 1, channels()));
    let (first, second) = (Daemon::start(&a), Daemon::start(&b));
    first.wait_stored(1);
    second.wait_stored(1);
    reroute_now(&sim);
    let drifted = Instant::now();
    assert!(
        eventually(DEADLINE, || count(&hook, "firing") > 0),
        "{}",
        first.log()
    );
    eprintln!("measured: drift to the receiver in {:?}", drifted.elapsed());
    let peers = [&am1, &am2];
    let before = queries(&peers);
    assert!(
        eventually(DEADLINE, || flushed_since(&peers, &before)),
        "both peers flushed again"
    );
    restore(&sim);
    let fixed = Instant::now();
    assert!(
        eventually(DEADLINE, || count(&hook, "resolved") > 0),
        "{:?}",
        notifications(&hook)
    );
    eprintln!("measured: resolve to the receiver in {:?}", fixed.elapsed());
    let before = queries(&peers);
    assert!(
        eventually(DEADLINE, || flushed_since(&peers, &before)),
        "both peers flushed again"
    );
    let seen = notifications(&hook);
    let am_logs = format!("{}\n----\n{}", am1.log(), am2.log());
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
    let (a, b) = (project(&sim, 3, vec![]), project(&sim, 3, vec![]));
    let first = Daemon::start_with(&a, &["--pins", "pin-*"], &[]);
    let second = Daemon::start_with(&b, &["--pins", "pin"], &[]);
    first.wait_stored(4);
    second.wait_stored(2);
    let pins = |daemon: &Daemon, test| -> BTreeSet<String> {
        daemon
            .history(test)
            .iter()
            .map(|r| r.pin.id.clone())
            .collect()
    };
    assert_eq!(
        pins(&first, &a),
        BTreeSet::from(["pin-2".into(), "pin-3".into()])
    );
    assert_eq!(pins(&second, &b), BTreeSet::from(["pin".into()]));
    let none = a.run(&["daemon", "--pins", "nothing-*"]);
    none.code(2);
    assert!(
        none.stderr.contains("no pin in") && none.stderr.contains("matches --pins nothing-*"),
        "{}",
        none.stderr
    );
}
