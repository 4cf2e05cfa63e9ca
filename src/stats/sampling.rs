//! Sampling against reported probabilities: does the provider sample as it did at the lock?
//!
//! Asked at temperature 1 for one token with `top_logprobs`, a provider draws the first token
//! from some distribution and reports the model's probabilities beside it. A provider that
//! silently lowers the temperature (or truncates with `top_p`/`top_k`) draws the likely tokens
//! more often than before; the logprobs alone cannot show it, since they are reported before
//! sampling.
//!
//! No real stack samples exactly what it reports: llama.cpp's server truncates with its own
//! `top_k`/`top_p`/`min_p` defaults and reports the untruncated distribution; others report
//! after temperature. Such a property is constant for a provider, so the test compares how the
//! provider samples now with how it sampled at the lock, never with an ideal.
//!
//! Each call is scored by the score of the inverse temperature at 1: log q(sampled) minus its
//! expectation under q, where q is the reported distribution over the tested tokens (the top
//! ones, a set no draw can change; see `logprob::Reported`) and one outcome for "sampled outside
//! them". That score is the locally most powerful statistic against a change of temperature.
//! The test is a two-sample permutation test stratified by input: the difference of mean
//! scores, now against the lock, weighted by n₀n₁/(n₀+n₁) and summed over inputs, two-sided,
//! with calls permuted between the lock and now within each input.

use serde::Serialize;

use super::logprob::Reported;
use super::permutation::{PermutationBudget, sequential_p};
use super::rng::{Rng, derive_seed};
use super::{Calibration, Effect, TestKind, TestResult};

/// The smallest probability "outside the tested tokens" is given, so its log stays finite when
/// the listed tokens carry (nearly) all the mass.
const OUTSIDE_FLOOR: f64 = 1e-6;

/// One input's calls at the lock and in this audit.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingInput<'a> {
    pub baseline: Vec<&'a Reported>,
    pub current: Vec<&'a Reported>,
}

/// How one side sampled, in words a person reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideSummary {
    /// Calls tested (with usable logprobs).
    pub calls: usize,
    /// How often the most probable reported token was sampled, and how often it would be if
    /// the provider sampled what it reports.
    pub top_sampled: f64,
    pub top_expected: f64,
    /// Share of draws outside the tested tokens.
    pub outside: f64,
    /// The temperature that best explains the draws against the reported probabilities (1 = as
    /// reported), within [0.1, 10].
    pub implied_temperature: f64,
}

/// Both sides: a change shows as the current side moving away from the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingSummary {
    pub baseline: SideSummary,
    pub current: SideSummary,
}

/// A tested call: the reported distribution over the tested tokens and "outside", and the
/// outcome drawn.
struct Draw {
    p: Vec<f64>,
    log_p: Vec<f64>,
    /// E[log q] under q: the score's centre.
    centre: f64,
    sampled: usize,
}

impl Draw {
    /// `None` for a call with no tested token.
    fn new(call: &Reported) -> Option<Draw> {
        if call.top.is_empty() {
            return None;
        }
        let mut p: Vec<f64> = call.top.iter().map(|(_, lp)| lp.exp()).collect();
        let listed: f64 = p.iter().sum();
        p.push((1.0 - listed).max(OUTSIDE_FLOOR));
        let total: f64 = p.iter().sum();
        for x in &mut p {
            *x /= total;
        }
        let log_p: Vec<f64> = p.iter().map(|x| x.ln()).collect();
        let centre = p.iter().zip(&log_p).map(|(a, b)| a * b).sum();
        Some(Draw {
            sampled: call.sampled.unwrap_or(p.len() - 1),
            p,
            log_p,
            centre,
        })
    }

    fn score(&self) -> f64 {
        self.log_p[self.sampled] - self.centre
    }

    fn outside(&self) -> bool {
        self.sampled == self.p.len() - 1
    }

    /// The score of inverse temperature `beta` for this draw.
    fn score_at(&self, beta: f64) -> f64 {
        let max = self.log_p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = self
            .log_p
            .iter()
            .map(|l| ((l - max) * beta).exp())
            .collect();
        let total: f64 = w.iter().sum();
        let expected: f64 = w.iter().zip(&self.log_p).map(|(w, l)| w * l).sum::<f64>() / total;
        self.log_p[self.sampled] - expected
    }
}

/// One input's scores, baseline rows first.
struct Stratum {
    scores: Vec<f64>,
    n0: usize,
    total: f64,
    weight: f64,
}

impl Stratum {
    fn new(baseline: &[Draw], current: &[Draw]) -> Option<Stratum> {
        if baseline.is_empty() || current.is_empty() {
            return None;
        }
        let scores: Vec<f64> = baseline.iter().chain(current).map(Draw::score).collect();
        let (n0, n1) = (baseline.len() as f64, current.len() as f64);
        Some(Stratum {
            total: scores.iter().sum(),
            n0: baseline.len(),
            weight: n0 * n1 / (n0 + n1),
            scores,
        })
    }

    fn n1(&self) -> usize {
        self.scores.len() - self.n0
    }

    /// The weighted difference of means when the current rows' scores sum to `current`.
    fn difference(&self, current: f64) -> f64 {
        let mean1 = current / self.n1() as f64;
        let mean0 = (self.total - current) / self.n0 as f64;
        self.weight * (mean1 - mean0)
    }
}

/// Tests whether the provider samples its reported first-token distributions as it did at the
/// lock.
#[must_use]
pub fn sampling(inputs: &[SamplingInput<'_>], budget: PermutationBudget, seed: u64) -> TestResult {
    let draws: Vec<(Vec<Draw>, Vec<Draw>)> = inputs
        .iter()
        .map(|i| {
            let side = |calls: &[&Reported]| calls.iter().filter_map(|c| Draw::new(c)).collect();
            (side(&i.baseline), side(&i.current))
        })
        .collect();
    let summary = SamplingSummary {
        baseline: summarise(draws.iter().flat_map(|(b, _)| b)),
        current: summarise(draws.iter().flat_map(|(_, c)| c)),
    };
    let strata: Vec<Stratum> = draws
        .iter()
        .filter_map(|(b, c)| Stratum::new(b, c))
        .filter(|s| s.scores.iter().any(|x| (x - s.scores[0]).abs() > 1e-12))
        .collect();
    if strata.is_empty() {
        return TestResult {
            test: TestKind::Sampling,
            statistic: 0.0,
            p_value: 1.0,
            calibration: Calibration::NoEvidence,
            effect: Effect::Sampling(summary),
        };
    }
    let observed: f64 = strata
        .iter()
        .map(|s| s.difference(s.scores[s.n0..].iter().sum()))
        .sum::<f64>()
        .abs();
    let mut orders: Vec<Vec<usize>> = strata
        .iter()
        .map(|s| (0..s.scores.len()).collect())
        .collect();
    let (p_value, calibration) = sequential_p(
        observed,
        budget,
        derive_seed(seed, 0x5A3B),
        |rng: &mut Rng| {
            strata
                .iter()
                .zip(&mut orders)
                .map(|(s, order)| {
                    rng.choose_front(order, s.n1());
                    s.difference(order[..s.n1()].iter().map(|&i| s.scores[i]).sum())
                })
                .sum::<f64>()
                .abs()
        },
    );
    TestResult {
        test: TestKind::Sampling,
        statistic: observed,
        p_value,
        calibration,
        effect: Effect::Sampling(summary),
    }
}

/// How `calls` sampled against the probabilities they report.
#[must_use]
pub fn side_summary<'a>(calls: impl Iterator<Item = &'a Reported>) -> SideSummary {
    let draws: Vec<Draw> = calls.filter_map(Draw::new).collect();
    summarise(draws.iter())
}

fn summarise<'a>(draws: impl Iterator<Item = &'a Draw>) -> SideSummary {
    let draws: Vec<&Draw> = draws.collect();
    let n = draws.len().max(1) as f64;
    let top = |d: &Draw| {
        d.p[..d.p.len() - 1]
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(i, _)| i)
    };
    SideSummary {
        calls: draws.len(),
        top_sampled: round4(draws.iter().filter(|d| d.sampled == top(d)).count() as f64 / n),
        top_expected: round4(draws.iter().map(|d| d.p[top(d)]).sum::<f64>() / n),
        outside: round4(draws.iter().filter(|d| d.outside()).count() as f64 / n),
        implied_temperature: round4(1.0 / implied_beta(&draws)),
    }
}

/// The inverse temperature at which the draws' total score is zero (the maximum-likelihood β),
/// by bisection on [0.1, 10]: the score falls as β grows.
fn implied_beta(draws: &[&Draw]) -> f64 {
    let score = |beta: f64| draws.iter().map(|d| d.score_at(beta)).sum::<f64>();
    let (mut lo, mut hi) = (0.1f64, 10.0f64);
    if draws.is_empty() {
        return 1.0;
    }
    if score(lo) <= 0.0 {
        return lo;
    }
    if score(hi) >= 0.0 {
        return hi;
    }
    for _ in 0..60 {
        let mid = (lo * hi).sqrt();
        if score(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo * hi).sqrt()
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model's first-token distribution; the tests see its top 3 and "outside".
    const MODEL: [(&str, f64); 5] = [("a", 0.4), ("b", 0.3), ("c", 0.15), ("d", 0.1), ("e", 0.05)];

    /// What a call reports: the top 3, and where the draw fell.
    fn call(sampled: &str) -> Reported {
        let top: Vec<(String, f64)> = MODEL[..3]
            .iter()
            .map(|(t, p)| ((*t).to_owned(), p.ln()))
            .collect();
        let sampled = top.iter().position(|(t, _)| t == sampled);
        Reported { top, sampled }
    }

    /// `n` draws from the model at temperature `t`, cut by `keep` (a truncating sampler keeps
    /// the `keep` most probable tokens).
    fn draws(rng: &mut Rng, t: f64, keep: usize, n: usize) -> Vec<Reported> {
        let w: Vec<f64> = MODEL[..keep].iter().map(|(_, p)| p.powf(1.0 / t)).collect();
        let total: f64 = w.iter().sum();
        (0..n)
            .map(|_| {
                let mut u = rng.next_f64() * total;
                for (i, x) in w.iter().enumerate() {
                    if u < *x {
                        return call(MODEL[i].0);
                    }
                    u -= x;
                }
                call(MODEL[keep - 1].0)
            })
            .collect()
    }

    /// Eight inputs, 160 calls each at the lock and 32 now (the defaults).
    fn audit(seed: u64, before: (f64, usize), now: (f64, usize)) -> TestResult {
        let mut rng = Rng::new(seed);
        let sides: Vec<(Vec<Reported>, Vec<Reported>)> = (0..8)
            .map(|_| {
                let b = draws(&mut rng, before.0, before.1, 160);
                (b, draws(&mut rng, now.0, now.1, 32))
            })
            .collect();
        let inputs: Vec<SamplingInput<'_>> = sides
            .iter()
            .map(|(b, c)| SamplingInput {
                baseline: b.iter().collect(),
                current: c.iter().collect(),
            })
            .collect();
        sampling(&inputs, PermutationBudget::resolving(0.001), seed)
    }

    #[test]
    fn an_unchanged_sampler_raises_false_alarms_at_the_level_only() {
        // Honest, and a sampler that truncates what it reports (as llama.cpp's server does):
        // constant properties of the provider, never read as change.
        for sampler in [(1.0, 5), (1.0, 3), (0.8, 4)] {
            let runs = 300u32;
            let hits = (0..runs)
                .filter(|&s| audit(u64::from(s), sampler, sampler).p_value <= 0.05)
                .count();
            crate::stats::assert_false_alarms_at_level(hits, runs);
        }
    }

    #[test]
    fn a_lowered_temperature_is_seen_against_the_lock() {
        for keep in [5, 3] {
            let hits = (0..20u64)
                .filter(|&s| audit(s, (1.0, keep), (0.4, keep)).p_value <= 0.001)
                .count();
            assert!(hits >= 18, "keep {keep}: {hits} of 20");
        }
        let Effect::Sampling(summary) = audit(1, (1.0, 5), (0.5, 5)).effect else {
            panic!()
        };
        assert!(summary.current.top_sampled > summary.baseline.top_sampled);
        assert!(
            summary.current.implied_temperature < summary.baseline.implied_temperature,
            "{summary:?}"
        );
    }

    #[test]
    fn draws_outside_the_tested_tokens_are_an_outcome_of_their_own() {
        let inside = call("a");
        let outside = call("e");
        assert_eq!((inside.sampled, outside.sampled), (Some(0), None));
        let calls = [&outside, &inside, &outside];
        let input = SamplingInput {
            baseline: calls.to_vec(),
            current: calls.to_vec(),
        };
        let Effect::Sampling(summary) = sampling(&[input], PermutationBudget::CLASSIC, 1).effect
        else {
            panic!()
        };
        assert_eq!(summary.current.calls, 3);
        assert!(
            (summary.current.outside - 0.6667).abs() < 1e-9,
            "{summary:?}"
        );
    }

    #[test]
    fn no_evidence_without_both_sides() {
        let now = call("a");
        let input = SamplingInput {
            baseline: Vec::new(),
            current: vec![&now],
        };
        let result = sampling(&[input], PermutationBudget::CLASSIC, 1);
        assert_eq!(result.calibration, Calibration::NoEvidence);
    }
}
