//! The daemon in a fleet: every daemon on the same PostgreSQL store tries for the lease every
//! third of `settings.lease`; the one holding it leads — runs the schedule, sends notifications,
//! judges traffic, prunes — and the others stand by, serving the pages, `/api/history`,
//! `/metrics` and `/healthz` from the shared store. A daemon on a store of its own (sled) leads
//! from the start and never asks.
//!
//! Leadership is only ever believed for as long as the server confirmed it: a renewal that does
//! not reach the server in time (`store::postgres::DEADLINE`) makes this daemon a standby at
//! once, and its writes are refused by the server from then on anyway (the lease row fences
//! every write), and an answer slower than a third of the lease counts as none. A dead leader's
//! lease runs out by the server's clock; a standby's next try after that (at most a third of a
//! lease later) takes it, so the schedule carries on within 1⅓ leases of the leader's last
//! renewal, under two.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::daemon::Daemon;

/// Who this daemon is in the fleet, and whether it leads now.
pub struct Fleet {
    /// This process's name in the lease row: random per start, so a restarted daemon is a new
    /// member and never inherits a lease.
    pub holder: String,
    pub lease: Duration,
    leading: tokio::sync::watch::Sender<bool>,
    /// Until when the server's last confirmation of this daemon's lease is believed (two thirds
    /// of a lease after the renewal was sent); `None` on a store of its own. A daemon that was
    /// frozen (SIGSTOP) past it stops dispatching before its next renewal says whether it
    /// still leads, instead of spending an audit's calls first.
    confirmed_until: std::sync::Mutex<Option<tokio::time::Instant>>,
    shared: bool,
    /// Why this member does not run what the leader runs (another pins.toml or lock), while
    /// that lasts: a failover to it would audit other pins and leave the leader's alerts with
    /// no owner. Said on `/healthz`.
    mismatch: std::sync::Mutex<Option<String>>,
    term: std::sync::atomic::AtomicI64,
    /// When this daemon last started leading: a new leader's pins are overdue counting from
    /// then, not from the dead leader's last audit.
    since: std::sync::Mutex<chrono::DateTime<chrono::Utc>>,
}

impl Fleet {
    /// A daemon on a store nobody shares leads from the start.
    #[must_use]
    pub fn new(shared: bool, lease: Duration) -> Fleet {
        Fleet {
            holder: format!(
                "{}-{}",
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            ),
            lease,
            leading: tokio::sync::watch::Sender::new(!shared),
            confirmed_until: std::sync::Mutex::new(None),
            shared,
            mismatch: std::sync::Mutex::new(None),
            term: std::sync::atomic::AtomicI64::new(0),
            since: std::sync::Mutex::new(chrono::Utc::now()),
        }
    }

    /// When this daemon last started leading (its start, on a store of its own).
    #[must_use]
    pub fn since(&self) -> chrono::DateTime<chrono::Utc> {
        *self.since.lock().expect("since lock")
    }

    /// Whether this daemon leads now: it won the lease, and the server confirmed it recently
    /// enough to be sure it still holds.
    #[must_use]
    pub fn leads(&self) -> bool {
        *self.leading.borrow() && (!self.shared || self.confirmed())
    }

    fn confirmed(&self) -> bool {
        self.confirmed_until
            .lock()
            .expect("confirmed lock")
            .is_some_and(|until| tokio::time::Instant::now() < until)
    }

    /// Why this member's pins.toml or lock differs from the leader's, when it does.
    #[must_use]
    pub fn mismatch(&self) -> Option<String> {
        self.mismatch.lock().expect("mismatch lock").clone()
    }

    /// Compares what the leader runs with what this member runs; logs a change either way.
    fn compare(&self, leader: &str, mine: &str) {
        let now = (!leader.is_empty() && leader != mine).then(|| {
            format!(
                "this member runs another pins.toml or lock than the leader ({mine}; the leader: {leader}): members must share both, or a failover audits other pins"
            )
        });
        let mut was = self.mismatch.lock().expect("mismatch lock");
        if *was != now {
            match &now {
                Some(why) => tracing::error!("{why}"),
                None if was.is_some() => {
                    tracing::info!("this member now runs the leader's pins.toml and lock");
                }
                None => {}
            }
            *was = now;
        }
    }

    /// Takes the outcome of one try for the lease, sent at `asked`: whether it leads, and
    /// whether that changed. Watchers are told only of a change, not of every renewal.
    fn settle(&self, leads: bool, asked: tokio::time::Instant) -> Option<bool> {
        *self.confirmed_until.lock().expect("confirmed lock") =
            leads.then(|| asked + self.lease * 2 / 3);
        let mut was = false;
        let changed = self.leading.send_if_modified(|leading| {
            was = *leading;
            let changed = *leading != leads;
            *leading = leads;
            changed
        });
        changed.then_some(was)
    }

    #[must_use]
    pub fn term(&self) -> i64 {
        self.term.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Told whenever this daemon starts or stops leading.
    #[must_use]
    pub fn watch(&self) -> tokio::sync::watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// Returns once this daemon leads (at once when it does).
    pub async fn until_leading(&self) {
        let mut leading = self.watch();
        let _ = leading.wait_for(|l| *l).await;
    }
}

/// Holds or seeks the lease until `stop` (nothing to do on a store of its own).
pub async fn run(daemon: Arc<Daemon>, stop: CancellationToken) {
    if !daemon.store.is_shared() {
        return;
    }
    let fleet = &daemon.fleet;
    let every = fleet.lease / 3;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let mine = digests(&daemon);
        let asked = tokio::time::Instant::now();
        let lead = tokio::select! {
            lead = daemon.store.lead(&fleet.holder, fleet.lease, &mine) => lead,
            () = stop.cancelled() => return,
        };
        let (leads, term) = match lead {
            Ok(lead) => {
                fleet.compare(&lead.digests, &mine);
                (lead.leader, lead.term)
            }
            Err(e) => {
                if fleet.leads() {
                    tracing::error!(error = %e, "the lease could not be renewed: standing by until the store answers");
                } else {
                    tracing::warn!(error = %e, "the store does not answer; standing by");
                }
                (false, fleet.term())
            }
        };
        fleet.term.store(term, std::sync::atomic::Ordering::Release);
        daemon.metrics.fleet(leads, term);
        match (fleet.settle(leads, asked), leads) {
            (Some(false), true) => {
                *fleet.since.lock().expect("since lock") = chrono::Utc::now();
                tracing::info!(term, holder = %fleet.holder, "leading the fleet: auditing on schedule and sending notifications");
                // Whatever the last leader queued and did not send goes out now.
                daemon.outbox_wake.send_modify(|n| *n += 1);
            }
            (Some(true), false) => {
                tracing::warn!(
                    term,
                    "no longer leading: standing by (another daemon leads, or the store does not answer)"
                );
            }
            _ => {}
        }
    }
}

/// What this member runs, as written with the lease: pins.toml's digest (probe files included,
/// the settings a member sets its own way left out) and the lock file's (`none` without one; `unreadable` when it cannot be read).
fn digests(daemon: &Daemon) -> String {
    let config = daemon.config();
    let lock = match daemon.lock_file(&config.settings.lockfile) {
        Ok(lock) => lock
            .as_ref()
            .as_ref()
            .map_or_else(|| "none".to_owned(), |l| short(&l.digest)),
        Err(_) => "unreadable".to_owned(),
    };
    format!("pins.toml {}, lock {lock}", short(&config.fleet_digest))
}

/// A digest's first 12 hex digits: enough to tell two files apart in a message.
fn short(digest: &str) -> String {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    hex.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::{Instant, advance};

    use super::Fleet;

    #[tokio::test(start_paused = true)]
    async fn a_renewal_tells_watchers_only_of_a_change_and_a_lapsed_one_leads_no_more() {
        let fleet = Fleet::new(true, Duration::from_secs(15));
        let mut watch = fleet.watch();
        assert!(!fleet.leads());
        assert_eq!(fleet.settle(true, Instant::now()), Some(false));
        assert!(watch.has_changed().unwrap());
        watch.borrow_and_update();
        assert!(fleet.leads());
        // Renewals that change nothing wake nobody.
        for _ in 0..3 {
            advance(Duration::from_secs(5)).await;
            assert_eq!(fleet.settle(true, Instant::now()), None);
            assert!(!watch.has_changed().unwrap());
            assert!(fleet.leads());
        }
        // Frozen past two thirds of a lease since the last renewal was sent: no longer sure.
        advance(Duration::from_secs(11)).await;
        assert!(!fleet.leads());
        assert!(!watch.has_changed().unwrap());
        assert_eq!(fleet.settle(false, Instant::now()), Some(true));
        assert!(watch.has_changed().unwrap());
    }

    #[test]
    fn a_member_running_another_config_than_the_leader_says_so_until_it_matches() {
        let fleet = Fleet::new(true, Duration::from_secs(15));
        fleet.compare("", "pins.toml aaa, lock bbb");
        assert_eq!(fleet.mismatch(), None, "an older leader wrote no digests");
        fleet.compare("pins.toml ccc, lock bbb", "pins.toml aaa, lock bbb");
        let why = fleet.mismatch().unwrap();
        assert!(why.contains("the leader: pins.toml ccc"), "{why}");
        fleet.compare("pins.toml aaa, lock bbb", "pins.toml aaa, lock bbb");
        assert_eq!(fleet.mismatch(), None);
    }

    #[test]
    fn a_daemon_on_a_store_of_its_own_always_leads() {
        assert!(Fleet::new(false, Duration::from_secs(15)).leads());
    }
}
