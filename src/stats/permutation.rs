//! Monte-Carlo permutation p-values that stay valid and cheap.
//!
//! Two constraints pull apart: Holm at the default α = 0.001 over ~8 tests needs p-values near
//! 10⁻⁴ to be resolvable (a fixed B = 999 could never reject), yet an audit must finish in
//! milliseconds. Besag & Clifford's sequential rule ("Sequential Monte Carlo p-values",
//! Biometrika 78, 1991) reconciles them: draw permutations until `stop_after` of them reach the
//! observed statistic (then p = stop_after / draws) or `max_permutations` are spent (then
//! p = (1 + exceedances) / (1 + draws)). Both are exact p-values under exchangeability, and an
//! unremarkable sample stops after a few dozen draws; only a sample that looks like drift pays
//! for the full budget.

use serde::Serialize;

use super::Calibration;
use super::rng::Rng;

/// How many permutations a test may draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PermutationBudget {
    pub max_permutations: u64,
    /// Besag–Clifford h: stop once this many permuted statistics reached the observed one.
    pub stop_after: u64,
}

/// Smallest p a budget must resolve, relative to the level it is tested at. Down to level / 5
/// keeps the Monte-Carlo decision noise small at the rejection boundary (a true p of level / 3
/// is still rejected with probability 0.99) while a drifted pin's audit, which spends the whole
/// budget, stays around 20 ms. Any budget gives a valid p-value; this only trades power at the
/// boundary for time.
const RESOLUTION: f64 = 5.0;

/// The most permutations one test draws: resolves a level of 10⁻⁶, the daemon's own look at a
/// behaviour audit long after a lock (`stats::sequential::own_look`: 1.4·10⁻⁵ at the defaults,
/// times the smallest test weight, 1/8). Only a sample that looks changed spends it (an
/// unremarkable one stops after `stop_after` exceedances): on the real model, a requantized
/// audit took 49.6 s with it against 29.8 s without (BENCHMARKS.md, "Lifetime false alarms and
/// detection delay").
pub const MAX_PERMUTATIONS: u64 = 4_999_999;

impl PermutationBudget {
    /// B = 999, as in most of the literature; for α = 0.05-style single tests.
    pub const CLASSIC: PermutationBudget = PermutationBudget {
        max_permutations: 999,
        stop_after: 20,
    };

    /// A budget that can resolve p-values well below `level` (the strictest Holm threshold,
    /// α / number of tests), between 999 and `MAX_PERMUTATIONS`.
    #[must_use]
    pub fn resolving(level: f64) -> PermutationBudget {
        let wanted = (RESOLUTION / level.max(1e-12)).ceil() - 1.0;
        PermutationBudget {
            max_permutations: wanted.clamp(999.0, MAX_PERMUTATIONS as f64) as u64,
            stop_after: 20,
        }
    }
}

/// The sequential permutation p-value of `observed` against statistics `draw` produces.
/// Ties count as exceedances (a relative tolerance absorbs summation-order rounding), which can
/// only make p larger, never invalid.
pub fn sequential_p(
    observed: f64,
    budget: PermutationBudget,
    seed: u64,
    mut draw: impl FnMut(&mut Rng) -> f64,
) -> (f64, Calibration) {
    let mut rng = Rng::new(seed);
    let floor = observed - (1e-9 * observed.abs() + 1e-14);
    let mut exceedances = 0u64;
    let mut permutations = 0u64;
    while permutations < budget.max_permutations {
        permutations += 1;
        if draw(&mut rng) >= floor {
            exceedances += 1;
            if exceedances == budget.stop_after {
                let p = exceedances as f64 / permutations as f64;
                return (p, permutation(permutations, exceedances, seed));
            }
        }
    }
    let p = (1 + exceedances) as f64 / (1 + permutations) as f64;
    (p, permutation(permutations, exceedances, seed))
}

fn permutation(permutations: u64, exceedances: u64, seed: u64) -> Calibration {
    Calibration::Permutation {
        permutations,
        exceedances,
        seed,
    }
}

#[cfg(test)]
mod tests {
    use super::{PermutationBudget, sequential_p};
    use crate::stats::Calibration;
    use crate::stats::rng::Rng;

    #[test]
    fn budgets_resolve_the_level() {
        let cases = [
            (0.05, 999),
            (0.001, 4_999),
            (0.001 / 8.0, 39_999),
            (1e-5, 499_999),
            (1e-9, 4_999_999),
        ];
        for (level, want) in cases {
            assert_eq!(
                PermutationBudget::resolving(level).max_permutations,
                want,
                "{level}"
            );
        }
    }

    #[test]
    fn stops_early_when_the_observation_is_typical_and_runs_out_when_extreme() {
        let budget = PermutationBudget::CLASSIC;
        let (p, cal) = sequential_p(0.5, budget, 1, Rng::next_f64);
        let Calibration::Permutation { permutations, .. } = cal else {
            panic!("{cal:?}")
        };
        assert!(permutations < 100 && p > 0.2, "{p} after {permutations}");
        let (p, cal) = sequential_p(2.0, budget, 1, Rng::next_f64);
        assert!((p - 1.0 / 1000.0).abs() < 1e-15, "{cal:?}");
    }

    #[test]
    fn sequential_p_is_uniform_under_the_null() {
        // The observation is itself one more draw from the null: P(p ≤ u) ≤ u for all u.
        let mut seeds = Rng::new(99);
        let runs: u32 = 4000;
        let ps: Vec<f64> = (0..runs)
            .map(|run| {
                let observed = seeds.next_f64();
                sequential_p(
                    observed,
                    PermutationBudget::CLASSIC,
                    u64::from(run),
                    Rng::next_f64,
                )
                .0
            })
            .collect();
        for u in [0.01, 0.05, 0.2, 0.5] {
            let rate = ps.iter().filter(|&&p| p <= u).count() as f64 / f64::from(runs);
            let se = (u * (1.0 - u) / f64::from(runs)).sqrt();
            assert!(rate <= u + 3.0 * se, "P(p ≤ {u}) = {rate}");
        }
    }
}
