//! The first-token tier: border inputs asked for one output token, with logprobs where the
//! provider reports them.
//!
//! A swap that keeps the model family — requantized weights, other kernels, a changed sampler —
//! barely moves long answers but tips the first token of a prompt whose first token is nearly
//! tied (B3IT, arXiv 2602.11083), moves the logprobs the provider reports for it (Logprob
//! Tracking, arXiv 2512.03816), or changes how the sampled token relates to the reported
//! probabilities. `lock` finds such inputs for each pin (discovery: every candidate asked
//! `DISCOVERY_SAMPLES` times), keeps the `KEEP` most uncertain, records `BASELINE_SAMPLES`
//! first tokens of each in calls made after the choice, and checks each test on its own halves;
//! every audit asks each kept input the pin's `first_token_samples` times (32 unless set) for
//! one token. Every test compares with the lock, never with an ideal provider, and
//! reads the reported logprobs only as `testimony` allows (see `stats::logprob::Reported`).
//! The tests themselves are in `stats::{first_token, logprob, sampling}`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::audit::{CallKind, Observation};
use crate::config::{Compare, Config, Pin, Probe, probe_digest};
use crate::lock::{Discovery, LoadedLock, LockedFirstTokens, LockedInput, LockedPin};
use crate::provider::{FirstToken, Flaw, ProviderKind, Reply};
use crate::stats::drift::TierTest;
use crate::stats::first_token::{FirstTokens, first_tokens};
use crate::stats::logprob::{PromptLogprobs, Reported, logprobs};
use crate::stats::sampling::{SamplingInput, SideSummary, sampling, side_summary};
use crate::stats::{PermutationBudget, TestKind};

/// Built-in candidates: open questions whose first word has many plausible answers. The pin's
/// own probes are candidates too.
pub const CANDIDATES: &[&str] = &[
    "Name a color.",
    "Name an animal.",
    "Name a fruit.",
    "Pick a number between 1 and 10.",
    "Say one word.",
    "Name a country.",
    "Name a city.",
    "Pick a letter of the alphabet.",
    "Name a day of the week.",
    "Name a month.",
    "Name a musical instrument.",
    "Give a first name.",
    "Name a sport.",
    "Name a vegetable.",
    "Name a planet.",
    "Name a flower.",
    "Name a tree.",
    "Name a drink.",
    "Name a bird.",
    "Name a programming language.",
];

/// Calls per candidate in discovery. They only choose the inputs: the baseline is recorded
/// after the choice, so no input's baseline is one picked for how it happened to fall.
pub const DISCOVERY_SAMPLES: u32 = 4;
/// Inputs kept per pin (the configuration's bound, which reading a lock checks too).
pub const KEEP: usize = crate::config::FIRST_TOKEN_INPUTS;
/// First tokens recorded per kept input at the lock. The sampling test is two-sample, so the
/// lock's calls add to its variance (1/160 + 1/32 per input against 1/60 + 1/32 with 60): on a
/// real llama.cpp server 60 caught a forced temperature of 0.7 in 7 default audits of 8, 160 in
/// 46 of 48 over two runs (BENCHMARKS.md "Detection on a real model"), for 800 more one-token
/// calls once.
pub const BASELINE_SAMPLES: u32 = 160;
/// Top tokens asked for per call where logprobs exist (OpenAI allows up to 20).
pub const TOP_LOGPROBS: u8 = 10;
/// Most candidates one discovery tries: the built-in ones and at most this many of the pin's
/// probes beyond them.
pub const MAX_CANDIDATES: usize = 40;
/// An input whose most probable first token has more than this share is no border input.
const DECIDED: f64 = 0.95;
/// Share of calls whose logprobs may be missing or inconsistent before the logprob and
/// sampling tests are short of what they claim to watch (a tenth).
pub const UNUSABLE_SHARE: f64 = 0.1;
/// How far the returned token's own logprob may sit from its entry in the list (the same
/// number printed twice; any real stack agrees to the last digit).
const AGREE: f64 = 1e-3;
/// How far above 1 the listed probabilities may add up (float32 rounding) before the list is
/// no distribution.
const MASS: f64 = 1e-2;

/// The id tier probes carry in the lock and its evidence (config probe ids cannot hold `:`, so
/// none is taken for a pin's probe); their calls are told apart by `CallKind::Tier`.
const PREFIX: &str = "first-token:";

/// Every tier call asks for one token.
pub const TIER_MAX_TOKENS: u32 = 1;

/// Whether the provider's wire format carries logprobs (chat completions' `logprobs` and
/// `top_logprobs`). Anthropic's Messages API has none; Gemini's `responseLogprobs` is not read
/// by this version.
#[must_use]
pub fn speaks_logprobs(kind: ProviderKind) -> bool {
    matches!(
        kind,
        ProviderKind::OpenAi
            | ProviderKind::OpenAiCompatible
            | ProviderKind::OpenRouter
            | ProviderKind::Azure
    )
}

/// A candidate as a probe: the same system and prompt, one output token, temperature 1.
#[must_use]
pub fn tier_probe(system: Option<&str>, prompt: &str) -> Probe {
    let digest = probe_digest(system, prompt, 1, 1.0);
    Probe {
        id: format!("{PREFIX}{}", &digest["sha256:".len().."sha256:".len() + 12]),
        source: std::path::PathBuf::from("first-token tier"),
        system: system.map(str::to_owned),
        prompt: prompt.to_owned(),
        max_tokens: TIER_MAX_TOKENS,
        temperature: 1.0,
        compare: Compare::Choice,
        expect: None,
        normalize: Vec::new(),
        digest,
    }
}

/// One pin's one-token calls: which inputs, how often, with how many top logprobs.
#[derive(Debug, Clone)]
pub struct TierCalls {
    pub probes: Vec<Probe>,
    pub samples: u32,
    pub top_logprobs: Option<u8>,
}

impl TierCalls {
    #[must_use]
    pub fn calls(&self) -> u64 {
        self.probes.len() as u64 * u64::from(self.samples)
    }
}

/// Why a pin gets no first-token tier at this lock, before any call.
#[must_use]
pub fn opted_out(pin: &Pin) -> Option<&'static str> {
    (!pin.first_tokens).then_some("off for this pin (`first_tokens = false`)")
}

/// Discovery's calls for a pin: the built-in candidates and the pin's probes, each asked for one
/// token `DISCOVERY_SAMPLES` times; `None` when the pin opted out.
#[must_use]
pub fn discovery(config: &Config, pin: &Pin) -> Option<TierCalls> {
    opted_out(pin).is_none().then_some(())?;
    let mut probes: Vec<Probe> = CANDIDATES.iter().map(|p| tier_probe(None, p)).collect();
    for probe in config.probes_of(pin) {
        if probes.len() >= MAX_CANDIDATES {
            break;
        }
        let candidate = tier_probe(probe.system.as_deref(), &probe.prompt);
        if !probes.iter().any(|p| p.id == candidate.id) {
            probes.push(candidate);
        }
    }
    Some(TierCalls {
        probes,
        samples: DISCOVERY_SAMPLES,
        top_logprobs: speaks_logprobs(pin.kind).then_some(TOP_LOGPROBS),
    })
}

/// An audit's calls for a pin whose lock holds inputs, `samples` per input; `None` when it holds
/// none.
#[must_use]
pub fn check_calls(locked: &LockedPin, samples: u32) -> Option<TierCalls> {
    let tier = locked.first_tokens.as_ref()?;
    let probes: Vec<Probe> = tier
        .inputs
        .values()
        .map(|i| tier_probe(i.system.as_deref(), &i.prompt))
        .collect();
    if probes.is_empty() {
        return None;
    }
    Some(TierCalls {
        probes,
        samples,
        top_logprobs: (tier.top_logprobs > 0).then_some(tier.top_logprobs),
    })
}

/// The first token a reply gave: the token the provider named, else the answer text (one
/// token's worth when `max_tokens` is 1).
fn token_of(reply: &Reply) -> &str {
    reply
        .first_token
        .as_ref()
        .map_or(reply.text.as_str(), |t| t.sampled.as_str())
}

/// What one call's reported logprobs can testify to the logprob and sampling tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Testimony {
    /// The tested tokens, cut from the list so that no draw changes them.
    Usable(Reported),
    /// Logprobs with fewer than two entries: nothing to test.
    Narrow,
    /// No logprobs.
    Missing,
    /// Logprobs that are no distribution: no evidence, with the reason.
    Flawed(Flaw),
}

/// Reads a call's first token as asked with `top_logprobs: asked`. Every listing convention
/// met in the wild is read alike (exactly the top k; the sampled token appended as a k + 1-th
/// entry; fewer than asked); what none of them produces is a flaw.
#[must_use]
pub fn testimony(token: Option<&FirstToken>, asked: u8) -> Testimony {
    let Some(t) = token else {
        return Testimony::Missing;
    };
    if let Some(flaw) = flaw(t, usize::from(asked)) {
        return Testimony::Flawed(flaw);
    }
    Reported::cut(&t.top, &t.sampled, usize::from(asked))
        .map_or(Testimony::Narrow, Testimony::Usable)
}

fn flaw(t: &FirstToken, asked: usize) -> Option<Flaw> {
    if let Some(flaw) = t.flaw {
        return Some(flaw);
    }
    let own = t
        .top
        .iter()
        .find(|(tok, _)| *tok == t.sampled)
        .map(|(_, lp)| *lp);
    let lowest = t
        .top
        .iter()
        .map(|(_, lp)| *lp)
        .fold(f64::INFINITY, f64::min);
    // One entry beyond those asked is the sampled token appended below them (llama.cpp).
    let appended = own.is_some_and(|lp| lp <= lowest);
    if t.listed > asked + 1 || (t.listed == asked + 1 && !appended) {
        return Some(Flaw::MoreThanAsked);
    }
    if let (Some(reported), Some(listed)) = (t.sampled_logprob, own)
        && (reported - listed).abs() > AGREE
    {
        return Some(Flaw::SampledDisagrees);
    }
    if t.top.iter().map(|(_, lp)| lp.exp()).sum::<f64>() > 1.0 + MASS {
        return Some(Flaw::NotADistribution);
    }
    None
}

/// How a tier's calls testified: calls, usable ones, narrow ones, and the flaws by reason.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Testimonies {
    pub calls: u64,
    pub usable: u64,
    pub narrow: u64,
    pub flawed: BTreeMap<Flaw, u64>,
}

impl Testimonies {
    /// Counts the testimony of `replies`, asked with `top_logprobs: asked`.
    #[must_use]
    pub fn of<'a>(replies: impl Iterator<Item = &'a Reply>, asked: u8) -> Testimonies {
        let mut counts = Testimonies::default();
        for reply in replies {
            counts.calls += 1;
            match testimony(reply.first_token.as_deref(), asked) {
                Testimony::Usable(_) => counts.usable += 1,
                Testimony::Narrow => counts.narrow += 1,
                Testimony::Missing => {}
                Testimony::Flawed(flaw) => *counts.flawed.entry(flaw).or_default() += 1,
            }
        }
        counts
    }

    /// More than `UNUSABLE_SHARE` of the calls could not testify: an audit's tests would be
    /// short of what they claim to watch.
    #[must_use]
    pub fn short(&self) -> bool {
        self.calls > 0 && (self.calls - self.usable) as f64 > UNUSABLE_SHARE * self.calls as f64
    }

    /// At most `UNUSABLE_SHARE` of the calls came without logprobs or with flawed ones, and some
    /// are usable: the provider reports logprobs (a decided input may list a single token).
    #[must_use]
    pub fn reported(&self) -> bool {
        let unreported = self.calls - self.usable - self.narrow;
        self.usable > 0 && unreported as f64 <= UNUSABLE_SHARE * self.calls as f64
    }

    /// Why logprobs are missing for the tier, in words; `None` when they are reported.
    #[must_use]
    pub fn why_short(&self) -> Option<String> {
        if self.reported() {
            return None;
        }
        let flawed: u64 = self.flawed.values().sum();
        if flawed == 0 {
            return Some(if self.usable == 0 {
                "the provider returned no logprobs when asked".to_owned()
            } else {
                format!(
                    "the provider returned logprobs on only {} of {} calls",
                    self.usable + self.narrow,
                    self.calls
                )
            });
        }
        let reasons: Vec<String> = self
            .flawed
            .iter()
            .map(|(flaw, n)| format!("{} ({n})", flaw.as_str()))
            .collect();
        Some(format!(
            "the provider's logprobs are no distribution on {flawed} of {} calls: {}",
            self.calls,
            reasons.join(", ")
        ))
    }
}

/// The replies of one tier probe, in sample order.
fn replies_of<'a>(obs: &'a Observation, id: &str) -> Vec<&'a Reply> {
    obs.replies()
        .filter(|(c, _)| c.probe == id)
        .map(|(_, r)| r)
        .collect()
}

/// What discovery found: the inputs to keep (most uncertain first) and whether logprobs came.
#[derive(Debug, Clone)]
pub struct Found {
    pub kept: Vec<Probe>,
    pub logprobs: bool,
    /// Why nothing was kept, or why logprobs are missing.
    pub no_inputs: Option<String>,
    pub no_logprobs: Option<String>,
    pub discovery: Discovery,
}

/// How uncertain a candidate's first token is. With logprobs: entropy plus the variance of the
/// log-probability under the reported distribution of the tested tokens (the information a
/// sampling test gets per call), averaged over calls. Without: the chance two calls differ
/// (Gini impurity) of the sampled tokens. `None` when the candidate looks decided.
fn uncertainty(replies: &[&Reply], asked: Option<u8>) -> Option<f64> {
    if let Some(asked) = asked {
        let scores: Vec<f64> = replies
            .iter()
            .filter_map(|r| match testimony(r.first_token.as_deref(), asked) {
                Testimony::Usable(reported) => Some(reported.top),
                _ => None,
            })
            .filter_map(|top| {
                let max = top
                    .iter()
                    .map(|(_, lp)| *lp)
                    .fold(f64::NEG_INFINITY, f64::max);
                let w: Vec<f64> = top.iter().map(|(_, lp)| (lp - max).exp()).collect();
                let total: f64 = w.iter().sum();
                let p: Vec<f64> = w.iter().map(|x| x / total).collect();
                let top = p.iter().copied().fold(0.0, f64::max);
                // The reported share of the most probable token, out of everything (not only
                // the listed tokens): a decided input stays decided however it is listed.
                if max.exp() > DECIDED || top > DECIDED {
                    return None;
                }
                let h: f64 = -p
                    .iter()
                    .filter(|x| **x > 0.0)
                    .map(|x| x * x.ln())
                    .sum::<f64>();
                let second: f64 = p
                    .iter()
                    .filter(|x| **x > 0.0)
                    .map(|x| x * x.ln() * x.ln())
                    .sum();
                Some(h + (second - h * h).max(0.0))
            })
            .collect();
        if scores.is_empty() {
            return None;
        }
        return Some(scores.iter().sum::<f64>() / scores.len() as f64);
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in replies {
        *counts.entry(token_of(r)).or_default() += 1;
    }
    if counts.len() < 2 {
        return None;
    }
    let n = replies.len() as f64;
    Some(
        1.0 - counts
            .values()
            .map(|&c| (c as f64 / n).powi(2))
            .sum::<f64>(),
    )
}

/// Chooses the border inputs from discovery's calls. Logprobs count as given when at most
/// `UNUSABLE_SHARE` of the answered calls came without usable ones.
#[must_use]
pub fn select(calls: &TierCalls, obs: &Observation) -> Found {
    let answered: usize = calls
        .probes
        .iter()
        .map(|p| replies_of(obs, &p.id).len())
        .sum();
    let testified = calls.top_logprobs.map(|asked| {
        Testimonies::of(
            obs.replies()
                .filter(|(c, _)| c.kind == CallKind::Tier)
                .map(|(_, r)| r),
            asked,
        )
    });
    let logprobs = testified.as_ref().is_some_and(Testimonies::reported);
    let discovery = Discovery {
        candidates: calls.probes.len() as u32,
        calls: answered as u64,
    };
    let no_logprobs = match &testified {
        None => Some("no logprobs in this provider's API".to_owned()),
        Some(_) if answered == 0 || logprobs => None,
        Some(t) => Some(
            t.why_short()
                .unwrap_or_else(|| "the provider returned no logprobs when asked".to_owned()),
        ),
    };
    let asked = calls.top_logprobs.filter(|_| logprobs);
    let mut scored: Vec<(f64, &Probe)> = calls
        .probes
        .iter()
        .filter_map(|p| Some((uncertainty(&replies_of(obs, &p.id), asked)?, p)))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let kept: Vec<Probe> = scored
        .into_iter()
        .take(KEEP)
        .map(|(_, p)| p.clone())
        .collect();
    let no_inputs = if answered == 0 {
        Some("no discovery call was answered; lock again".to_owned())
    } else if kept.is_empty() {
        // Logprobs asked for but unusable: the choice fell back to the returned tokens alone,
        // and the user should learn why from this line too.
        let fallback = match (calls.top_logprobs, &no_logprobs) {
            (Some(_), Some(why)) => format!(" (judged by the returned tokens alone: {why})"),
            _ => String::new(),
        };
        Some(format!(
            "no border input: each of {} candidates gave the same first token in {} calls{fallback}",
            calls.probes.len(),
            calls.samples
        ))
    } else {
        None
    };
    Found {
        kept,
        logprobs,
        no_inputs,
        no_logprobs,
        discovery,
    }
}

/// The calls that record the baseline of the kept inputs after discovery.
#[must_use]
pub fn baseline_calls(found: &Found) -> Option<TierCalls> {
    if found.kept.is_empty() {
        return None;
    }
    Some(TierCalls {
        probes: found.kept.clone(),
        samples: BASELINE_SAMPLES,
        top_logprobs: found.logprobs.then_some(TOP_LOGPROBS),
    })
}

/// The tier's lock entry from the baseline's calls (made after discovery chose the inputs),
/// with the tests that failed the lock's own split-half check at `alpha` switched off; `None`
/// when no kept input was answered. A call whose logprobs cannot testify is recorded with an
/// empty list.
#[must_use]
pub fn record(found: &Found, baseline: &Observation, alpha: f64) -> Option<LockedFirstTokens> {
    let mut inputs = BTreeMap::new();
    for probe in &found.kept {
        let replies = replies_of(baseline, &probe.id);
        if replies.is_empty() {
            continue;
        }
        let mut prompt_tokens: Vec<u64> = replies.iter().filter_map(|r| r.usage.input).collect();
        prompt_tokens.sort_unstable();
        prompt_tokens.dedup();
        let usable = |r: &&Reply| {
            matches!(
                testimony(r.first_token.as_deref(), TOP_LOGPROBS),
                Testimony::Usable(_)
            )
        };
        inputs.insert(
            probe.id.clone(),
            LockedInput {
                system: probe.system.clone(),
                prompt: probe.prompt.clone(),
                digest: probe.digest.clone(),
                prompt_tokens,
                tokens: replies.iter().map(|r| token_of(r).to_owned()).collect(),
                top: replies
                    .iter()
                    .map(|r| match (found.logprobs && usable(r), &r.first_token) {
                        (true, Some(t)) => t.top.clone(),
                        _ => Vec::new(),
                    })
                    .collect(),
            },
        );
    }
    if inputs.is_empty() {
        return None;
    }
    let mut tier = LockedFirstTokens {
        top_logprobs: if found.logprobs { TOP_LOGPROBS } else { 0 },
        discovery: found.discovery,
        inputs,
        off: BTreeMap::new(),
    };
    tier.off = self_check(&tier, alpha);
    if let Some(why) = sampling_blind(&tier, alpha) {
        tier.off.insert(TestKind::Sampling.as_str().to_owned(), why);
    }
    Some(tier)
}

/// One side of an input's comparison: the first tokens, and the calls whose logprobs testify.
struct Side<'a> {
    tokens: Vec<&'a str>,
    reported: Vec<Reported>,
}

impl<'a> Side<'a> {
    /// The lock's calls `range` of an input.
    fn locked(input: &'a LockedInput, asked: u8, range: std::ops::Range<usize>) -> Side<'a> {
        let tokens: Vec<&str> = input.tokens[range.clone()]
            .iter()
            .map(String::as_str)
            .collect();
        let reported = input.tokens[range.clone()]
            .iter()
            .zip(input.top.get(range).unwrap_or_default())
            .filter_map(|(token, top)| Reported::cut(top, token, usize::from(asked)))
            .collect();
        Side { tokens, reported }
    }

    fn audited(replies: &[&'a Reply], asked: u8) -> Side<'a> {
        Side {
            tokens: replies.iter().map(|r| token_of(r)).collect(),
            reported: replies
                .iter()
                .filter_map(|r| match testimony(r.first_token.as_deref(), asked) {
                    Testimony::Usable(reported) => Some(reported),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// An input's two sides.
struct Compared<'a> {
    prompt: &'a str,
    baseline: Side<'a>,
    current: Side<'a>,
}

/// The tier's tests on compared inputs: first tokens, and with logprobs the reported logprobs
/// and how the provider samples them; a test the lock switched off is not run.
fn run(
    ids: &[String],
    inputs: &[Compared<'_>],
    asked: u8,
    off: &BTreeMap<String, String>,
    budget: PermutationBudget,
    seed: u64,
) -> Vec<TierTest> {
    let on = |kind: TestKind| !off.contains_key(kind.as_str());
    let mut out = Vec::new();
    if on(TestKind::FirstTokens) {
        let first: Vec<FirstTokens<'_>> = inputs
            .iter()
            .map(|i| FirstTokens {
                input: i.prompt,
                baseline: i.baseline.tokens.clone(),
                current: i.current.tokens.clone(),
            })
            .collect();
        out.push(TierTest {
            probes: ids.to_vec(),
            result: first_tokens(&first, budget, seed),
        });
    }
    if asked == 0 {
        return out;
    }
    if on(TestKind::Logprobs) {
        let prompts: Vec<PromptLogprobs<'_>> = inputs
            .iter()
            .map(|i| PromptLogprobs {
                prompt: i.prompt,
                baseline: i.baseline.reported.iter().map(|r| &r.top).collect(),
                current: i.current.reported.iter().map(|r| &r.top).collect(),
            })
            .collect();
        out.push(TierTest {
            probes: ids.to_vec(),
            result: logprobs(&prompts, budget, seed),
        });
    }
    if on(TestKind::Sampling) {
        let sampled: Vec<SamplingInput<'_>> = inputs
            .iter()
            .map(|i| SamplingInput {
                baseline: i.baseline.reported.iter().collect(),
                current: i.current.reported.iter().collect(),
            })
            .collect();
        out.push(TierTest {
            probes: ids.to_vec(),
            result: sampling(&sampled, budget, seed),
        });
    }
    out
}

/// The lock's own check: each test run on the first half of every input's baseline calls
/// against the second half, at `alpha`. A test that rejects there would compare later audits
/// with a provider that does not hold still even within one lock: it is switched off for the
/// pin, with the reason.
fn self_check(tier: &LockedFirstTokens, alpha: f64) -> BTreeMap<String, String> {
    let ids: Vec<String> = tier.inputs.keys().cloned().collect();
    let inputs: Vec<Compared<'_>> = tier
        .inputs
        .values()
        .map(|input| {
            let half = input.tokens.len() / 2;
            Compared {
                prompt: &input.prompt,
                baseline: Side::locked(input, tier.top_logprobs, 0..half),
                current: Side::locked(input, tier.top_logprobs, half..input.tokens.len()),
            }
        })
        .collect();
    let none = BTreeMap::new();
    let budget = PermutationBudget::resolving(alpha);
    run(&ids, &inputs, tier.top_logprobs, &none, budget, SELF_CHECK_SEED)
        .into_iter()
        .filter(|t| t.result.p_value <= alpha)
        .map(|t| {
            (
                t.result.test.as_str().to_owned(),
                format!(
                    "off: it rejected on the lock's own calls (first half against second, p = {:.1e} at alpha {alpha}): the provider did not hold still within the lock",
                    t.result.p_value
                ),
            )
        })
        .collect()
}

/// Why the sampling test cannot watch this provider, when the lock's calls show it: the
/// returned token fell outside the listed tokens more often than their probabilities leave room
/// for (a Poisson tail at `alpha` over the expected count), and in more than `UNUSABLE_SHARE` of
/// the calls. Such a listing does not describe how the provider samples, and a test whose calls
/// nearly all land in one outcome ("outside") has no power: it would say p = 1 whatever changed.
fn sampling_blind(tier: &LockedFirstTokens, alpha: f64) -> Option<String> {
    use statrs::distribution::{DiscreteCDF, Poisson};
    if tier.top_logprobs == 0 {
        return None;
    }
    let (mut calls, mut outside, mut room) = (0_u64, 0_u64, 0.0_f64);
    for input in tier.inputs.values() {
        let side = Side::locked(input, tier.top_logprobs, 0..input.tokens.len());
        for reported in side.reported {
            calls += 1;
            outside += u64::from(reported.sampled.is_none());
            let listed: f64 = reported.top.iter().map(|(_, lp)| lp.exp()).sum();
            room += (1.0 - listed).max(0.0);
        }
    }
    if calls == 0 || (outside as f64) <= UNUSABLE_SHARE * calls as f64 {
        return None;
    }
    let tail = Poisson::new(room.max(1e-9)).map_or(0.0, |p| p.sf(outside - 1));
    (tail <= alpha).then(|| {
        format!(
            "off: the returned token was outside the listed tokens in {outside} of the lock's {calls} calls, where their probabilities leave room for {room:.1}: the logprobs do not describe how the provider samples, so the sampling test could not measure"
        )
    })
}

/// The self-check's permutations are seeded alike for every lock, so a lock can be rechecked.
const SELF_CHECK_SEED: u64 = 0x10C4_5E1F;

/// The tier's tests on one audit: first tokens against the lock's, and where the lock has
/// logprobs, reported logprobs against the lock's spread and how the provider samples them
/// against how it sampled at the lock. Inputs this audit did not answer take no part.
#[must_use]
pub fn tests(
    tier: &LockedFirstTokens,
    obs: &Observation,
    budget: PermutationBudget,
    seed: u64,
) -> Vec<TierTest> {
    let answered: Vec<(&str, &LockedInput, Vec<&Reply>)> = tier
        .inputs
        .iter()
        .map(|(id, input)| (id.as_str(), input, replies_of(obs, id)))
        .filter(|(_, _, r)| !r.is_empty())
        .collect();
    if answered.is_empty() {
        return Vec::new();
    }
    let ids: Vec<String> = answered.iter().map(|(id, _, _)| (*id).to_owned()).collect();
    let inputs: Vec<Compared<'_>> = answered
        .iter()
        .map(|(_, input, replies)| Compared {
            prompt: &input.prompt,
            baseline: Side::locked(input, tier.top_logprobs, 0..input.tokens.len()),
            current: Side::audited(replies, tier.top_logprobs),
        })
        .collect();
    run(&ids, &inputs, tier.top_logprobs, &tier.off, budget, seed)
}

/// How the provider sampled at the lock against the probabilities it reported, over every
/// input; `None` without logprobs.
#[must_use]
pub fn locked_sampling(tier: &LockedFirstTokens) -> Option<SideSummary> {
    if tier.top_logprobs == 0 {
        return None;
    }
    let sides: Vec<Side<'_>> = tier
        .inputs
        .values()
        .map(|i| Side::locked(i, tier.top_logprobs, 0..i.tokens.len()))
        .collect();
    Some(side_summary(sides.iter().flat_map(|s| s.reported.iter())))
}

/// The tier calls of an audit: each pin with a baseline whose lock holds inputs (and that has
/// not opted out since), by pin id.
#[must_use]
pub fn for_check(lock: Option<&LoadedLock>, pins: &[&Pin]) -> BTreeMap<String, TierCalls> {
    pins.iter()
        .filter(|pin| opted_out(pin).is_none())
        .filter_map(|pin| {
            let locked = lock?.lock.pins.get(&pin.id)?;
            (locked.model == pin.model).then_some(())?;
            Some((
                pin.id.clone(),
                check_calls(locked, pin.first_token_samples)?,
            ))
        })
        .collect()
}

/// What a lock's tier will call, said before it starts: discovery for each pin, and at most
/// the calls completing the baseline of `KEEP` inputs.
#[must_use]
pub fn for_lock(config: &Config, pins: &[&Pin]) -> Vec<(String, TierCalls)> {
    let mut planned = Vec::new();
    for pin in pins {
        let Some(discovery) = discovery(config, pin) else {
            continue;
        };
        let baseline = TierCalls {
            probes: discovery.probes.iter().take(KEEP).cloned().collect(),
            samples: BASELINE_SAMPLES,
            top_logprobs: discovery.top_logprobs,
        };
        planned.push((pin.id.clone(), discovery));
        planned.push((pin.id.clone(), baseline));
    }
    planned
}

/// One line for `lock` on what the pin's tier holds, or why it has none.
#[must_use]
pub fn describe(pin: &str, locked: &LockedPin, samples: u32) -> String {
    let missing = |tier: &str| locked.tiers_missing.get(tier).map(String::as_str);
    match &locked.first_tokens {
        Some(tier) => {
            let logprobs = if tier.top_logprobs > 0 {
                let drawn = locked_sampling(tier).map_or_else(String::new, |s| {
                    format!(
                        ", both against the lock's own calls (it sampled like temperature {:.2} against the probabilities it reported; {:.0} % outside the top {})",
                        s.implied_temperature,
                        s.outside * 100.0,
                        tier.top_logprobs - 1
                    )
                });
                format!(
                    "logprobs (top {}) and sampling tests too{drawn}",
                    tier.top_logprobs
                )
            } else {
                format!(
                    "no logprob or sampling test: {}",
                    missing("logprobs").unwrap_or("no logprobs")
                )
            };
            let off: String = tier
                .off
                .iter()
                .fold(String::new(), |mut line, (test, why)| {
                    let _ = write!(line, "; `{test}` {why}");
                    line
                });
            format!(
                "tiers {pin}: first tokens on {} border inputs (found among {} candidates in {} one-token calls; {} per audit); {logprobs}{off}",
                tier.inputs.len(),
                tier.discovery.candidates,
                tier.discovery.calls,
                tier.inputs.len() as u64 * u64::from(samples),
            )
        }
        None => format!(
            "tiers {pin}: no first-token tier: {}",
            missing("first_tokens").unwrap_or("not recorded")
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::audit::{CallRecord, CallResult};
    use crate::provider::FirstToken;

    fn reply(token: &str, top: &[(&str, f64)]) -> Reply {
        Reply {
            text: token.to_owned(),
            first_token: (!top.is_empty()).then(|| {
                Box::new(FirstToken {
                    sampled: token.to_owned(),
                    top: top.iter().map(|(t, p)| ((*t).to_owned(), p.ln())).collect(),
                    listed: top.len(),
                    ..FirstToken::default()
                })
            }),
            ..Reply::default()
        }
    }

    fn observation(calls: &[(&str, Reply)]) -> Observation {
        Observation::complete(
            "pin",
            calls
                .iter()
                .enumerate()
                .map(|(i, (probe, r))| CallRecord {
                    probe: (*probe).to_owned(),
                    kind: CallKind::Tier,
                    sample: i as u32,
                    result: CallResult::Reply(r.clone()),
                    latency: Duration::ZERO,
                    attempts: 1,
                    waits: Vec::new(),
                    stopped: None,
                })
                .collect(),
        )
    }

    fn calls(prompts: &[&str], logprobs: bool) -> TierCalls {
        TierCalls {
            probes: prompts.iter().map(|p| tier_probe(None, p)).collect(),
            samples: DISCOVERY_SAMPLES,
            top_logprobs: logprobs.then_some(TOP_LOGPROBS),
        }
    }

    #[test]
    fn tier_probes_are_named_by_what_they_send() {
        let a = tier_probe(None, "Name a color.");
        assert_eq!(a.id, tier_probe(None, "Name a color.").id);
        assert_ne!(a.id, tier_probe(Some("Be terse."), "Name a color.").id);
        assert_ne!(a.id, tier_probe(None, "Name a colour.").id);
        assert!(a.id.starts_with(PREFIX), "{}", a.id);
        assert_eq!((a.max_tokens, a.temperature), (1, 1.0));
        assert_eq!(a.digest, probe_digest(None, "Name a color.", 1, 1.0));
    }

    #[test]
    fn logprobs_are_asked_only_where_the_wire_format_has_them() {
        let table = [
            (ProviderKind::OpenAi, true),
            (ProviderKind::OpenAiCompatible, true),
            (ProviderKind::OpenRouter, true),
            (ProviderKind::Azure, true),
            (ProviderKind::Anthropic, false),
            (ProviderKind::Gemini, false),
        ];
        for (kind, wanted) in table {
            assert_eq!(speaks_logprobs(kind), wanted, "{kind}");
        }
    }

    #[test]
    fn with_logprobs_the_most_uncertain_inputs_are_kept_and_decided_ones_never() {
        let plan = calls(&["wide", "tied", "decided"], true);
        let [wide, tied, decided] = [0, 1, 2].map(|i| plan.probes[i].id.clone());
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push((
                wide.as_str(),
                reply("a", &[("a", 0.4), ("b", 0.3), ("c", 0.2), ("d", 0.1)]),
            ));
            seen.push((
                tied.as_str(),
                reply("x", &[("x", 0.45), ("y", 0.45), ("z", 0.1)]),
            ));
            seen.push((decided.as_str(), reply("z", &[("z", 0.99), ("w", 0.01)])));
        }
        let found = select(&plan, &observation(&seen));
        let kept: Vec<&str> = found.kept.iter().map(|p| p.prompt.as_str()).collect();
        assert_eq!(kept, ["wide", "tied"]);
        assert!(found.logprobs && found.no_logprobs.is_none() && found.no_inputs.is_none());
        assert_eq!(
            found.discovery,
            Discovery {
                candidates: 3,
                calls: 12
            }
        );
    }

    #[test]
    fn without_logprobs_inputs_whose_tokens_varied_are_kept() {
        let plan = calls(&["varied", "same"], false);
        let [varied, same] = [0, 1].map(|i| plan.probes[i].id.clone());
        let seen: Vec<(&str, Reply)> = ["a", "b", "a", "c"]
            .iter()
            .map(|t| (varied.as_str(), reply(t, &[])))
            .chain((0..4).map(|_| (same.as_str(), reply("s", &[]))))
            .collect();
        let found = select(&plan, &observation(&seen));
        assert_eq!(found.kept.len(), 1);
        assert_eq!(found.kept[0].prompt, "varied");
        assert!(!found.logprobs);
        assert_eq!(
            found.no_logprobs.as_deref(),
            Some("no logprobs in this provider's API")
        );
    }

    #[test]
    fn discovery_that_finds_nothing_says_why() {
        let plan = calls(&["same"], true);
        let id = plan.probes[0].id.clone();
        let seen: Vec<(&str, Reply)> = (0..4).map(|_| (id.as_str(), reply("s", &[]))).collect();
        let found = select(&plan, &observation(&seen));
        assert!(found.kept.is_empty());
        assert!(found.no_inputs.unwrap().starts_with("no border input"));
        assert_eq!(
            found.no_logprobs.as_deref(),
            Some("the provider returned no logprobs when asked")
        );
        let none = select(&plan, &observation(&[]));
        assert_eq!(
            none.no_inputs.as_deref(),
            Some("no discovery call was answered; lock again")
        );
        assert!(baseline_calls(&none).is_none());
    }

    #[test]
    fn a_provider_that_never_returns_a_listed_token_has_no_sampling_test() {
        let plan = calls(&["wide"], true);
        let id = plan.probes[0].id.clone();
        let top = [("a", 0.4), ("b", 0.3), ("c", 0.2), ("d", 0.1)];
        let first: Vec<(&str, Reply)> = (0..4).map(|_| (id.as_str(), reply("a", &top))).collect();
        let found = select(&plan, &observation(&first));
        let baseline = |token: &'static str| -> Vec<(&str, Reply)> {
            ["a", "b", token]
                .iter()
                .cycle()
                .take(BASELINE_SAMPLES as usize)
                .map(|t| (id.as_str(), reply(t, &top)))
                .collect()
        };
        // Every third call draws `q`, never listed though the list leaves it 0.1 (with `d` cut
        // as the k-th entry): a third outside where a tenth is expected.
        let blind = record(&found, &observation(&baseline("q")), 0.001).unwrap();
        let why = &blind.off[TestKind::Sampling.as_str()];
        let outside = BASELINE_SAMPLES / 3;
        assert!(
            why.contains(&format!(
                "outside the listed tokens in {outside} of the lock's {BASELINE_SAMPLES} calls"
            )),
            "{why}"
        );
        let room = f64::from(BASELINE_SAMPLES) * 0.1;
        assert!(why.contains(&format!("room for {room:.1}")), "{why}");
        // Drawing `c` instead stays inside: the test stays on.
        let seeing = record(&found, &observation(&baseline("c")), 0.001).unwrap();
        assert!(
            !seeing.off.contains_key(TestKind::Sampling.as_str()),
            "{:?}",
            seeing.off
        );
    }

    #[test]
    fn logprobs_that_are_no_distribution_are_named_when_nothing_is_kept() {
        let plan = calls(&["one", "two"], true);
        let ids = [0, 1].map(|i| plan.probes[i].id.clone());
        // Six listed tokens whose probabilities add up to 5.9.
        let top = [
            ("s", 0.99),
            ("t", 0.99),
            ("u", 0.98),
            ("v", 0.98),
            ("w", 0.98),
            ("x", 0.98),
        ];
        let seen: Vec<(&str, Reply)> = ids
            .iter()
            .flat_map(|id| (0..4).map(move |_| (id.as_str(), reply("s", &top))))
            .collect();
        let found = select(&plan, &observation(&seen));
        assert!(!found.logprobs && found.kept.is_empty());
        let why = found.no_logprobs.unwrap();
        assert!(why.contains("no distribution on 8 of 8 calls"), "{why}");
        let none = found.no_inputs.unwrap();
        assert!(
            none.contains("judged by the returned tokens alone"),
            "{none}"
        );
        assert!(none.contains("no distribution"), "{none}");
    }

    #[test]
    fn the_lock_holds_the_baseline_round_and_the_audit_runs_three_tests_with_logprobs() {
        let plan = calls(&["wide"], true);
        let id = plan.probes[0].id.clone();
        let top = [("a", 0.4), ("b", 0.3), ("c", 0.2), ("d", 0.1)];
        let first: Vec<(&str, Reply)> = (0..4).map(|_| (id.as_str(), reply("a", &top))).collect();
        let found = select(&plan, &observation(&first));
        let more = baseline_calls(&found).unwrap();
        assert_eq!(more.samples, BASELINE_SAMPLES);
        let rest: Vec<(&str, Reply)> = ["b", "c", "a"]
            .iter()
            .cycle()
            .take(BASELINE_SAMPLES as usize)
            .map(|t| (id.as_str(), reply(t, &top)))
            .collect();
        let tier = record(&found, &observation(&rest), 0.001).unwrap();
        let input = &tier.inputs[&id];
        let recorded = BASELINE_SAMPLES as usize;
        assert_eq!((input.tokens.len(), input.top.len()), (recorded, recorded));
        assert_eq!(tier.top_logprobs, TOP_LOGPROBS);
        assert!(tier.off.is_empty(), "{:?}", tier.off);
        let now: Vec<(&str, Reply)> = ["a", "b", "c", "d"]
            .iter()
            .cycle()
            .take(crate::config::DEFAULT_FIRST_TOKEN_SAMPLES as usize)
            .map(|t| (id.as_str(), reply(t, &top)))
            .collect();
        let budget = PermutationBudget::resolving(1e-4);
        let run = tests(&tier, &observation(&now), budget, 7);
        let kinds: Vec<_> = run.iter().map(|t| t.result.test).collect();
        assert_eq!(
            kinds,
            [
                TestKind::FirstTokens,
                TestKind::Logprobs,
                TestKind::Sampling
            ]
        );
        assert!(run.iter().all(|t| t.probes == [id.clone()]));
        assert!(tests(&tier, &observation(&[]), budget, 7).is_empty());
    }
}

#[cfg(test)]
#[path = "conventions_tests.rs"]
mod conventions;
