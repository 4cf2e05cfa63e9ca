//! The decision the auditor asks for: did this pin's behaviour drift from its baseline?
//!
//! Each probe contributes the tests that fit it: a `choice` probe its categorical answers, a
//! `text` probe its completion lengths, and any probe with an `[expect]` rule its pass rate.
//! On top, one kernel MMD reads the answers of *every* probe as strings, each probe a stratum
//! (Gao et al.'s prompt-masked design): it is the pin's wording test for free text, and it is
//! what catches a wholesale swap in a handful of calls. A per-probe exact test cannot: with 30
//! baseline answers and 2 new ones its p-value never drops below 1/C(32, 2) = 0.002, while the
//! stratified test's floor is the product over probes. Holm over all of a pin's tests that can
//! reject at these sample sizes (`detectability::family`) holds the chance of a false alarm for
//! the pin at α per audit, whatever the dependence between tests that read the same answers.
//! Tests that cannot reject still run, as evidence. Permutation budgets are sized so that
//! p-values down to the strictest Holm threshold are resolvable.

use serde::Serialize;

use super::detectability::{family, floor};
use super::expect::{Compare, Expect, Normalize};
use super::expect::{Expectation, normalized};
use super::fisher::{Rate, fisher_pass_rate};
use super::holm::weighted_holm;
use super::mann_whitney::mann_whitney;
use super::mmd::{Kernel, Stratum, text_mmd};
use super::permutation::PermutationBudget;
use super::rng::{Rng, derive_seed, fnv1a};
use super::{TestKind, TestResult, answers_homogeneity};

/// What one probe answered when the baseline was recorded and in this audit.
#[derive(Debug, Clone)]
pub struct ProbeSamples {
    pub probe_id: String,
    pub compare: Compare,
    pub expect: Option<Expect>,
    pub normalize: Vec<Normalize>,
    pub baseline: Samples,
    pub current: Samples,
}

/// Raw answers and their `completion_tokens` (empty when the provider reports none).
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub outputs: Vec<String>,
    pub lengths: Vec<u64>,
}

/// The verdict for a pin: every test with raw and Holm-adjusted p-values and what moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftVerdict {
    /// Family-wise false-alarm rate the tests were held to.
    pub alpha: f64,
    /// Seed of every permutation p-value below (each test derives its own from it).
    pub seed: u64,
    /// Some test rejected after Holm.
    pub drift: bool,
    pub tests: Vec<DriftTest>,
    /// Tests a probe would have had but the data could not support.
    pub skipped: Vec<Skipped>,
    /// Probes whose answers the categorical and MMD tests read on a subsample (more than
    /// `SUBSAMPLE_PER_SIDE` on a side); absent when every answer was read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subsampled: Vec<Subsampled>,
}

/// Answers the categorical and MMD tests read per probe and side, at most. Their cost grows with
/// the square of the answers (the MMD's Gram matrix, every permutation's within-group sum), so
/// past this they read a subsample; Fisher's test and Mann–Whitney read every answer (their
/// cost is linear, or n log n for the ranks). 100 answers a side already resolve p-values far
/// below any Holm threshold (the floor is 1/C(200, 100) ≈ 10⁻⁵⁹), and keep a drifted audit's
/// full permutation budget to a fraction of a second per probe.
pub const SUBSAMPLE_PER_SIDE: usize = 100;

/// Which answers of a probe the categorical and MMD tests read, so the numbers can be
/// recomputed: the `used` positions (in sample order) of each side are the first `used` of a
/// Fisher–Yates shuffle of `0..n` by `Rng::new(seed)`, then sorted. The seed depends on the
/// probe id, the side and `n` only, never on the answers, so the permutation null on the
/// subsample is exact: under no drift its labels are as exchangeable as the full sample's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Subsampled {
    pub probe: String,
    pub baseline: SideSample,
    pub current: SideSample,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SideSample {
    pub n: usize,
    pub used: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftTest {
    /// The probes the test read (all answered ones for the MMD).
    pub probes: Vec<String>,
    #[serde(flatten)]
    pub result: TestResult,
    /// Holm-adjusted p; `None` when the sample sizes put the test's smallest possible p above
    /// its threshold, so it was left out of the Holm family (it could never reject).
    pub adjusted_p: Option<f64>,
    pub rejected: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub probes: Vec<String>,
    /// `None`: every test of the probe.
    pub test: Option<TestKind>,
    pub reason: &'static str,
}

/// A probe's answers as the tests read them: normalized, judged, lengths as numbers.
struct Read {
    id: String,
    compare: Compare,
    /// At most `SUBSAMPLE_PER_SIDE` a side (`subsample` says which, when cut).
    answers: [Vec<String>; 2],
    passes: Option<[Vec<bool>; 2]>,
    lengths: [Vec<f64>; 2],
    subsample: Option<Subsampled>,
}

/// One test to run, by index into the probes.
enum Planned {
    PassRate(usize),
    Answers(usize),
    Length(usize),
    Mmd(Vec<usize>),
}

/// A test of the first-token tier, run by the caller with the budget it is given.
#[derive(Debug, Clone, PartialEq)]
pub struct TierTest {
    /// The tier probes it read.
    pub probes: Vec<String>,
    pub result: TestResult,
}

/// The share of α the first-token tier's tests spend together when a pin has them; the text
/// tests spend the rest. Fixed before any data (weighted Holm's condition): half, because each
/// side sees changes the other cannot — the tier sees a requantization or a sampling change
/// that leaves answers readable as before, the text tests see what a user reads.
pub const TIER_SHARE: f64 = 0.5;

/// Each tier test's weight within the tier's share: the sampling test half (it alone sees a
/// changed sampler, and needs the most calls to see it), the other two a quarter each; with
/// first tokens alone (no logprobs) it takes the whole share.
fn tier_weights(tiers: &[TierTest]) -> Vec<f64> {
    let sampling = tiers.iter().any(|t| t.result.test == TestKind::Sampling);
    tiers
        .iter()
        .map(|t| match (t.result.test, sampling) {
            (TestKind::Sampling, _) => 0.5,
            (_, true) => 0.25,
            _ => 1.0 / tiers.len() as f64,
        })
        .collect()
}

/// Runs every applicable test on each probe and applies Holm across all of them at `alpha`.
#[must_use]
pub fn compare_pin(probes: &[ProbeSamples], alpha: f64, seed: u64) -> DriftVerdict {
    compare_pin_resolving(probes, |_| Vec::new(), alpha, None, seed)
}

/// `compare_pin` with the first-token tier's tests in the same family: weighted Holm, the text
/// tests sharing `1 − TIER_SHARE` of α equally and the tier's `TIER_SHARE` by `tier_weights`
/// (all of α to one side when the other has no test). `tier` runs the tier's tests with a
/// permutation budget that resolves the smallest threshold, and adjusted p-values down to
/// `resolve` as well when it is set (the daemon's own look at a late audit is far below
/// `alpha`). The verdict is at `alpha` either way; only how small a p-value can be told apart
/// changes.
#[must_use]
pub fn compare_pin_resolving(
    probes: &[ProbeSamples],
    tier: impl FnOnce(PermutationBudget) -> Vec<TierTest>,
    alpha: f64,
    resolve: Option<f64>,
    seed: u64,
) -> DriftVerdict {
    let read: Vec<Read> = probes.iter().map(Read::new).collect();
    let (plan, skipped) = plan(&read);
    let floors: Vec<f64> = plan
        .iter()
        .map(|t| floor(t.kind(), &t.sizes(&read)))
        .collect();
    let in_family = family(&floors, alpha);
    let members = in_family.iter().filter(|&&f| f).count();
    // The smallest threshold any test can meet: a text test's when the tier is absent, else the
    // smaller of a text test's and the smallest tier weight's.
    let text_level = alpha * (1.0 - TIER_SHARE) / members.max(1) as f64;
    let tier_level = alpha * TIER_SHARE * 0.25;
    // A test of weight w rejects at adjusted `resolve` when its p ≤ w · resolve: the same
    // thresholds, scaled by `resolve / alpha`.
    let deeper = resolve.map_or(1.0, |r| (r / alpha).clamp(f64::MIN_POSITIVE, 1.0));
    let budget = PermutationBudget::resolving(text_level.min(tier_level) * deeper);
    let results: Vec<TestResult> = plan.iter().map(|t| t.run(&read, budget, seed)).collect();
    let tiers = tier(budget);
    let text_weight = if tiers.is_empty() {
        1.0
    } else {
        (1.0 - TIER_SHARE) / members.max(1) as f64
    };
    let tier_share = if members == 0 { 1.0 } else { TIER_SHARE };
    let mut raw: Vec<f64> = Vec::new();
    let mut weights: Vec<f64> = Vec::new();
    for (r, member) in results.iter().zip(&in_family) {
        if *member {
            raw.push(r.p_value);
            weights.push(text_weight);
        }
    }
    for (t, w) in tiers.iter().zip(tier_weights(&tiers)) {
        raw.push(t.result.p_value);
        weights.push(tier_share * w);
    }
    let mut adjusted = weighted_holm(&raw, &weights).into_iter();
    let mut tests: Vec<DriftTest> = plan
        .iter()
        .zip(results)
        .zip(in_family)
        .map(|((t, result), member)| {
            let adjusted_p = if member { adjusted.next() } else { None };
            DriftTest {
                probes: t.probes(&read),
                result,
                rejected: adjusted_p.is_some_and(|p| p <= alpha),
                adjusted_p,
            }
        })
        .collect();
    for t in tiers {
        let adjusted_p = adjusted.next();
        tests.push(DriftTest {
            probes: t.probes,
            result: t.result,
            rejected: adjusted_p.is_some_and(|p| p <= alpha),
            adjusted_p,
        });
    }
    DriftVerdict {
        alpha,
        seed,
        drift: tests.iter().any(|t| t.rejected),
        tests,
        skipped,
        subsampled: read.into_iter().filter_map(|r| r.subsample).collect(),
    }
}

impl Read {
    fn new(p: &ProbeSamples) -> Read {
        let all = [&p.baseline, &p.current].map(|s| {
            s.outputs
                .iter()
                .map(|o| normalized(&p.normalize, o))
                .collect::<Vec<_>>()
        });
        let passes = p.expect.as_ref().map(|e| {
            let rule = Expectation::lenient(e, &p.normalize);
            [0, 1].map(|side| all[side].iter().map(|a| rule.accepts(a)).collect())
        });
        let sides = [0u64, 1].map(|side| side_sample(&p.probe_id, side, all[side as usize].len()));
        let subsample = sides.iter().any(|s| s.used < s.n).then(|| Subsampled {
            probe: p.probe_id.clone(),
            baseline: sides[0],
            current: sides[1],
        });
        let [baseline, current] = all;
        Read {
            id: p.probe_id.clone(),
            compare: p.compare,
            lengths: [&p.baseline, &p.current]
                .map(|s| s.lengths.iter().map(|&l| l as f64).collect()),
            answers: [
                subsample_of(baseline, sides[0]),
                subsample_of(current, sides[1]),
            ],
            passes,
            subsample,
        }
    }

    fn both_answered(&self) -> bool {
        self.answers.iter().all(|a| !a.is_empty())
    }
}

/// How many of a side's `n` answers the categorical and MMD tests read, and the seed choosing
/// them: from the probe id, the side and `n` alone.
fn side_sample(probe: &str, side: u64, n: usize) -> SideSample {
    let name = fnv1a(probe.as_bytes());
    SideSample {
        n,
        used: n.min(SUBSAMPLE_PER_SIDE),
        seed: derive_seed(derive_seed(name, side + 1), n as u64),
    }
}

/// The answers `side` says to read, in sample order.
fn subsample_of(answers: Vec<String>, side: SideSample) -> Vec<String> {
    if side.used >= answers.len() {
        return answers;
    }
    let mut index: Vec<usize> = (0..answers.len()).collect();
    Rng::new(side.seed).choose_front(&mut index, side.used);
    let mut chosen = index[..side.used].to_vec();
    chosen.sort_unstable();
    let mut answers: Vec<Option<String>> = answers.into_iter().map(Some).collect();
    chosen
        .into_iter()
        .filter_map(|i| answers[i].take())
        .collect()
}

/// The tests the data supports, and those it does not (with why).
fn plan(read: &[Read]) -> (Vec<Planned>, Vec<Skipped>) {
    let (mut plan, mut skipped) = (Vec::new(), Vec::new());
    let mut skip = |i: usize, test, reason| {
        skipped.push(Skipped {
            probes: vec![read[i].id.clone()],
            test,
            reason,
        });
    };
    let mut answered = Vec::new();
    for (i, r) in read.iter().enumerate() {
        if !r.both_answered() {
            skip(i, None, "no answers on one side");
            continue;
        }
        answered.push(i);
        if r.passes.is_some() {
            plan.push(Planned::PassRate(i));
        }
        match r.compare {
            Compare::Choice => plan.push(Planned::Answers(i)),
            Compare::Text => {
                if r.lengths.iter().all(|l| !l.is_empty()) {
                    plan.push(Planned::Length(i));
                } else {
                    skip(i, Some(TestKind::Length), "completion_tokens not reported");
                }
            }
        }
    }
    if !answered.is_empty() {
        plan.push(Planned::Mmd(answered));
    }
    (plan, skipped)
}

impl Planned {
    fn kind(&self) -> TestKind {
        match self {
            Planned::PassRate(_) => TestKind::PassRate,
            Planned::Answers(_) => TestKind::Answers,
            Planned::Length(_) => TestKind::Length,
            Planned::Mmd(_) => TestKind::Mmd,
        }
    }

    /// (baseline, current) sample sizes per probe the test reads.
    fn sizes(&self, read: &[Read]) -> Vec<(u64, u64)> {
        let pair = |a: usize, b: usize| (a as u64, b as u64);
        match self {
            Planned::PassRate(i) => {
                let [b, c] = read[*i].passes.as_ref().expect("planned with passes");
                vec![pair(b.len(), c.len())]
            }
            Planned::Answers(i) => {
                let [b, c] = &read[*i].answers;
                vec![pair(b.len(), c.len())]
            }
            Planned::Length(i) => {
                let [b, c] = &read[*i].lengths;
                vec![pair(b.len(), c.len())]
            }
            Planned::Mmd(is) => is
                .iter()
                .map(|&i| pair(read[i].answers[0].len(), read[i].answers[1].len()))
                .collect(),
        }
    }

    fn probes(&self, read: &[Read]) -> Vec<String> {
        match self {
            Planned::PassRate(i) | Planned::Answers(i) | Planned::Length(i) => {
                vec![read[*i].id.clone()]
            }
            Planned::Mmd(is) => is.iter().map(|&i| read[i].id.clone()).collect(),
        }
    }

    /// A per-test seed derived from the pin's seed, the test kind and its first probe, so
    /// adding or removing a probe does not change another test's permutations.
    fn seed(&self, read: &[Read], seed: u64) -> u64 {
        let (tag, first) = match self {
            Planned::PassRate(i) => (1, *i),
            Planned::Answers(i) => (2, *i),
            Planned::Length(i) => (3, *i),
            Planned::Mmd(is) => (4, is[0]),
        };
        let name = fnv1a(read[first].id.as_bytes());
        derive_seed(seed, name ^ tag)
    }

    fn run(&self, read: &[Read], budget: PermutationBudget, seed: u64) -> TestResult {
        let seed = self.seed(read, seed);
        match self {
            Planned::PassRate(i) => {
                let [b, c] = read[*i].passes.as_ref().expect("planned with passes");
                fisher_pass_rate(Rate::of(b), Rate::of(c))
            }
            Planned::Answers(i) => {
                let [b, c] = &read[*i].answers;
                answers_homogeneity(b, c, budget, seed)
            }
            Planned::Length(i) => {
                let [b, c] = &read[*i].lengths;
                mann_whitney(b, c)
            }
            Planned::Mmd(is) => {
                let strata: Vec<Stratum<'_>> = is
                    .iter()
                    .map(|&i| Stratum {
                        id: &read[i].id,
                        baseline: &read[i].answers[0],
                        current: &read[i].answers[1],
                    })
                    .collect();
                text_mmd(&strata, Kernel::DEFAULT, budget, seed)
            }
        }
    }
}

#[cfg(test)]
mod tests;
