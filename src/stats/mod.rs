//! Behavioural drift statistics: is today's sample of a pin's answers drawn from the same
//! distribution as the baseline recorded in `modelpin.lock`?
//!
//! A silently swapped model keeps the ID but not the behaviour. Tier-0 signals (served ID,
//! `prompt_tokens`) catch cross-family swaps deterministically; this module covers the noisy rest
//! with tests whose false-alarm rate is controlled exactly: Fisher's exact test on pass rates, a
//! homogeneity test on categorical answers, Mann–Whitney on completion lengths and a
//! probe-stratified kernel MMD on the answers as strings, combined per pin with Holm
//! (`drift::compare_pin`). `minimum_detectable` tells at lock time whether a baseline is large
//! enough for any of them to ever reject. Everything here is pure and deterministic given a seed,
//! so every alert can be recomputed from its evidence. Each test cites its reference values in its
//! own tests; the detection benchmark (`bench/detection`, results in BENCHMARKS.md) scores them
//! against the Neyman–Pearson oracle.

mod categorical;
mod detectability;
pub mod drift;
pub mod expect;
pub mod first_token;
mod fisher;
mod holm;
pub mod logprob;
mod mann_whitney;
mod mmd;
mod permutation;
pub mod rng;
pub mod sampling;
pub mod sequential;

use serde::{Deserialize, Serialize};

pub use categorical::{AnswerShare, answers_homogeneity};
pub use detectability::{
    Detectability, PlannedProbe, TestReach, family, floor, minimum_detectable, required_baseline,
};
pub use drift::{
    DriftTest, DriftVerdict, ProbeSamples, SUBSAMPLE_PER_SIDE, Samples, SideSample, Skipped,
    Subsampled, compare_pin,
};
pub use expect::{Expectation, normalized, passes};
pub use fisher::{Rate, fisher_pass_rate};
pub use holm::{holm, weighted_holm};
pub use mann_whitney::{mann_whitney, median};
pub use mmd::{Kernel, Similarity, Stratum, StratumDistance, text_mmd};
pub use permutation::PermutationBudget;

crate::closed::closed_set! {
/// Which question a test answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Fisher's exact test, one-sided: did the pass rate drop?
    PassRate,
    /// 2×K homogeneity: did the distribution of categorical answers change?
    Answers,
    /// Mann–Whitney U, two-sided: did completion lengths shift?
    Length,
    /// Kernel MMD² over the answers of every probe, stratified by probe: did the answers, as
    /// strings, change anywhere?
    Mmd,
    /// First output tokens on border inputs, pooled over inputs: did the near-ties tip?
    FirstTokens,
    /// Reported first-token logprobs against the provider's own spread at the lock.
    Logprobs,
    /// Sampled first tokens against the probabilities reported with them, now against the
    /// lock: does the provider sample its reported distributions as it did?
    Sampling,
}
}

impl TestKind {
    /// The first-token tier's tests (on border inputs, not on the pin's probes).
    pub const TIER: [TestKind; 3] = [
        TestKind::FirstTokens,
        TestKind::Logprobs,
        TestKind::Sampling,
    ];

    /// The name the report and metrics give the test (its JSON form).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TestKind::PassRate => "pass_rate",
            TestKind::Answers => "answers",
            TestKind::Length => "length",
            TestKind::Mmd => "mmd",
            TestKind::FirstTokens => "first_tokens",
            TestKind::Logprobs => "logprobs",
            TestKind::Sampling => "sampling",
        }
    }
}

/// How a p-value was obtained, so a reader can judge (and recompute) it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Calibration {
    /// From the exact conditional (permutation) distribution, enumerated.
    Exact,
    /// Pearson X² against the chi-square distribution.
    ChiSquare { df: u32 },
    /// Normal approximation with tie correction and continuity correction.
    Normal,
    /// Monte-Carlo permutation p = (1 + exceedances)/(1 + permutations), stopped early by the
    /// Besag–Clifford rule once `exceedances` reached the budget's limit.
    Permutation {
        permutations: u64,
        exceedances: u64,
        seed: u64,
    },
    /// The data cannot carry evidence (an empty side, a single category, all values equal):
    /// p = 1 by definition, never a rejection.
    NoEvidence,
}

/// What moved, in the units a person reads: rates, shares, medians, similarities.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Effect {
    PassRate {
        baseline: Rate,
        current: Rate,
    },
    Answers {
        /// The most frequent answers over both samples, most frequent first.
        top: Vec<AnswerShare>,
        /// Distinct answers over both samples.
        categories: usize,
        /// The answers whose share moved most between the samples, largest shift first (at
        /// most three; none when a sample is empty or nothing moved).
        shifted: Vec<AnswerShare>,
        /// Total variation distance between the two answer distributions, in [0, 1] (0 when a
        /// sample is empty).
        distance: f64,
    },
    Length {
        baseline_median: Option<f64>,
        current_median: Option<f64>,
        baseline_n: usize,
        current_n: usize,
        /// P(a current length > a baseline length) + ½ P(equal): 0.5 means no shift.
        current_longer: f64,
    },
    Text {
        kernel: Kernel,
        strata: Vec<StratumDistance>,
    },
    FirstTokens {
        inputs: usize,
        /// Inputs with samples on both sides and more than one token seen.
        informative: usize,
        /// The inputs that moved most.
        moved: Vec<first_token::InputShift>,
    },
    Logprobs {
        prompts: usize,
        /// Prompts with logprobs on both sides.
        compared: usize,
        moved: Vec<logprob::PromptShift>,
    },
    Sampling(sampling::SamplingSummary),
}

/// One test's outcome before any multiplicity adjustment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestResult {
    pub test: TestKind,
    /// The test's own statistic: current passes (Fisher), Pearson X², U of the current sample,
    /// the sum over probes of standardised MMD² (MMD).
    pub statistic: f64,
    /// Raw p-value, in (0, 1].
    pub p_value: f64,
    pub calibration: Calibration,
    pub effect: Effect,
}

/// Asserts that `hits` rejections in `runs` null runs at level 0.05 are within three binomial
/// standard errors above the level.
#[cfg(test)]
pub(crate) fn assert_false_alarms_at_level(hits: usize, runs: u32) {
    let rate = hits as f64 / f64::from(runs);
    assert!(
        rate <= 0.05 + 3.0 * (0.05f64 * 0.95 / f64::from(runs)).sqrt(),
        "{hits} false alarms in {runs} runs: {rate}"
    );
}

#[cfg(test)]
mod names {
    use super::TestKind;

    #[test]
    fn test_names_are_their_json_form() {
        for kind in [
            TestKind::PassRate,
            TestKind::Answers,
            TestKind::Length,
            TestKind::Mmd,
        ] {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json.as_str(), Some(kind.as_str()));
        }
    }
}
