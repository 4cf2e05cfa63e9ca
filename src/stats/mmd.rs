//! Answers, then vs now, as strings: a kernel MMD² two-sample test with a probe-stratified
//! permutation null (Gao, Liang & Guestrin, "Model Equality Testing", ICLR 2025;
//! detection-science §4.1).
//!
//! Answers are only compared with answers to the same probe (a prompt-masked kernel), and the
//! null permutes baseline/current labels only within a probe, which makes the test exact under
//! exchangeability without assuming anything about text. Two string kernels see different
//! things (`kernel`): Hamming sees position-by-position agreement and length, the k-spectrum
//! sees wording wherever it sits.
//!
//! `Kernel::Sum` adds both, each divided by the spread of its own off-diagonal Gram entries so
//! neither dominates by scale. A sum kernel's RKHS contains both kernels' witness functions, so
//! the one test sees what either sees, costs one slot in Holm instead of two, and keeps the
//! early-stopping permutation p-value (a min-p combination of two tests would not). The scale
//! depends only on the pooled answers, never the labels, so permutation validity is untouched.
//! The statistic is the sum over probes of each probe's standardised MMD² (`stratum`).

mod kernel;
mod stratum;

use serde::Serialize;

use super::permutation::{PermutationBudget, sequential_p};
use super::rng::derive_seed;
use super::{Calibration, Effect, TestKind, TestResult};
use kernel::{Gram, base_grams};
use stratum::Prepared;

/// Characters compared per answer (§4.1's L): longer answers are truncated.
pub const DEFAULT_LENGTH: usize = 1000;
/// Longest n-gram of the spectrum kernel.
pub const DEFAULT_MAX_N: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum Kernel {
    Hamming { length: usize },
    Spectrum { max_n: usize, length: usize },
    Sum { max_n: usize, length: usize },
}

impl Kernel {
    /// What `compare_pin` uses.
    pub const DEFAULT: Kernel = Kernel::Sum {
        max_n: DEFAULT_MAX_N,
        length: DEFAULT_LENGTH,
    };

    fn parts(self) -> (Option<usize>, Option<usize>, usize) {
        match self {
            Kernel::Hamming { length } => (Some(length), None, length),
            Kernel::Spectrum { max_n, length } => (None, Some(max_n), length),
            Kernel::Sum { max_n, length } => (Some(length), Some(max_n), length),
        }
    }
}

/// One probe's (or prompt's) answers.
#[derive(Debug, Clone, Copy)]
pub struct Stratum<'a> {
    pub id: &'a str,
    pub baseline: &'a [String],
    pub current: &'a [String],
}

/// How one probe's answers moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StratumDistance {
    pub id: String,
    pub baseline_n: usize,
    pub current_n: usize,
    /// The probe's MMD² (novelty below 5 answers a side) in the test kernel's units.
    pub statistic: f64,
    /// The same in null standard deviations from its null mean: which probe moved, and how
    /// far (0 when no relabeling could change it).
    pub standardized: f64,
    pub similarity: Vec<Similarity>,
}

/// Mean base-kernel value, in [0, 1], within the baseline, within the current answers and across.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Similarity {
    pub kernel: &'static str,
    pub within_baseline: Option<f64>,
    pub within_current: Option<f64>,
    pub across: Option<f64>,
}

/// The MMD test of `kernel` between baseline and current answers, p-value from within-stratum
/// label permutations. Strata without answers on both sides are left out.
#[must_use]
pub fn text_mmd(
    strata: &[Stratum<'_>],
    kernel: Kernel,
    budget: PermutationBudget,
    seed: u64,
) -> TestResult {
    let used: Vec<&Stratum<'_>> = strata
        .iter()
        .filter(|s| !s.baseline.is_empty() && !s.current.is_empty())
        .collect();
    let bases: Vec<Vec<(&'static str, Gram)>> =
        used.iter().map(|s| base_grams(s, kernel)).collect();
    let mut prepared = combine(&bases, &used, seed);
    let effect = Effect::Text {
        kernel,
        strata: used
            .iter()
            .zip(&bases)
            .zip(&prepared)
            .map(|((s, g), p)| distance(s, g, p))
            .collect(),
    };
    let (statistic, p_value, calibration) = if prepared.iter().any(Prepared::informative) {
        let observed: f64 = prepared
            .iter()
            .map(|p| p.standardized(&p.observed_group()))
            .sum();
        let (p, cal) = sequential_p(observed, budget, seed, |rng| {
            prepared.iter_mut().map(|p| p.permuted(rng)).sum()
        });
        (observed, p, cal)
    } else {
        (0.0, 1.0, Calibration::NoEvidence)
    };
    TestResult {
        test: TestKind::Mmd,
        statistic,
        p_value,
        calibration,
        effect,
    }
}

fn distance(
    stratum: &Stratum<'_>,
    grams: &[(&'static str, Gram)],
    prepared: &Prepared,
) -> StratumDistance {
    let (a, b) = (stratum.baseline.len(), stratum.current.len());
    let mean = |sum: f64, pairs: usize| (pairs > 0).then(|| sum / pairs as f64);
    let similarity = grams
        .iter()
        .map(|(name, gram)| {
            let sums = gram.observed(a);
            Similarity {
                kernel: name,
                within_baseline: mean(sums.baseline, a * a.saturating_sub(1) / 2),
                within_current: mean(sums.current, b * b.saturating_sub(1) / 2),
                across: mean(sums.across, a * b),
            }
        })
        .collect();
    let group = prepared.observed_group();
    StratumDistance {
        id: stratum.id.to_owned(),
        baseline_n: a,
        current_n: b,
        statistic: prepared.statistic(&group),
        standardized: prepared.standardized(&group),
        similarity,
    }
}

/// One Gram matrix per stratum: the base kernels, each divided by its pooled off-diagonal spread.
fn combine(
    bases: &[Vec<(&'static str, Gram)>],
    strata: &[&Stratum<'_>],
    seed: u64,
) -> Vec<Prepared> {
    let kernels = bases.first().map_or(0, Vec::len);
    // A single kernel keeps its natural units: MMD² then reads on the kernel's [0, 1] scale.
    let weights: Vec<f64> = (0..kernels)
        .map(|k| {
            if kernels == 1 {
                return 1.0;
            }
            let spread = off_diagonal_spread(bases.iter().map(|g| &g[k].1));
            if spread > 0.0 { 1.0 / spread } else { 0.0 }
        })
        .collect();
    bases
        .iter()
        .zip(strata)
        .enumerate()
        .map(|(j, (grams, s))| {
            let n = grams[0].1.n;
            let gram = Gram::new(n, |i, j| {
                grams
                    .iter()
                    .zip(&weights)
                    .map(|((_, g), w)| w * g.at(i, j))
                    .sum()
            });
            let moments_seed = derive_seed(seed, j as u64 + 1);
            Prepared::new(gram, s.baseline.len(), s.current.len(), moments_seed)
        })
        .collect()
}

/// Standard deviation of the off-diagonal entries of all the strata's matrices together.
fn off_diagonal_spread<'g>(grams: impl Iterator<Item = &'g Gram>) -> f64 {
    let (mut n, mut sum, mut squares) = (0.0, 0.0, 0.0);
    for g in grams {
        for i in 0..g.n {
            for j in (i + 1)..g.n {
                let k = g.at(i, j);
                n += 1.0;
                sum += k;
                squares += k * k;
            }
        }
    }
    if n < 2.0 {
        return 0.0;
    }
    let mean = sum / n;
    (squares / n - mean * mean).max(0.0).sqrt()
}

#[cfg(test)]
mod tests;
