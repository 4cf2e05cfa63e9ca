//! Homogeneity of categorical answers, then vs now: a 2×K table tested with Pearson's X².
//!
//! Small counts are the normal case here (10 calls against ~30 baseline answers), and the
//! chi-square approximation is badly anti-conservative there. Merging sparse categories would
//! throw away exactly the signal a swapped model gives (answers the baseline never produced), so
//! instead the p-value comes from the exact conditional distribution of X² given the table's
//! margins (the Freeman–Halton construction, ordered by X²), which is the permutation null of the
//! answers' labels:
//! - every expected count ≥ 5 (Cochran's rule): the chi-square approximation, df = K − 1;
//! - else, when the margins admit at most `EXACT_TABLES` tables: enumerate them all, exactly;
//! - else: Monte-Carlo label permutations with the caller's budget and seed.

use std::collections::BTreeMap;

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF};
use statrs::function::factorial::ln_binomial;

use super::permutation::{PermutationBudget, sequential_p};
use super::rng::Rng;
use super::{Calibration, Effect, TestKind, TestResult};

/// Above this many tables with the observed margins, Monte-Carlo replaces enumeration.
const EXACT_TABLES: f64 = 200_000.0;
/// Answers listed in the evidence.
const TOP_ANSWERS: usize = 5;
/// Answers listed as the largest shifts.
const SHIFTED_ANSWERS: usize = 3;

/// One answer's count and share in each sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerShare {
    pub answer: String,
    pub baseline_count: u64,
    pub current_count: u64,
    /// `None` when that sample is empty.
    pub baseline_share: Option<f64>,
    pub current_share: Option<f64>,
}

/// The 2×K table: per category, baseline and current counts, categories in answer order.
struct Table<'a> {
    answers: Vec<&'a str>,
    baseline: Vec<u64>,
    current: Vec<u64>,
    n0: u64,
    n: u64,
}

/// Tests whether `current` answers follow the same categorical distribution as `baseline`.
#[must_use]
pub fn answers_homogeneity<S: AsRef<str>>(
    baseline: &[S],
    current: &[S],
    budget: PermutationBudget,
    seed: u64,
) -> TestResult {
    let table = Table::new(baseline, current);
    let effect = table.effect();
    let (statistic, p_value, calibration) = if table.n0 == 0 || table.n == 0 || table.k() < 2 {
        (0.0, 1.0, Calibration::NoEvidence)
    } else {
        let x2 = table.pearson(&table.current);
        let (p, cal) = table.p_value(x2, budget, seed);
        (x2, p, cal)
    };
    TestResult {
        test: TestKind::Answers,
        statistic,
        p_value,
        calibration,
        effect,
    }
}

impl<'a> Table<'a> {
    fn new<S: AsRef<str>>(baseline: &'a [S], current: &'a [S]) -> Table<'a> {
        let mut counts: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for a in baseline {
            counts.entry(a.as_ref()).or_default().0 += 1;
        }
        for a in current {
            counts.entry(a.as_ref()).or_default().1 += 1;
        }
        Table {
            answers: counts.keys().copied().collect(),
            baseline: counts.values().map(|c| c.0).collect(),
            current: counts.values().map(|c| c.1).collect(),
            n0: baseline.len() as u64,
            n: current.len() as u64,
        }
    }

    fn k(&self) -> usize {
        self.answers.len()
    }

    fn column(&self, k: usize) -> u64 {
        self.baseline[k] + self.current[k]
    }

    /// X² as a function of the current row alone (margins fixed): each category adds
    /// (x − E₁)² (1/E₁ + 1/E₀) = (x − E₁)² N² / (n n₀ c).
    fn term(&self, k: usize, x: u64) -> f64 {
        let total = (self.n0 + self.n) as f64;
        let c = self.column(k) as f64;
        let expected = self.n as f64 * c / total;
        let d = x as f64 - expected;
        d * d * total * total / (self.n as f64 * self.n0 as f64 * c)
    }

    fn pearson(&self, current: &[u64]) -> f64 {
        current
            .iter()
            .enumerate()
            .map(|(k, &x)| self.term(k, x))
            .sum()
    }

    fn p_value(&self, x2: f64, budget: PermutationBudget, seed: u64) -> (f64, Calibration) {
        if self.cochran_holds() {
            let df = (self.k() - 1) as u32;
            let p = ChiSquared::new(f64::from(df)).map_or(1.0, |d| d.sf(x2));
            return (p, Calibration::ChiSquare { df });
        }
        if self.tables() <= EXACT_TABLES {
            return (self.exact_p(x2), Calibration::Exact);
        }
        self.permutation_p(x2, budget, seed)
    }

    fn cochran_holds(&self) -> bool {
        let total = (self.n0 + self.n) as f64;
        let smaller = self.n0.min(self.n) as f64;
        (0..self.k()).all(|k| smaller * self.column(k) as f64 / total >= 5.0)
    }

    /// How many current rows (x₁..x_K), Σx = n, 0 ≤ x_k ≤ c_k, the margins admit.
    fn tables(&self) -> f64 {
        let n = self.n as usize;
        let mut ways = vec![0.0f64; n + 1];
        ways[0] = 1.0;
        for k in 0..self.k() {
            let cap = self.column(k) as usize;
            let mut next = vec![0.0f64; n + 1];
            for (r, &w) in ways.iter().enumerate().filter(|(_, w)| **w > 0.0) {
                for x in 0..=cap.min(n - r) {
                    next[r + x] += w;
                }
            }
            ways = next;
        }
        ways[n]
    }

    /// Σ P(table) over tables with X² ≥ observed, P multivariate hypergeometric.
    fn exact_p(&self, x2: f64) -> f64 {
        let mut walk = Walk {
            table: self,
            floor: x2 - (1e-9 * x2.abs() + 1e-12),
            ln_all: ln_binomial(self.n0 + self.n, self.n),
            capacity_after: self.capacity_after(),
            p: 0.0,
        };
        walk.visit(0, self.n, 0.0, 0.0);
        walk.p.min(1.0)
    }

    fn capacity_after(&self) -> Vec<u64> {
        let mut after = vec![0u64; self.k() + 1];
        for k in (0..self.k()).rev() {
            after[k] = after[k + 1] + self.column(k);
        }
        after
    }

    fn permutation_p(&self, x2: f64, budget: PermutationBudget, seed: u64) -> (f64, Calibration) {
        let mut pool: Vec<usize> = (0..self.k())
            .flat_map(|k| std::iter::repeat_n(k, self.column(k) as usize))
            .collect();
        let current_is_smaller = self.n <= self.n0;
        let drawn = self.n.min(self.n0) as usize;
        let mut counts = vec![0u64; self.k()];
        sequential_p(x2, budget, seed, |rng: &mut Rng| {
            rng.choose_front(&mut pool, drawn);
            counts.fill(0);
            pool[..drawn].iter().for_each(|&k| counts[k] += 1);
            if !current_is_smaller {
                for (k, c) in counts.iter_mut().enumerate() {
                    *c = self.column(k) - *c;
                }
            }
            self.pearson(&counts)
        })
    }

    fn effect(&self) -> Effect {
        let share = |count: u64, n: u64| (n > 0).then(|| count as f64 / n as f64);
        let mut order: Vec<usize> = (0..self.k()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(self.column(k)));
        let answer_share = |k: usize| AnswerShare {
            answer: self.answers[k].to_owned(),
            baseline_count: self.baseline[k],
            current_count: self.current[k],
            baseline_share: share(self.baseline[k], self.n0),
            current_share: share(self.current[k], self.n),
        };
        let top = order
            .into_iter()
            .take(TOP_ANSWERS)
            .map(answer_share)
            .collect();
        let delta = |k: usize| match (
            share(self.baseline[k], self.n0),
            share(self.current[k], self.n),
        ) {
            (Some(b), Some(c)) => c - b,
            _ => 0.0,
        };
        let mut moved: Vec<usize> = (0..self.k()).filter(|&k| delta(k) != 0.0).collect();
        // Largest shift first; equal shifts in answer order (the sort is stable).
        moved.sort_by(|&a, &b| delta(b).abs().total_cmp(&delta(a).abs()));
        let shifted = moved
            .into_iter()
            .take(SHIFTED_ANSWERS)
            .map(answer_share)
            .collect();
        Effect::Answers {
            top,
            categories: self.k(),
            shifted,
            distance: (0..self.k()).map(|k| delta(k).abs()).sum::<f64>() / 2.0,
        }
    }
}

/// Depth-first enumeration of the current row, category by category.
struct Walk<'t, 'a> {
    table: &'t Table<'a>,
    floor: f64,
    ln_all: f64,
    capacity_after: Vec<u64>,
    p: f64,
}

impl Walk<'_, '_> {
    fn visit(&mut self, k: usize, left: u64, x2: f64, ln_ways: f64) {
        let t = self.table;
        if k + 1 == t.k() {
            let x2 = x2 + t.term(k, left);
            if x2 >= self.floor {
                self.p += (ln_ways + ln_binomial(t.column(k), left) - self.ln_all).exp();
            }
            return;
        }
        let lowest = left.saturating_sub(self.capacity_after[k + 1]);
        for x in lowest..=left.min(t.column(k)) {
            let ways = ln_ways + ln_binomial(t.column(k), x);
            self.visit(k + 1, left - x, x2 + t.term(k, x), ways);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Table, answers_homogeneity};
    use crate::stats::permutation::PermutationBudget;
    use crate::stats::{Calibration, Effect};

    fn answers(spec: &[(&str, usize)]) -> Vec<String> {
        spec.iter()
            .flat_map(|&(a, n)| std::iter::repeat_n(a.to_owned(), n))
            .collect()
    }

    fn close(got: f64, want: f64, rel: f64) -> bool {
        (got - want).abs() <= rel * want.abs()
    }

    #[test]
    fn matches_reference_values() {
        let budget = PermutationBudget::CLASSIC;
        // (baseline, current, X², p, calibration)
        let cases = [
            // R ?chisq.test, Agresti (2007) p. 39, party identification by gender:
            // chisq.test(rbind(c(762, 327, 468), c(484, 239, 477))): X² = 30.07, p = 2.954e-07.
            (
                answers(&[("dem", 762), ("ind", 327), ("rep", 468)]),
                answers(&[("dem", 484), ("ind", 239), ("rep", 477)]),
                30.070_149,
                2.954e-7,
                Calibration::ChiSquare { df: 2 },
            ),
            // Tea tasting, rbind(c(3, 1), c(1, 3)): X² = 2; the exact X²-ordered p is
            // 1 − P(X = 2) = 34/70, equal to R's two-sided fisher.test(TeaTasting) 0.4857
            // because these margins make the hypergeometric symmetric.
            (
                answers(&[("milk", 3), ("tea", 1)]),
                answers(&[("milk", 1), ("tea", 3)]),
                2.0,
                34.0 / 70.0,
                Calibration::Exact,
            ),
            // Hand: a swap to an answer the baseline never gave. Only one table is as extreme,
            // p = 1 / C(40, 10) = 1 / 847660528; X² = N = 40 for a perfectly separated table.
            (
                answers(&[("Sydney", 30)]),
                answers(&[("Melbourne", 10)]),
                40.0,
                1.0 / 847_660_528.0,
                Calibration::Exact,
            ),
        ];
        for (baseline, current, x2, p, calibration) in cases {
            let r = answers_homogeneity(&baseline, &current, budget, 1);
            assert!(close(r.statistic, x2, 1e-6), "X² {}", r.statistic);
            assert!(close(r.p_value, p, 1e-3), "p {} want {p}", r.p_value);
            assert_eq!(r.calibration, calibration);
        }
    }

    #[test]
    fn exact_p_equals_brute_force_over_all_labelings() {
        // Independent check of the enumeration: all C(10, 4) = 210 ways to pick which 4 of the
        // pooled answers are "current", each equally likely under H0.
        let baseline = answers(&[("a", 4), ("b", 1), ("c", 1)]);
        let current = answers(&[("b", 2), ("c", 1), ("d", 1)]);
        let table = Table::new(&baseline, &current);
        let observed = table.pearson(&table.current);
        let pooled: Vec<usize> = (0..table.k())
            .flat_map(|k| std::iter::repeat_n(k, table.column(k) as usize))
            .collect();
        let (mut hits, mut all) = (0u32, 0u32);
        for mask in 0u32..(1 << pooled.len()) {
            if mask.count_ones() != 4 {
                continue;
            }
            let mut row = vec![0u64; table.k()];
            (0..pooled.len())
                .filter(|i| mask & (1 << i) != 0)
                .for_each(|i| row[pooled[i]] += 1);
            all += 1;
            hits += u32::from(table.pearson(&row) >= observed - 1e-9);
        }
        let want = f64::from(hits) / f64::from(all);
        assert!((table.exact_p(observed) - want).abs() < 1e-12);
        let all_draws = PermutationBudget {
            max_permutations: 100_000,
            stop_after: u64::MAX,
        };
        let mc = table.permutation_p(observed, all_draws, 5).0;
        let se = (want * (1.0 - want) / 1e5).sqrt();
        assert!((mc - want).abs() < 4.0 * se, "mc {mc} exact {want}");
    }

    #[test]
    fn degenerate_inputs_do_not_reject() {
        let none: Vec<String> = vec![];
        let cases = [
            (none.clone(), none.clone()),
            (answers(&[("a", 3)]), none.clone()),
            (none.clone(), answers(&[("a", 3)])),
            (answers(&[("a", 30)]), answers(&[("a", 10)])),
            (answers(&[("a", 1)]), answers(&[("b", 1)])),
        ];
        for (baseline, current) in cases {
            let r = answers_homogeneity(&baseline, &current, PermutationBudget::CLASSIC, 0);
            assert!(r.p_value > 0.4, "{baseline:?} {current:?}: {}", r.p_value);
        }
    }

    #[test]
    fn evidence_lists_top_answers_with_shares_the_largest_shifts_and_the_distance() {
        // Sydney 80 % → 0 %, Melbourne 20 % → 80 %, Perth 0 % → 20 %.
        let r = answers_homogeneity(
            &answers(&[("Sydney", 8), ("Melbourne", 2)]),
            &answers(&[("Melbourne", 4), ("Perth", 1)]),
            PermutationBudget::CLASSIC,
            0,
        );
        let Effect::Answers {
            top,
            categories,
            shifted,
            distance,
        } = r.effect
        else {
            panic!()
        };
        assert_eq!(categories, 3);
        assert_eq!(top[0].answer, "Sydney");
        assert_eq!(top[1].answer, "Melbourne");
        assert_eq!(top[1].current_share, Some(0.8));
        assert_eq!(top[1].baseline_share, Some(0.2));
        let names: Vec<&str> = shifted.iter().map(|a| a.answer.as_str()).collect();
        assert_eq!(names, ["Sydney", "Melbourne", "Perth"]);
        assert!((distance - 0.8).abs() < 1e-12, "{distance}");
        let still = answers_homogeneity(
            &answers(&[("a", 2), ("b", 2)]),
            &answers(&[("a", 1), ("b", 1)]),
            PermutationBudget::CLASSIC,
            0,
        );
        let Effect::Answers {
            shifted, distance, ..
        } = still.effect
        else {
            panic!()
        };
        assert!(shifted.is_empty() && distance == 0.0);
    }
}
