//! One probe's answers ready for permutations.
//!
//! Relabeling costs O(m²), m the smaller side: with S the off-diagonal sum and r the row sums of
//! the probe's Gram matrix, a group Y carrying the smaller side's label has its within-sum
//! directly, across = Σ_{i∈Y} r_i − 2·within(Y), and the other side's within-sum
//! S − within(Y) − across.
//!
//! Each probe's MMD² is standardised by its own null mean and spread under relabeling before the
//! probes are added up. Probes differ wildly in how noisy their MMD² is (two fixed JSON strings
//! versus forty characters of free text), and without this the noisiest probe drowns the others;
//! with it a swap that moves every probe a little adds up. The moments depend only on the
//! pooled answers, never on which of them are current, so the permutation test stays exact.

use statrs::function::factorial::ln_binomial;

use super::kernel::Gram;
use crate::stats::rng::Rng;

/// Kernel sums of one labeling: within baseline, within current, across (each pair once).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sums {
    pub(super) baseline: f64,
    pub(super) current: f64,
    pub(super) across: f64,
}

/// Up to this many labelings the null moments are computed over all of them.
const EXACT_LABELINGS: f64 = 5000.0;
/// Beyond, over this many random ones.
const SAMPLED_LABELINGS: usize = 500;

pub(super) struct Prepared {
    pub(super) baseline_n: usize,
    pub(super) current_n: usize,
    pub(super) gram: Gram,
    rows: Vec<f64>,
    off_total: f64,
    pub(super) index: Vec<usize>,
    /// Null mean of the statistic under relabeling.
    center: f64,
    /// 1 / its null standard deviation; 0 when every labeling gives the same value.
    scale: f64,
}

/// Below this many answers on the smaller side the probe's statistic is novelty, not MMD².
pub(super) const FEW: usize = 5;

impl Prepared {
    /// `seed` drives the sampled null moments when there are too many labelings to enumerate.
    pub(super) fn new(gram: Gram, baseline_n: usize, current_n: usize, seed: u64) -> Prepared {
        let rows: Vec<f64> = (0..gram.n)
            .map(|i| (0..gram.n).filter(|&j| j != i).map(|j| gram.at(i, j)).sum())
            .collect();
        let off_total = rows.iter().sum::<f64>() / 2.0;
        let mut prepared = Prepared {
            baseline_n,
            current_n,
            index: (0..gram.n).collect(),
            gram,
            rows,
            off_total,
            center: 0.0,
            scale: 0.0,
        };
        let (mean, sd) = prepared.null_moments(seed);
        prepared.center = mean;
        if sd > 1e-12 * (1.0 + mean.abs()) {
            prepared.scale = 1.0 / sd;
        }
        prepared
    }

    fn smaller(&self) -> usize {
        self.baseline_n.min(self.current_n)
    }

    /// Whether relabeling can change the statistic at all.
    pub(super) fn informative(&self) -> bool {
        self.scale > 0.0
    }

    /// The actual labeling's smaller group.
    pub(super) fn observed_group(&self) -> Vec<usize> {
        if self.current_n <= self.baseline_n {
            (self.baseline_n..self.baseline_n + self.current_n).collect()
        } else {
            (0..self.baseline_n).collect()
        }
    }

    /// Sums when `group` (of size `smaller()`) carries the smaller side's label.
    pub(super) fn sums(&self, group: &[usize]) -> Sums {
        let mut within = 0.0;
        for (x, &i) in group.iter().enumerate() {
            for &j in &group[x + 1..] {
                within += self.gram.at(i, j);
            }
        }
        let across = group.iter().map(|&i| self.rows[i]).sum::<f64>() - 2.0 * within;
        let other = self.off_total - within - across;
        let (baseline, current) = if self.current_n <= self.baseline_n {
            (other, within)
        } else {
            (within, other)
        };
        Sums {
            baseline,
            current,
            across,
        }
    }

    /// The probe's statistic for a labeling:
    /// - with at least `FEW` answers on each side, the unbiased MMD² of detection-science §4.1;
    /// - with fewer, novelty: mean within-baseline minus twice the mean cross similarity, i.e.
    ///   MMD² without its within-current term. With one or two new answers that term is a
    ///   single kernel value, lumpy under relabeling (two identical answers or not), and it
    ///   would dominate the null's tail; the cross term averages over all baseline answers.
    ///
    /// The choice depends on the sample sizes only, never on the labels.
    pub(super) fn statistic(&self, group: &[usize]) -> f64 {
        let s = self.sums(group);
        let pairs = |n: usize| (n * n.saturating_sub(1) / 2) as f64;
        let mean = |sum: f64, pairs: f64| if pairs > 0.0 { sum / pairs } else { 0.0 };
        let within_current = if self.smaller() >= FEW {
            mean(s.current, pairs(self.current_n))
        } else {
            0.0
        };
        mean(s.baseline, pairs(self.baseline_n)) + within_current
            - 2.0 * mean(s.across, (self.baseline_n * self.current_n) as f64)
    }

    /// The statistic in null standard deviations from its null mean.
    pub(super) fn standardized(&self, group: &[usize]) -> f64 {
        self.scale * (self.statistic(group) - self.center)
    }

    /// The standardised statistic of a fresh random relabeling.
    pub(super) fn permuted(&mut self, rng: &mut Rng) -> f64 {
        let m = self.smaller();
        rng.choose_front(&mut self.index, m);
        self.standardized(&self.index[..m])
    }

    /// Mean and standard deviation of the statistic over all labelings, or sampled ones.
    fn null_moments(&self, seed: u64) -> (f64, f64) {
        let (n, m) = (self.gram.n, self.smaller());
        let mut values = Vec::new();
        if ln_binomial(n as u64, m as u64) <= EXACT_LABELINGS.ln() {
            for_each_subset(n, m, |group| values.push(self.statistic(group)));
        } else {
            let mut rng = Rng::new(seed);
            let mut index: Vec<usize> = (0..n).collect();
            for _ in 0..SAMPLED_LABELINGS {
                rng.choose_front(&mut index, m);
                values.push(self.statistic(&index[..m]));
            }
        }
        let count = values.len() as f64;
        let mean = values.iter().sum::<f64>() / count;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / count;
        (mean, variance.sqrt())
    }
}

/// Calls `visit` with every `m`-subset of `0..n`, in lexicographic order.
pub(super) fn for_each_subset(n: usize, m: usize, mut visit: impl FnMut(&[usize])) {
    let mut group: Vec<usize> = (0..m).collect();
    if m > n {
        return;
    }
    loop {
        visit(&group);
        let Some(i) = (0..m).rev().find(|&i| group[i] < n - m + i) else {
            return;
        };
        group[i] += 1;
        for j in i + 1..m {
            group[j] = group[j - 1] + 1;
        }
    }
}
