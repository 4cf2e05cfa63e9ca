//! A circuit breaker per provider: stop calling a provider whose recent attempts all failed.
//!
//! Retries ride out a blip in one call; they make an outage worse. When a provider answers 500
//! to everything, an audit's hundreds of planned calls would each spend every attempt and its
//! backoff before giving up. So every HTTP attempt to a provider is reported here: one that
//! failed in a way retrying is meant to ride out (a 5xx, a 429, a timeout, a refused or broken
//! connection) counts, anything the provider answered otherwise (a reply, a refusal of the
//! request itself) proves it alive and resets the count. At `breaker_failures` consecutive
//! failures the breaker opens: calls not yet made are not made, calls in flight are not retried,
//! and the pin is inconclusive with that reason. After `breaker_cooldown` it half-opens: one call
//! tries the provider while the provider's other calls wait for its outcome, which closes the
//! breaker (the waiting calls go ahead) or opens it for another cool-down.
//!
//! The breakers live with the transport, so a daemon keeps them across audits: a provider that
//! is down costs each scheduled audit one trial call, not its whole plan. What was measured
//! before a breaker opened stays in the audit: the breaker only stops calls, never drops answers.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How an attempt went, as far as the breaker cares.
/// A provider whose breaker is open: no call to it may start now. `last` is the failure that
/// opened it, as the report words it (a `finding::reason::Halt` once it reaches one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    pub provider: String,
    pub last: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The provider answered: a reply, or a refusal of this request (not found, bad request).
    Alive,
    /// A failure retrying is meant to ride out: 5xx, 429, timeout, refused or broken connection.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Closed,
    Open {
        until: Instant,
    },
    /// One trial call is out since `since`; the others wait for its outcome.
    HalfOpen {
        since: Instant,
    },
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// Failed attempts in a row.
    failures: u32,
    /// Times the breaker opened.
    trips: u64,
    /// What the last failed attempt was, for the reason a user reads.
    last_failure: String,
    /// Calls not made because the breaker was open.
    not_made: u64,
}

/// One breaker per provider, with the thresholds from `[settings]`.
#[derive(Debug)]
pub struct Breakers {
    threshold: u32,
    cooldown: Duration,
    states: BTreeMap<String, Mutex<State>>,
    /// Woken when a trial call's outcome is known.
    settled: Notify,
}

/// One provider's breaker, for the metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub provider: String,
    pub open: bool,
    pub trips: u64,
    pub not_made: u64,
}

impl Breakers {
    #[must_use]
    pub fn new<'a>(
        providers: impl IntoIterator<Item = &'a str>,
        threshold: u32,
        cooldown: Duration,
    ) -> Breakers {
        let states = providers
            .into_iter()
            .map(|p| {
                let state = State {
                    phase: Phase::Closed,
                    failures: 0,
                    trips: 0,
                    last_failure: String::new(),
                    not_made: 0,
                };
                (p.to_owned(), Mutex::new(state))
            })
            .collect();
        Breakers {
            threshold: threshold.max(1),
            cooldown,
            states,
            settled: Notify::new(),
        }
    }

    #[must_use]
    pub fn for_config(config: &crate::config::Config) -> Breakers {
        Breakers::new(
            config.providers.iter().map(|p| p.name.as_str()),
            config.settings.breaker_failures,
            config.settings.breaker_cooldown,
        )
    }

    /// Takes over where `old` stands for every provider both know: a reload (which builds a
    /// new transport) keeps an open breaker open and its counts growing, instead of closing
    /// it. A trial call out on `old` is left to it; here the breaker is open until now, so the
    /// next call is this set's own trial.
    pub fn continue_from(&self, old: &Breakers) {
        for (provider, state) in &self.states {
            let Some(before) = old.states.get(provider) else {
                continue;
            };
            let before = before.lock().expect("breaker lock");
            let mut s = state.lock().expect("breaker lock");
            s.phase = match before.phase {
                Phase::HalfOpen { .. } => Phase::Open {
                    until: Instant::now(),
                },
                phase => phase,
            };
            s.failures = before.failures;
            s.trips = before.trips;
            s.not_made = before.not_made;
            s.last_failure.clone_from(&before.last_failure);
        }
    }

    /// Waits until a call to `provider` may start: at once while the breaker is closed; after a
    /// trial call's outcome while one is out. `Err` when the breaker is open: the call is not
    /// made, for the reason returned. A provider without a breaker is always admitted.
    pub async fn admit(&self, provider: &str) -> Result<(), Open> {
        let Some(state) = self.states.get(provider) else {
            return Ok(());
        };
        loop {
            // Registered before the state is read, so an outcome settled in between still wakes us.
            let settled = self.settled.notified();
            let wait_until = {
                let mut s = state.lock().expect("breaker lock");
                let now = Instant::now();
                match s.phase {
                    Phase::Closed => return Ok(()),
                    Phase::Open { until } if now < until => {
                        s.not_made += 1;
                        return Err(Self::halt(provider, &s));
                    }
                    // The cool-down is over (or a trial call vanished without an outcome for as
                    // long): this call is the trial.
                    Phase::Open { .. } => {
                        s.phase = Phase::HalfOpen { since: now };
                        return Ok(());
                    }
                    Phase::HalfOpen { since } if now >= since + self.cooldown => {
                        s.phase = Phase::HalfOpen { since: now };
                        return Ok(());
                    }
                    Phase::HalfOpen { since } => since + self.cooldown,
                }
            };
            // Bounded: a trial that never reports is replaced after a cool-down.
            let _ = tokio::time::timeout_at(wait_until, settled).await;
        }
    }

    /// Why calls to `provider` may not start now, while its breaker is open; `None` when closed
    /// or when a call may try it.
    #[must_use]
    pub fn open(&self, provider: &str) -> Option<Open> {
        let s = self.states.get(provider)?.lock().expect("breaker lock");
        match s.phase {
            Phase::Open { until } => {
                let now = Instant::now();
                (now < until).then(|| Self::halt(provider, &s))
            }
            Phase::Closed | Phase::HalfOpen { .. } => None,
        }
    }

    /// Reports one HTTP attempt to `provider`; `what` says what failed, for the reason shown.
    pub fn record(&self, provider: &str, outcome: Outcome, what: &str) {
        let Some(state) = self.states.get(provider) else {
            return;
        };
        let mut s = state.lock().expect("breaker lock");
        let was_trial = matches!(s.phase, Phase::HalfOpen { .. });
        match outcome {
            Outcome::Alive => {
                s.failures = 0;
                s.phase = Phase::Closed;
            }
            Outcome::Failed => {
                s.failures = s.failures.saturating_add(1);
                what.chars()
                    .take(200)
                    .collect::<String>()
                    .clone_into(&mut s.last_failure);
                let trips = was_trial || s.failures >= self.threshold;
                if trips && !matches!(s.phase, Phase::Open { .. }) {
                    s.phase = Phase::Open {
                        until: Instant::now() + self.cooldown,
                    };
                    s.trips += 1;
                }
            }
        }
        drop(s);
        if was_trial {
            self.settled.notify_waiters();
        }
    }

    /// Each provider's breaker, in name order.
    #[must_use]
    pub fn snapshot(&self) -> Vec<Snapshot> {
        self.states
            .iter()
            .map(|(provider, state)| {
                let s = state.lock().expect("breaker lock");
                Snapshot {
                    provider: provider.clone(),
                    open: matches!(s.phase, Phase::Open { until } if Instant::now() < until),
                    trips: s.trips,
                    not_made: s.not_made,
                }
            })
            .collect()
    }

    fn halt(provider: &str, s: &State) -> Open {
        Open {
            provider: provider.to_owned(),
            last: s.last_failure.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breakers() -> Breakers {
        Breakers::new(["p"], 3, Duration::from_secs(60))
    }

    #[tokio::test(start_paused = true)]
    async fn opens_after_the_threshold_of_consecutive_failures_and_a_success_resets_the_count() {
        let b = breakers();
        for _ in 0..2 {
            b.record("p", Outcome::Failed, "server error (500)");
        }
        b.record("p", Outcome::Alive, "");
        for _ in 0..2 {
            b.record("p", Outcome::Failed, "server error (500)");
        }
        assert!(b.open("p").is_none(), "two in a row after a success");
        assert!(b.admit("p").await.is_ok());
        b.record("p", Outcome::Failed, "server error (503)");
        let Some(Open { last, .. }) = b.open("p") else {
            panic!("open after three in a row");
        };
        assert_eq!(last, "server error (503)");
        assert!(b.admit("p").await.is_err());
        let snap = &b.snapshot()[0];
        assert_eq!((snap.open, snap.trips, snap.not_made), (true, 1, 1));
        // Unknown providers have no breaker.
        assert!(b.admit("other").await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_set_continues_an_open_breaker_and_its_counts() {
        let old = breakers();
        for _ in 0..3 {
            old.record("p", Outcome::Failed, "server error (502)");
        }
        assert!(old.admit("p").await.is_err());
        let new = Breakers::new(["p", "q"], 3, Duration::from_secs(60));
        new.continue_from(&old);
        let Err(Open { last, .. }) = new.admit("p").await else {
            panic!("still open after a reload");
        };
        assert_eq!(last, "server error (502)");
        let snap = new.snapshot();
        assert_eq!(
            (snap[0].open, snap[0].trips, snap[0].not_made),
            (true, 1, 2)
        );
        assert_eq!(
            (snap[1].open, snap[1].trips),
            (false, 0),
            "a new provider starts closed"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn after_the_cooldown_one_trial_call_decides_while_the_others_wait() {
        let b = std::sync::Arc::new(breakers());
        for _ in 0..3 {
            b.record("p", Outcome::Failed, "timeout");
        }
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(b.open("p").is_none(), "half-open: a call may try");
        assert!(b.admit("p").await.is_ok(), "the trial");
        let waiting = {
            let b = b.clone();
            tokio::spawn(async move { b.admit("p").await })
        };
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished(), "waits for the trial's outcome");
        b.record("p", Outcome::Alive, "");
        assert!(waiting.await.unwrap().is_ok(), "goes ahead once it worked");

        // A failed trial opens it again for a whole cool-down.
        for _ in 0..3 {
            b.record("p", Outcome::Failed, "timeout");
        }
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(b.admit("p").await.is_ok(), "the second trial");
        let waiting = {
            let b = b.clone();
            tokio::spawn(async move { b.admit("p").await })
        };
        tokio::task::yield_now().await;
        b.record("p", Outcome::Failed, "timeout");
        assert!(
            waiting.await.unwrap().is_err(),
            "not made after a failed trial"
        );
        assert_eq!(
            b.snapshot()[0].trips,
            3,
            "three openings: two runs of failures, one failed trial"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_trial_that_never_reports_is_replaced_after_a_cooldown() {
        let b = breakers();
        for _ in 0..3 {
            b.record("p", Outcome::Failed, "timeout");
        }
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(b.admit("p").await.is_ok(), "a trial that is then dropped");
        // The next caller waits at most one cool-down, then becomes the trial itself.
        let started = Instant::now();
        assert!(b.admit("p").await.is_ok());
        assert!(started.elapsed() >= Duration::from_secs(60));
    }
}
