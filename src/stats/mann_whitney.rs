//! Mann–Whitney U on completion lengths, two-sided: did the answers get longer or shorter?
//!
//! Rank-based because lengths are skewed and heavy-tailed, and a replacement model is as likely
//! to ramble as to truncate. Token counts are integers, so ties are the rule, not the exception:
//! - small samples (2·m²·N² ≤ `EXACT_WORK`, m the smaller sample): the exact permutation
//!   distribution of the rank sum with mid-ranks, by dynamic programming over doubled ranks —
//!   exact with ties, where the textbook no-ties tables are wrong;
//! - otherwise the normal approximation with the tie-corrected variance
//!   Var U = n₀n/12 · [(N + 1) − Σ(t³ − t)/(N(N − 1))] and a continuity correction, as R's
//!   `wilcox.test(exact = FALSE)` and scipy's `mannwhitneyu(method = "asymptotic")` compute it.

use statrs::distribution::{ContinuousCDF, Normal};

use super::{Calibration, Effect, TestKind, TestResult};

/// Work bound for the exact distribution (DP cell updates).
const EXACT_WORK: f64 = 4e6;

/// Pooled mid-ranks, doubled so they are integers: rank sums stay exact.
struct Ranks {
    doubled: Vec<u64>,
    /// Σ (t³ − t) over tie groups.
    ties: f64,
}

/// Two-sided Mann–Whitney test; the statistic is U of the current sample.
#[must_use]
pub fn mann_whitney(baseline: &[f64], current: &[f64]) -> TestResult {
    let (n0, n) = (baseline.len(), current.len());
    let ranks = Ranks::of(baseline, current);
    let w2: u64 = ranks.doubled[n0..].iter().sum();
    let u = w2 as f64 / 2.0 - (n * (n + 1)) as f64 / 2.0;
    let (p_value, calibration) = if n0 == 0 || n == 0 || ranks.all_tied(n0 + n) {
        (1.0, Calibration::NoEvidence)
    } else if exact_is_cheap(n0, n) {
        (exact_p(&ranks.doubled, n0, w2), Calibration::Exact)
    } else {
        (normal_p(u, n0, n, ranks.ties), Calibration::Normal)
    };
    TestResult {
        test: TestKind::Length,
        statistic: u,
        p_value,
        calibration,
        effect: Effect::Length {
            baseline_median: median(baseline),
            current_median: median(current),
            baseline_n: n0,
            current_n: n,
            current_longer: if n0 * n == 0 {
                0.5
            } else {
                u / (n0 * n) as f64
            },
        },
    }
}

impl Ranks {
    /// Mid-ranks ×2 of `baseline` then `current`, in input order.
    fn of(baseline: &[f64], current: &[f64]) -> Ranks {
        let pooled: Vec<f64> = baseline.iter().chain(current).copied().collect();
        let mut order: Vec<usize> = (0..pooled.len()).collect();
        order.sort_by(|&a, &b| pooled[a].total_cmp(&pooled[b]));
        let mut doubled = vec![0u64; pooled.len()];
        let mut ties = 0.0;
        let mut start = 0;
        while start < order.len() {
            let value = pooled[order[start]];
            // `start + 1`: a NaN never equals itself and must still form a group of one.
            let end = start
                + 1
                + order[start + 1..].partition_point(|&i| pooled[i].total_cmp(&value).is_eq());
            // Positions start+1 ..= end share the mid-rank (start + 1 + end) / 2.
            order[start..end]
                .iter()
                .for_each(|&i| doubled[i] = (start + 1 + end) as u64);
            let t = (end - start) as f64;
            ties += t * t * t - t;
            start = end;
        }
        Ranks { doubled, ties }
    }

    fn all_tied(&self, total: usize) -> bool {
        let t = total as f64;
        (self.ties - (t * t * t - t)).abs() < 0.5
    }
}

fn exact_is_cheap(n0: usize, n: usize) -> bool {
    let m = n0.min(n) as f64;
    let total = (n0 + n) as f64;
    2.0 * m * m * total * total <= EXACT_WORK
}

/// Two-sided exact p: min(1, 2·min(P(W ≤ w), P(W ≥ w))) for W the doubled rank sum of the
/// current sample under all C(N, n) equally likely labelings (R's and scipy's convention).
fn exact_p(doubled: &[u64], n0: usize, w2: u64) -> f64 {
    let n = doubled.len() - n0;
    let dist = rank_sum_distribution(doubled, n);
    let total: f64 = dist.iter().sum();
    let w = w2 as usize;
    let below: f64 = dist[..=w].iter().sum();
    let above: f64 = dist[w..].iter().sum();
    (2.0 * below.min(above) / total).min(1.0)
}

/// Number of `m`-subsets of the items by their sum of doubled ranks.
fn rank_sum_distribution(doubled: &[u64], m: usize) -> Vec<f64> {
    let max_sum: u64 = doubled.iter().sum();
    let width = max_sum as usize + 1;
    // ways[j * width + s]: subsets of size j with doubled sum s, over the items seen so far.
    let mut ways = vec![0.0f64; (m + 1) * width];
    ways[0] = 1.0;
    for (seen, &r) in doubled.iter().enumerate() {
        let r = r as usize;
        for j in (1..=m.min(seen + 1)).rev() {
            let (lower, upper) = ways.split_at_mut(j * width);
            let from = &lower[(j - 1) * width..];
            for s in (0..width - r).filter(|&s| from[s] > 0.0) {
                upper[s + r] += from[s];
            }
        }
    }
    ways[m * width..].to_vec()
}

fn normal_p(u: f64, n0: usize, n: usize, ties: f64) -> f64 {
    let pairs = (n0 * n) as f64;
    let total = (n0 + n) as f64;
    let variance = pairs / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - pairs / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
    let standard = Normal::standard();
    (2.0 * standard.sf(z)).min(1.0)
}

/// Median, `None` for an empty sample.
#[must_use]
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len().is_multiple_of(2) {
        f64::midpoint(sorted[mid - 1], sorted[mid])
    } else {
        sorted[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::{Ranks, exact_p, mann_whitney, median, normal_p};
    use crate::stats::Calibration;

    fn close(got: f64, want: f64, rel: f64) -> bool {
        (got - want).abs() <= rel * want.abs()
    }

    /// airquality$Ozone (R datasets), May and August, NAs dropped.
    const MAY: [f64; 26] = [
        41., 36., 12., 18., 28., 23., 19., 8., 7., 16., 11., 14., 18., 14., 34., 6., 30., 11., 1.,
        11., 4., 32., 23., 45., 115., 37.,
    ];
    const AUGUST: [f64; 26] = [
        39., 9., 16., 78., 35., 66., 122., 89., 110., 44., 28., 65., 22., 59., 23., 31., 44., 21.,
        9., 45., 168., 73., 76., 118., 84., 85.,
    ];

    #[test]
    fn matches_published_values() {
        // scipy.stats.mannwhitneyu docs: males [19, 22, 16, 29, 24] vs females
        // [20, 11, 17, 12]: U = 17, exact p = 0.1111 (= 2 · 7/126), asymptotic p = 0.11134688.
        let females = [20., 11., 17., 12.];
        let males = [19., 22., 16., 29., 24.];
        let r = mann_whitney(&females, &males);
        assert!(close(r.statistic, 17.0, 1e-12));
        assert!(close(r.p_value, 14.0 / 126.0, 1e-12), "{}", r.p_value);
        assert_eq!(r.calibration, Calibration::Exact);
        assert!(close(
            normal_p(17.0, 4, 5, 0.0),
            0.111_346_886_533_140_41,
            1e-9
        ));
        // R ?wilcox.test: wilcox.test(Ozone ~ Month, data = airquality,
        // subset = Month %in% c(5, 8)): W = 127.5, p-value = 0.0001208 (ties, normal, corrected).
        let ranks = Ranks::of(&AUGUST, &MAY);
        let u_may = 127.5;
        assert!(close(mann_whitney(&AUGUST, &MAY).statistic, u_may, 1e-12));
        assert!(close(
            normal_p(u_may, 26, 26, ranks.ties),
            0.000_120_8,
            1e-3
        ));
    }

    #[test]
    fn exact_p_with_ties_equals_brute_force() {
        // All C(9, 4) = 126 labelings of a tied sample, enumerated directly.
        let baseline = [3., 5., 5., 7., 9.];
        let current = [5., 7., 7., 10.];
        let ranks = Ranks::of(&baseline, &current);
        let observed: u64 = ranks.doubled[5..].iter().sum();
        let (mut le, mut ge, mut all) = (0u32, 0u32, 0u32);
        for mask in 0u32..(1 << 9) {
            if mask.count_ones() != 4 {
                continue;
            }
            let w: u64 = (0..9)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| ranks.doubled[i])
                .sum();
            all += 1;
            le += u32::from(w <= observed);
            ge += u32::from(w >= observed);
        }
        let want = (2.0 * f64::from(le.min(ge)) / f64::from(all)).min(1.0);
        assert!(close(exact_p(&ranks.doubled, 5, observed), want, 1e-12));
    }

    #[test]
    fn degenerate_inputs_do_not_reject() {
        let cases: [(&[f64], &[f64]); 5] = [
            (&[], &[]),
            (&[1.0, 2.0], &[]),
            (&[], &[1.0]),
            (&[4.0; 30], &[4.0; 10]),
            (&[3.0], &[9.0]),
        ];
        for (baseline, current) in cases {
            let r = mann_whitney(baseline, current);
            assert!(r.p_value >= 0.99, "{baseline:?} {current:?}: {}", r.p_value);
        }
    }

    #[test]
    fn medians_table() {
        let cases: [(&[f64], Option<f64>); 4] = [
            (&[], None),
            (&[3.0], Some(3.0)),
            (&[4.0, 1.0], Some(2.5)),
            (&[5.0, 1.0, 3.0], Some(3.0)),
        ];
        for (values, want) in cases {
            assert_eq!(median(values), want);
        }
    }
}
