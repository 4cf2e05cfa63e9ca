//! Recording baselines: one audit's observations turned into `modelpin.lock` entries.
//!
//! The `lock` command prints what this returns and writes the file; the decisions — what was
//! recorded, what was partial, what does not exist, which warnings a user needs — are made here.

use std::collections::{BTreeMap, BTreeSet};

use crate::audit::baseline::record;
use crate::audit::first_tokens::{self, Found, TierCalls};
use crate::audit::judge::{Case, judge, served_counts};
use crate::audit::plan::Estimate;
use crate::audit::run::{Context, Request, Samples};
use crate::audit::{Observation, Plan, observe};
use crate::config::{Config, Pin};
use crate::finding::Code;
use crate::lock::{LOCK_VERSION, LoadedLock, Lock, LockedPin};
use crate::provider::normalize_model_id;
use crate::stats::{PlannedProbe, minimum_detectable};
use crate::text::display_id;

/// The new lock, how the worst pin went, and what to tell the user, in pin order.
pub struct Locking {
    pub lock: Lock,
    pub worst: Locked,
    pub notices: Vec<String>,
    /// Pins whose baseline this run recorded (fully or partly).
    pub recorded: usize,
    /// A shutdown signal cut the run short: the lock must not be written.
    pub interrupted: bool,
    /// Calls planned and answered over every pin, for the note an interruption prints.
    pub planned: u64,
    pub answered: u64,
}

/// Calls, tokens and cost a lock of `request` plans, said before it starts: the probes, each
/// pin's discovery and at most the calls completing its baseline, at the figure its calls are
/// counted at against the spend cap (`run::price_of`; no lock yet, so the pin's own `price`).
#[must_use]
pub fn estimate(config: &Config, request: &Request<'_>) -> Estimate {
    let price_of = |pin: &Pin| crate::audit::run::price_of(pin, None);
    let mut estimate = Estimate::of(config, &request.pins, request.samples, price_of);
    for (id, calls) in first_tokens::for_lock(config, &request.pins) {
        if let Some(pin) = request.pins.iter().find(|p| p.id == id) {
            estimate.add_tier(price_of(pin), &calls);
        }
    }
    estimate
}

/// Calls the request's pins and records each into the previous lock (a pin that could not be
/// measured keeps its previous entry); pins no longer in the config are dropped.
pub async fn lock(
    config: &Config,
    previous: Option<LoadedLock>,
    request: &Request<'_>,
    ctx: &Context<'_>,
) -> Locking {
    let mut plan = Plan::for_request(config, request, ctx.watch(), None);
    let discovery: BTreeMap<String, TierCalls> = request
        .pins
        .iter()
        .filter_map(|pin| Some((pin.id.clone(), first_tokens::discovery(config, pin)?)))
        .collect();
    plan.tiers.clone_from(&discovery);
    let observations = observe(&plan, ctx.transport).await;
    // Discovery's answers choose each pin's border inputs; their baseline is completed in a
    // second round, under the same spend cap.
    let found: BTreeMap<String, Found> = request
        .pins
        .iter()
        .zip(&observations)
        .filter_map(|(pin, obs)| {
            let calls = discovery.get(&pin.id)?;
            Some((pin.id.clone(), first_tokens::select(calls, obs)))
        })
        .collect();
    let mut second = Plan::for_request(config, request, ctx.watch(), None);
    second.samples = Samples::Each(0);
    second.spend = plan.spend.clone();
    second.tiers = found
        .iter()
        .filter_map(|(id, f)| Some((id.clone(), first_tokens::baseline_calls(f)?)))
        .collect();
    second.pins.retain(|pin| second.tiers.contains_key(&pin.id));
    let completed = if second.pins.is_empty() || ctx.cancel.is_cancelled() {
        Vec::new()
    } else {
        observe(&second, ctx.transport).await
    };
    let completed: BTreeMap<&str, &Observation> =
        completed.iter().map(|o| (o.pin.as_str(), o)).collect();
    let mut lock = previous.map_or_else(|| empty_lock(config), |l| l.lock);
    lock.config_digest.clone_from(&config.digest);
    env!("CARGO_PKG_VERSION").clone_into(&mut lock.modelpin_version);
    let mut worst = Locked::Recorded;
    let mut notices = Vec::new();
    let mut recorded = 0;
    let planned = observations.iter().map(|o| o.planned).sum();
    let answered = observations
        .iter()
        .map(|o| o.planned.saturating_sub(o.unanswered()))
        .sum();
    for (pin, obs) in request.pins.iter().zip(&observations) {
        let tier_planned = discovery.get(&pin.id).map_or(0, TierCalls::calls);
        let (probes_only, discovered) = obs.split_tier(tier_planned);
        let locked = lock_one(config, pin, &probes_only, &mut lock, &mut notices);
        if matches!(locked, Locked::Recorded | Locked::Partial)
            && let Some(entry) = lock.pins.get_mut(&pin.id)
        {
            let rounds: Vec<&Observation> =
                [Some(&discovered), completed.get(pin.id.as_str()).copied()]
                    .into_iter()
                    .flatten()
                    .collect();
            let tier = TierRounds {
                found: found.get(&pin.id),
                rounds: &rounds,
                baseline: completed.get(pin.id.as_str()).copied(),
            };
            record_tier(pin, &tier, config.settings.alpha, entry, &mut notices);
        }
        recorded += usize::from(matches!(locked, Locked::Recorded | Locked::Partial));
        worst = worst.max(locked);
    }
    // Keep the lock to pins that still exist, so a removed pin does not linger as a baseline.
    let live: BTreeSet<&str> = config.pins.iter().map(|p| p.id.as_str()).collect();
    lock.pins.retain(|id, _| live.contains(id.as_str()));
    Locking {
        lock,
        worst,
        notices,
        recorded,
        interrupted: ctx.cancel.is_cancelled(),
        planned,
        answered,
    }
}

/// What the lock's tier calls gave one pin: discovery's choice, every round (for counting what
/// went unanswered) and the baseline round.
struct TierRounds<'a> {
    found: Option<&'a Found>,
    rounds: &'a [&'a Observation],
    baseline: Option<&'a Observation>,
}

/// Puts the pin's first-token tier (or why it has none) into its new lock entry, and says so.
fn record_tier(
    pin: &Pin,
    tier: &TierRounds<'_>,
    alpha: f64,
    entry: &mut LockedPin,
    notices: &mut Vec<String>,
) {
    let TierRounds {
        found,
        rounds,
        baseline,
    } = *tier;
    entry.first_tokens = None;
    entry.tiers_missing.clear();
    match found {
        None => {
            let why = first_tokens::opted_out(pin).unwrap_or("off");
            entry
                .tiers_missing
                .insert("first_tokens".into(), why.to_owned());
        }
        Some(found) => {
            entry.first_tokens = baseline.and_then(|b| first_tokens::record(found, b, alpha));
            if let Some(why) = &found.no_logprobs {
                entry.tiers_missing.insert("logprobs".into(), why.clone());
            }
            if entry.first_tokens.is_none() {
                let why = found
                    .no_inputs
                    .clone()
                    .unwrap_or_else(|| "no border input was answered; lock again".to_owned());
                entry.tiers_missing.insert("first_tokens".into(), why);
            }
            let missing: u64 = rounds.iter().map(|o| o.unanswered()).sum();
            if missing > 0 && entry.first_tokens.is_some() {
                notices.push(format!(
                    "warning: {}: {missing} first-token calls were not answered; the tier's baseline is smaller than planned (lock again to complete it)",
                    pin.id
                ));
            }
        }
    }
    notices.push(first_tokens::describe(
        &pin.id,
        entry,
        pin.first_token_samples,
    ));
}

/// How locking one pin went; ordered so the worst decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Locked {
    Recorded,
    /// Recorded from fewer calls than planned (spend cap, budget, interrupt).
    Partial,
    Unmeasured,
    NotFound,
}

fn empty_lock(config: &Config) -> Lock {
    Lock {
        lock_version: LOCK_VERSION,
        modelpin_version: env!("CARGO_PKG_VERSION").to_owned(),
        config_digest: config.digest.clone(),
        pins: std::collections::BTreeMap::new(),
    }
}

fn lock_one(
    config: &Config,
    pin: &Pin,
    obs: &Observation,
    lock: &mut Lock,
    notices: &mut Vec<String>,
) -> Locked {
    let probes = config.probes_of(pin);
    let kind = pin.kind.as_str();
    if let Some(locked) = record(pin, kind, &probes, obs) {
        let served = served_counts(obs);
        let list: Vec<String> = served
            .iter()
            .map(|(id, n)| format!("{} ×{n}", display_id(id)))
            .collect();
        notices.push(format!("locked {}: served {}", pin.id, list.join(", ")));
        match gateway_of(obs) {
            Some(name) => notices.push(format!(
                "note: pin `{}` is served through a gateway ({name}); the lock records the deployment behind `{}`, and a change of deployment will be reported",
                pin.id, pin.model
            )),
            None => warn_alias(pin, &served.keys().cloned().collect::<Vec<_>>(), notices),
        }
        warn_small_baseline(config, pin, &locked, notices);
        lock.pins.insert(pin.id.clone(), locked);
        let missing = obs.unanswered();
        if missing > 0 {
            notices.push(format!(
                "warning: {}: the baseline holds {} of {} planned calls ({missing} not answered); lock again to complete it",
                pin.id,
                obs.planned - missing,
                obs.planned
            ));
            return Locked::Partial;
        }
        return Locked::Recorded;
    }
    let findings = judge(&Case::new(pin, probes, obs, None));
    for finding in &findings {
        notices.push(format!(
            "not locked {}: {}: {}",
            pin.id, finding.code, finding.message
        ));
    }
    if findings.iter().any(|f| f.code == Code::ModelNotFound) {
        Locked::NotFound
    } else {
        Locked::Unmeasured
    }
}

/// The gateway that named the deployments of a pin's answers, if one did.
fn gateway_of(obs: &Observation) -> Option<&'static str> {
    obs.replies()
        .find_map(|(_, r)| r.gateway.as_ref().filter(|g| g.deployment.is_some()))
        .map(|g| g.name)
}

/// Locking an alias records the snapshot it resolved to; say which ID to pin instead.
fn warn_alias(pin: &Pin, served: &[String], notices: &mut Vec<String>) {
    let requested = normalize_model_id(&pin.model);
    let others: Vec<&String> = served
        .iter()
        .filter(|s| **s != requested && !pin.accept.contains(s))
        .collect();
    if let [snapshot] = others.as_slice() {
        // The line to paste is a TOML string as TOML escapes it: exact, and inert on a terminal.
        let line = toml::Value::String((*snapshot).clone());
        let shown = display_id(snapshot);
        notices.push(format!(
            "warning: pin `{}` asks for `{}`, which the provider resolved to `{shown}`; the lock accepts `{shown}` from now on, and a move of the alias will be reported. Pin the snapshot itself: model = {line}",
            pin.id, pin.model
        ));
    } else if others.len() > 1 {
        notices.push(format!(
            "warning: pin `{}` asks for `{}`, which was served by several models during locking: {}",
            pin.id,
            pin.model,
            others
                .iter()
                .map(|s| format!("`{}`", display_id(s)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
}

/// Flags a baseline too small for any behaviour test to ever reject at `alpha` (or for some
/// tests to), with the size that would do, so a user does not trust a check that cannot fire.
fn warn_small_baseline(
    config: &Config,
    pin: &Pin,
    locked: &crate::lock::LockedPin,
    notices: &mut Vec<String>,
) {
    let planned: Vec<PlannedProbe> = config
        .probes_of(pin)
        .iter()
        .filter_map(|probe| {
            let recorded = locked.probes.get(&probe.id)?;
            Some(PlannedProbe {
                probe_id: probe.id.clone(),
                compare: probe.compare,
                has_expect: probe.expect.is_some(),
                baseline_n: recorded.outputs.len() as u64,
                current_n: u64::from(pin.samples),
            })
        })
        .collect();
    if planned.is_empty() {
        return;
    }
    let reach = minimum_detectable(&planned, config.settings.alpha);
    let needed = reach.tests.iter().filter_map(|t| t.baseline_needed).max();
    let advice = needed.map_or_else(
        || "more samples per audit (`samples`) are needed too".to_owned(),
        |n| format!("lock with `--samples {n}` or more"),
    );
    if !reach.any_reachable {
        notices.push(format!(
            "warning: {}: with this baseline no behaviour test can reject at alpha {} — behaviour drift would go unseen; {advice} (30 or more per probe is a good start)",
            pin.id, config.settings.alpha
        ));
    } else if !reach.all_reachable {
        let blind: Vec<String> = reach
            .tests
            .iter()
            .filter(|t| !t.reachable)
            .map(|t| format!("{:?} on {}", t.test, t.probes.join(",")))
            .collect();
        notices.push(format!(
            "note: {}: some behaviour tests cannot reject at alpha {} with this baseline ({}); {advice}",
            pin.id,
            config.settings.alpha,
            blind.join("; ")
        ));
    }
}
