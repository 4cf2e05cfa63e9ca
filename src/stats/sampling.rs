//! Sampling against reported probabilities: does the provider sample the distribution it says?
//!
//! Asked at temperature 1 for one token with `top_logprobs`, an honest provider draws the first
//! token from exactly the probabilities it reports. A provider that silently lowers the
//! temperature (or truncates with `top_p`/`top_k`) draws the likely tokens more often than
//! reported; the logprobs alone cannot show it, since they are reported before sampling. This
//! test needs no baseline: the null is the reported distribution itself.
//!
//! Conditional on the sampled token being among the reported top k, an honest draw follows the
//! top-k probabilities renormalised, and a draw at inverse temperature β follows them raised to
//! β and renormalised. The score of β at 1 — Σ over calls of log p(sampled) minus its expectation
//! — is the locally most powerful statistic against any change of temperature; its null
//! distribution is simulated by drawing from the reported distributions (exact Monte-Carlo
//! p-value, two-sided on |score|). Calls whose sampled token is outside the top k are left out
//! (their share is in the evidence).

use serde::Serialize;

use super::logprob::TopLogprobs;
use super::permutation::{PermutationBudget, sequential_p};
use super::rng::{Rng, derive_seed};
use super::{Calibration, Effect, TestKind, TestResult};

/// One call: what the provider reported for the first token, and which token it returned.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledToken<'a> {
    pub top: &'a TopLogprobs,
    pub sampled: &'a str,
}

/// What the calls show, in words a person reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingSummary {
    pub calls: usize,
    /// Calls whose sampled token was among the reported top tokens (the ones tested).
    pub in_top: usize,
    /// How often the most probable reported token was sampled, and how often it should be.
    pub top_sampled: f64,
    pub top_expected: f64,
    /// The temperature that best explains the draws (1 = as asked), within [0.1, 10].
    pub implied_temperature: f64,
}

/// A tested call: the renormalised top-k probabilities and the sampled token's position.
struct Draw {
    p: Vec<f64>,
    log_p: Vec<f64>,
    /// E[log p] under p: the score's centre.
    centre: f64,
    sampled: usize,
}

impl Draw {
    fn new(call: &SampledToken<'_>) -> Option<Draw> {
        let finite: Vec<&(String, f64)> =
            call.top.iter().filter(|(_, lp)| lp.is_finite()).collect();
        let sampled = finite.iter().position(|(t, _)| t == call.sampled)?;
        let max = finite
            .iter()
            .map(|(_, lp)| *lp)
            .fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = finite.iter().map(|(_, lp)| (lp - max).exp()).collect();
        let total: f64 = weights.iter().sum();
        let p: Vec<f64> = weights.iter().map(|w| w / total).collect();
        let log_p: Vec<f64> = p.iter().map(|x| x.ln()).collect();
        let centre = p.iter().zip(&log_p).map(|(a, b)| a * b).sum();
        Some(Draw {
            p,
            log_p,
            centre,
            sampled,
        })
    }

    fn score(&self, token: usize) -> f64 {
        self.log_p[token] - self.centre
    }

    fn draw(&self, rng: &mut Rng) -> usize {
        let mut u = rng.next_f64();
        for (i, p) in self.p.iter().enumerate() {
            if u < *p {
                return i;
            }
            u -= p;
        }
        self.p.len() - 1
    }

    fn top(&self) -> usize {
        self.p
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(i, _)| i)
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

/// Tests whether the sampled first tokens follow the probabilities reported with them.
#[must_use]
pub fn sampling(calls: &[SampledToken<'_>], budget: PermutationBudget, seed: u64) -> TestResult {
    let draws: Vec<Draw> = calls.iter().filter_map(Draw::new).collect();
    let summary = summary(calls.len(), &draws);
    let informative = draws.iter().any(|d| d.p.len() > 1);
    if !informative {
        return TestResult {
            test: TestKind::Sampling,
            statistic: 0.0,
            p_value: 1.0,
            calibration: Calibration::NoEvidence,
            effect: Effect::Sampling(summary),
        };
    }
    let observed: f64 = draws.iter().map(|d| d.score(d.sampled)).sum::<f64>().abs();
    let (p_value, calibration) = sequential_p(
        observed,
        budget,
        derive_seed(seed, 0x5A3B),
        |rng: &mut Rng| {
            draws
                .iter()
                .map(|d| d.score(d.draw(rng)))
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

fn summary(calls: usize, draws: &[Draw]) -> SamplingSummary {
    let n = draws.len().max(1) as f64;
    let top_sampled = draws.iter().filter(|d| d.sampled == d.top()).count() as f64 / n;
    let top_expected = draws.iter().map(|d| d.p[d.top()]).sum::<f64>() / n;
    SamplingSummary {
        calls,
        in_top: draws.len(),
        top_sampled: round4(top_sampled),
        top_expected: round4(top_expected),
        implied_temperature: round4(1.0 / implied_beta(draws)),
    }
}

/// The inverse temperature at which the draws' total score is zero (the maximum-likelihood β),
/// by bisection on [0.1, 10]: the score falls as β grows.
fn implied_beta(draws: &[Draw]) -> f64 {
    let score = |beta: f64| draws.iter().map(|d| d.score_at(beta)).sum::<f64>();
    let (mut lo, mut hi) = (0.1f64, 10.0f64);
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

    /// Reported top-4 for a prompt whose first token is spread over four candidates.
    fn reported() -> TopLogprobs {
        [("a", 0.4f64), ("b", 0.3), ("c", 0.2), ("d", 0.1)]
            .iter()
            .map(|(t, p)| ((*t).to_owned(), p.ln()))
            .collect()
    }

    /// Draws `n` tokens from `reported()` at temperature `t`.
    fn sampled(rng: &mut Rng, t: f64, n: usize) -> Vec<&'static str> {
        let names = ["a", "b", "c", "d"];
        let w: Vec<f64> = [0.4f64, 0.3, 0.2, 0.1]
            .iter()
            .map(|p| p.powf(1.0 / t))
            .collect();
        let total: f64 = w.iter().sum();
        (0..n)
            .map(|_| {
                let mut u = rng.next_f64() * total;
                for (i, x) in w.iter().enumerate() {
                    if u < *x {
                        return names[i];
                    }
                    u -= x;
                }
                names[3]
            })
            .collect()
    }

    fn audit(seed: u64, temperature: f64, n: usize) -> TestResult {
        let top = reported();
        let mut rng = Rng::new(seed);
        let tokens = sampled(&mut rng, temperature, n);
        let calls: Vec<SampledToken<'_>> = tokens
            .iter()
            .map(|t| SampledToken {
                top: &top,
                sampled: t,
            })
            .collect();
        sampling(&calls, PermutationBudget::resolving(0.001), seed)
    }

    #[test]
    fn honest_sampling_raises_false_alarms_at_the_level_only() {
        let runs = 300u32;
        let hits = (0..runs)
            .filter(|&s| audit(u64::from(s), 1.0, 80).p_value <= 0.05)
            .count();
        crate::stats::assert_false_alarms_at_level(hits, runs);
    }

    #[test]
    fn a_lowered_temperature_is_seen_and_estimated() {
        let hits = (0..20u64)
            .filter(|&s| audit(s, 0.5, 300).p_value <= 0.001)
            .count();
        assert!(hits >= 18, "{hits} of 20");
        let Effect::Sampling(summary) = audit(1, 0.5, 2000).effect else {
            panic!()
        };
        assert!(
            (summary.implied_temperature - 0.5).abs() < 0.08,
            "{summary:?}"
        );
        assert!(summary.top_sampled > summary.top_expected);
    }

    #[test]
    fn tokens_outside_the_reported_top_are_left_out() {
        let top = reported();
        let calls = [
            SampledToken {
                top: &top,
                sampled: "zzz",
            },
            SampledToken {
                top: &top,
                sampled: "a",
            },
        ];
        let Effect::Sampling(summary) = sampling(&calls, PermutationBudget::CLASSIC, 1).effect
        else {
            panic!()
        };
        assert_eq!((summary.calls, summary.in_top), (2, 1));
    }
}
