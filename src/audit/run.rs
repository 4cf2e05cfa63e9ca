//! The audit core: config + lock → Report, for `check`, `demo` and the daemon alike.
//!
//! Everything the network is waited on for runs at once: the probe calls, the providers' models
//! lookups (once per URL) and, when the caller has no lifecycle facts yet, the feeds. All of it
//! goes through the one transport, so its semaphores and deadlines bound the lot. Nothing here
//! prints: warnings come back with the report for the caller to show or log.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::audit::judge::Case;
use crate::audit::lifecycle::{Facts, load_facts, pin_lifecycle, provider_signals};
use crate::audit::{Observation, Plan, observe, verdict};
use crate::config::{Config, Pin};
use crate::lock::LoadedLock;
use crate::report::Report;
use crate::transport::Transport;

/// How many times each probe of a pin is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Samples {
    /// Each pin's `samples`: an audit.
    Audit,
    /// `BASELINE_FACTOR` × each pin's `samples`: a lock without `--samples`.
    Baseline,
    /// This many for every pin (`lock --samples N`).
    Each(u32),
    /// Once, and the audit checks identity only (`check --no-probes`, the daemon's ticks between
    /// behaviour audits): no first-token tier, no behaviour test.
    Identity,
}

/// A lock asks each probe this many times the pin's `samples`. Every two-sample test compares
/// an audit with the lock, so the lock's own draw is part of every audit's null: with as many
/// answers at the lock as in an audit, a lock that happens to sit off the model's mean makes
/// the audits against it reject far more often than α (on the real model, `answers:arith`
/// rejected 46 % of unchanged audits at 0.05 against one such lock: BENCHMARKS.md "Detection on
/// a real model"). Four times as many shrinks that share of the variance from a half to a
/// fifth, for 30 more calls a probe once (at the default 10); the first-token tier does the
/// same with its own count (`first_tokens::BASELINE_SAMPLES`).
pub const BASELINE_FACTOR: u32 = 4;

impl Samples {
    /// Calls per probe of `pin`.
    #[must_use]
    pub fn of(self, pin: &Pin) -> u32 {
        match self {
            Samples::Audit => pin.samples,
            Samples::Baseline => pin
                .samples
                .saturating_mul(BASELINE_FACTOR)
                .min(crate::config::MAX_SAMPLES),
            Samples::Each(n) => n,
            Samples::Identity => 1,
        }
    }
}

/// What to audit.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// In config order (see `plan::select_pins`).
    pub pins: Vec<&'a Pin>,
    /// How often each probe is asked.
    pub samples: Samples,
    /// Spend cap over `settings.max_cost_usd`.
    pub max_cost: Option<f64>,
    /// Warnings fail the audit too.
    pub strict: bool,
    /// How small an adjusted p-value the behaviour tests resolve besides `alpha`: the daemon's
    /// own look at the audit (`alert::lifetime::next_look`), or `check --resolve`.
    pub resolve: Option<f64>,
}

/// What an audit runs with besides the config and the lock.
pub struct Context<'a> {
    pub transport: &'a Transport,
    /// Lifecycle facts already loaded (the daemon keeps them); `None` loads the built-in table
    /// and the feeds during the audit, concurrently with the calls.
    pub facts: Option<Arc<Facts>>,
    /// Cancelled on a shutdown signal: calls in flight are dropped and recorded as cancelled.
    pub cancel: CancellationToken,
    /// Calls finished so far, for a progress display.
    pub progress: Arc<crate::audit::tally::Tally>,
}

/// What watches a plan's calls: cancellation and the progress tally.
pub type Watch = (CancellationToken, Arc<crate::audit::tally::Tally>);

impl Context<'_> {
    /// The cancellation and progress a plan made in this context runs under.
    #[must_use]
    pub fn watch(&self) -> Watch {
        (self.cancel.clone(), self.progress.clone())
    }
}

/// An audit's report, and what the caller should tell the user about its inputs.
pub struct Audited {
    pub report: Report,
    /// Feeds that failed or fell back to a cached copy.
    pub warnings: Vec<String>,
}

/// The price a pin's calls are counted at, everywhere (estimate, spend cap, report): its
/// `price`, else the effective price its lock recorded.
#[must_use]
pub fn price_of(pin: &Pin, lock: Option<&LoadedLock>) -> Option<crate::config::Price> {
    let locked = lock.and_then(|l| l.lock.pins.get(&pin.id));
    crate::audit::judge::reference_price(pin, locked)
}

/// What one audit of `request` against `lock` plans, said without running it: the estimate
/// of the plan `Plan::for_audit` would make (the daemon states its spend per day from it).
#[must_use]
pub fn estimate(
    config: &Config,
    request: &Request<'_>,
    lock: Option<&LoadedLock>,
) -> crate::audit::plan::Estimate {
    let watch = (CancellationToken::new(), Arc::default());
    Plan::for_audit(config, request, watch, lock).estimate()
}

/// Whether `lock` holds a baseline recorded for the pin's current model: the only case in which
/// its probe calls can be compared with anything.
#[must_use]
pub fn has_baseline(lock: Option<&LoadedLock>, pin: &Pin) -> bool {
    lock.and_then(|l| l.lock.pins.get(&pin.id))
        .is_some_and(|locked| locked.model == pin.model)
}

/// Runs one audit of the plan's request (`Plan::for_audit`) and judges it against `lock`, the
/// lock the plan was made for. Pins without a baseline make no calls: they are reported
/// `no_baseline` with what needs no call (lifecycle data, the providers' models endpoints).
pub async fn audit(plan: &Plan<'_>, lock: Option<&LoadedLock>, ctx: &Context<'_>) -> Audited {
    let started_at = verdict::now();
    let (config, request) = (plan.config, &plan.request);
    debug_assert!(
        plan.pins.iter().all(|pin| has_baseline(lock, pin)),
        "a plan for this lock (Plan::for_audit) calls only pins with a baseline"
    );
    // Lookups are advisory and must not hold an interrupted audit: on a signal they give way to
    // the built-in table and no provider signals.
    let facts = async {
        if let Some(facts) = &ctx.facts {
            return facts.clone();
        }
        tokio::select! {
            loaded = load_facts(config, ctx.transport) => Arc::new(loaded),
            () = ctx.cancel.cancelled() => Arc::new(Facts::builtin_only()),
        }
    };
    let signals = async {
        tokio::select! {
            seen = provider_signals(config, &request.pins, ctx.transport) => seen,
            () = ctx.cancel.cancelled() => std::collections::BTreeMap::new(),
        }
    };
    let (observed, mut signals, facts) = tokio::join!(observe(plan, ctx.transport), signals, facts);
    let mut observed = observed.into_iter();
    let unbaselined: std::collections::HashSet<&str> =
        plan.unbaselined.iter().map(|p| p.id.as_str()).collect();
    let samples = |pin: &Pin| u64::from(request.samples.of(pin));
    let observations: Vec<Observation> = request
        .pins
        .iter()
        .map(|pin| {
            if unbaselined.contains(pin.id.as_str()) {
                let planned = samples(pin) * config.probes_of(pin).len() as u64;
                Observation::without_baseline(&pin.id, planned)
            } else {
                observed
                    .next()
                    .unwrap_or_else(|| Observation::complete(&pin.id, Vec::new()))
            }
        })
        .collect();
    let reports = request
        .pins
        .iter()
        .zip(&observations)
        .map(|(pin, obs)| {
            let locked = lock.and_then(|l| l.lock.pins.get(&pin.id));
            let seen = signals.remove(&pin.id).unwrap_or_default();
            let life = pin_lifecycle(config, pin, obs, &seen, &facts);
            let case = Case::new(pin, config.probes_of(pin), obs, locked)
                .with_lifecycle(life, seen.signals)
                .with_alpha(config.settings.alpha)
                .resolving(request.resolve)
                .identity_only(request.samples == Samples::Identity);
            verdict::pin_report(&case)
        })
        .collect();
    let report = verdict::report(config, lock, started_at, reports, request.strict);
    Audited {
        report,
        warnings: facts.warnings.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config of one pin asking one probe `samples` times.
    fn config(samples: u32) -> Config {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("probes")).unwrap();
        std::fs::write(
            dir.path().join("probes/arith.toml"),
            "id = \"arith\"\nprompt = \"What is 2 + 2?\"\nmax_tokens = 4\n",
        )
        .unwrap();
        let text = format!(
            "version = 1\n[providers.p]\nkind = \"openai\"\napi_key_env = \"K\"\n\n[[pin]]\nid = \"pin\"\nprovider = \"p\"\nmodel = \"m\"\nprobes = [\"probes/arith.toml\"]\nsamples = {samples}\n"
        );
        let env = |_: &str| Some("sk-test".to_owned());
        crate::config::load_text(&dir.path().join("pins.toml"), text, &env).unwrap()
    }

    #[test]
    fn each_kind_of_plan_asks_a_probe_its_own_number_of_times() {
        let table = [
            (10, Samples::Audit, 10),
            (10, Samples::Baseline, 40),
            (1, Samples::Baseline, 4),
            // At most the bound a pin's `samples` has.
            (2_500, Samples::Baseline, 10_000),
            (10_000, Samples::Baseline, 10_000),
            (10, Samples::Each(3), 3),
            (10, Samples::Each(0), 0),
            (10, Samples::Identity, 1),
        ];
        for (samples, kind, want) in table {
            let config = config(samples);
            assert_eq!(
                kind.of(&config.pins[0]),
                want,
                "{kind:?} of samples = {samples}"
            );
        }
    }
}
