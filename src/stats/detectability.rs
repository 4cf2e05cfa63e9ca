//! Which tests can ever reject, given only the sample sizes — at lock time, to warn, and in
//! every audit, to choose the Holm family.
//!
//! Exact and permutation tests have a floor: with n₀ baseline and n current answers no labeling
//! is more extreme than the one that puts every current answer apart, so p ≥ 1/C(n₀ + n, n)
//! (twice that for two-sided Mann–Whitney; the product over probes for the stratified MMD).
//! Three baseline calls against three audit calls can never go below 0.05.
//!
//! Such a test is worse than useless in the family: it can never reject, yet it divides α for
//! the others. Following Tarone ("A modified Bonferroni method for discrete data", Biometrics
//! 46, 1990), the family is the tests whose floor is at most α/K for the smallest K with at most
//! K such tests. It depends on the sample sizes only, never on the answers, so Holm over it keeps
//! the family-wise error at α. With 30 baseline and 2 new answers per probe that leaves only the
//! MMD, which is how a swap can be caught in a handful of calls.
//!
//! At lock time the same floors say whether a baseline is too small for any alarm, and how
//! large it would have to be.

use serde::Serialize;
use statrs::function::factorial::ln_binomial;

use super::TestKind;
use super::expect::Compare;

/// What a probe will run with: its kind and the answers per side.
#[derive(Debug, Clone)]
pub struct PlannedProbe {
    pub probe_id: String,
    pub compare: Compare,
    pub has_expect: bool,
    pub baseline_n: u64,
    pub current_n: u64,
}

/// Whether one of `compare_pin`'s tests can reject.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestReach {
    pub probes: Vec<String>,
    pub test: TestKind,
    /// The most extreme data's p-value.
    pub smallest_p: f64,
    /// In the Holm family: the test can raise an alarm.
    pub reachable: bool,
    /// Baseline answers per probe that would make it reachable even with every other test in
    /// the family (at the same current n); `None` when reachable, or when no size would do.
    pub baseline_needed: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detectability {
    pub alpha: f64,
    /// α / family size: what the smallest p must beat under Holm.
    pub threshold: f64,
    pub tests: Vec<TestReach>,
    pub any_reachable: bool,
    pub all_reachable: bool,
}

/// Baselines past this are not worth suggesting.
const LARGEST_BASELINE: u64 = 1_000_000;

/// For each test `compare_pin` would run on these probes, whether it can ever reject at `alpha`.
#[must_use]
pub fn minimum_detectable(probes: &[PlannedProbe], alpha: f64) -> Detectability {
    let planned = plan(probes);
    let floors: Vec<f64> = planned
        .iter()
        .map(|(test, members)| floor(*test, &sizes(members, 0)))
        .collect();
    let in_family = family(&floors, alpha);
    let members = in_family.iter().filter(|&&f| f).count();
    let strictest = alpha / planned.len().max(1) as f64;
    let tests: Vec<TestReach> = planned
        .iter()
        .zip(floors.iter().zip(&in_family))
        .map(|((test, probes), (&smallest_p, &reachable))| TestReach {
            probes: probes.iter().map(|p| p.probe_id.clone()).collect(),
            test: *test,
            smallest_p,
            reachable,
            baseline_needed: (!reachable)
                .then(|| required_baseline(|n0| floor(*test, &sizes(probes, n0)) <= strictest))
                .flatten(),
        })
        .collect();
    Detectability {
        alpha,
        threshold: alpha / members.max(1) as f64,
        any_reachable: members > 0,
        all_reachable: members == tests.len(),
        tests,
    }
}

/// The same test list as `compare_pin` builds, from sizes alone.
fn plan(probes: &[PlannedProbe]) -> Vec<(TestKind, Vec<&PlannedProbe>)> {
    let answered: Vec<&PlannedProbe> = probes
        .iter()
        .filter(|p| p.baseline_n > 0 && p.current_n > 0)
        .collect();
    let mut planned = Vec::new();
    for &p in &answered {
        if p.has_expect {
            planned.push((TestKind::PassRate, vec![p]));
        }
        match p.compare {
            Compare::Choice => planned.push((TestKind::Answers, vec![p])),
            Compare::Text => planned.push((TestKind::Length, vec![p])),
        }
    }
    if !answered.is_empty() {
        planned.push((TestKind::Mmd, answered));
    }
    planned
}

/// (baseline, current) sizes of the members, every baseline raised to at least `n0`.
fn sizes(members: &[&PlannedProbe], n0: u64) -> Vec<(u64, u64)> {
    members
        .iter()
        .map(|p| (p.baseline_n.max(n0), p.current_n))
        .collect()
}

/// The smallest p-value `test` can produce with these (baseline, current) sizes per member:
/// Π 1/C(n₀ + n, n), doubled for the two-sided Mann–Whitney.
#[must_use]
pub fn floor(test: TestKind, sizes: &[(u64, u64)]) -> f64 {
    let tails = if test == TestKind::Length { 2.0 } else { 1.0 };
    let ln: f64 = sizes.iter().map(|&(n0, n)| ln_binomial(n0 + n, n)).sum();
    (tails * (-ln).exp()).min(1.0)
}

/// Tarone's family: with K the smallest count such that at most K floors are ≤ α/K, the tests
/// whose floor is ≤ α/K.
#[must_use]
pub fn family(floors: &[f64], alpha: f64) -> Vec<bool> {
    let within = |k: usize| floors.iter().filter(|&&f| f <= alpha / k as f64).count();
    let Some(k) = (1..=floors.len()).find(|&k| within(k) <= k) else {
        return Vec::new();
    };
    floors.iter().map(|&f| f <= alpha / k as f64).collect()
}

/// The smallest baseline size for which `enough` holds (it is monotone in the size), found by
/// doubling then bisection; `None` past `LARGEST_BASELINE`.
#[must_use]
pub fn required_baseline(enough: impl Fn(u64) -> bool) -> Option<u64> {
    let mut high = 1;
    while !enough(high) {
        high *= 2;
        if high > LARGEST_BASELINE {
            return None;
        }
    }
    let mut low = high / 2;
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if enough(mid) { high = mid } else { low = mid }
    }
    Some(high)
}

#[cfg(test)]
mod tests {
    use super::{PlannedProbe, family, minimum_detectable, required_baseline};
    use crate::stats::TestKind;
    use crate::stats::expect::Compare;

    fn probe(id: &str, compare: Compare, has_expect: bool, n0: u64, n: u64) -> PlannedProbe {
        PlannedProbe {
            probe_id: id.into(),
            compare,
            has_expect,
            baseline_n: n0,
            current_n: n,
        }
    }

    #[test]
    fn three_calls_cannot_reach_a_thousandth() {
        // Fisher, answers and MMD with 3 vs 3: smallest p = 1/C(6, 3) = 0.05 (hand) for all.
        let d = minimum_detectable(&[probe("arith", Compare::Choice, true, 3, 3)], 0.001);
        assert!(!d.any_reachable);
        assert_eq!(d.tests.len(), 3);
        let fisher = &d.tests[0];
        assert_eq!(fisher.test, TestKind::PassRate);
        assert!((fisher.smallest_p - 0.05).abs() < 1e-12);
        // Reachable with all 3 tests in the family: 1/C(n0 + 3, 3) ≤ 0.001/3 first holds at
        // n0 = 25: C(28, 3) = 3276 gives 0.000305, C(27, 3) = 2925 gives 0.000342.
        assert_eq!(fisher.baseline_needed, Some(25));
    }

    #[test]
    fn the_default_audit_can_alarm() {
        let probes = [
            probe("arith", Compare::Choice, true, 30, 10),
            probe("capital", Compare::Choice, true, 30, 10),
            probe("haiku", Compare::Text, false, 30, 10),
            probe("json", Compare::Text, true, 30, 10),
        ];
        let d = minimum_detectable(&probes, 0.001);
        // 2 + 2 + 1 + 2 per-probe tests and one MMD over all four probes.
        assert_eq!(d.tests.len(), 8);
        assert!(d.all_reachable, "{d:?}");
        assert!((d.threshold - 0.001 / 8.0).abs() < 1e-18);
        let mmd = d.tests.iter().find(|t| t.test == TestKind::Mmd).unwrap();
        assert_eq!(mmd.probes, ["arith", "capital", "haiku", "json"]);
    }

    #[test]
    fn two_calls_a_probe_leave_only_the_mmd() {
        // Per-probe floors 1/C(32, 2) = 1/496 = 0.0020 (Mann–Whitney 0.0040) are above α = 0.001;
        // the MMD's floor is (1/496)⁴.
        let probes = [
            probe("arith", Compare::Choice, true, 30, 2),
            probe("haiku", Compare::Text, false, 30, 2),
        ];
        let d = minimum_detectable(&probes, 0.001);
        let reachable: Vec<TestKind> = d
            .tests
            .iter()
            .filter(|t| t.reachable)
            .map(|t| t.test)
            .collect();
        assert_eq!(reachable, [TestKind::Mmd]);
        assert!((d.threshold - 0.001).abs() < 1e-18);
    }

    #[test]
    fn tarone_family_table() {
        // (floors, α, family): hand-applied rule, smallest K with #{floor ≤ α/K} ≤ K.
        let cases: [(&[f64], f64, &[bool]); 4] = [
            (&[], 0.01, &[]),
            (&[1e-9, 1e-9, 1e-9], 0.01, &[true, true, true]),
            // K = 1: three floors ≤ 0.01; K = 2: two ≤ 0.005 (1e-9, 0.004): family of 2.
            (&[1e-9, 0.004, 0.008], 0.01, &[true, true, false]),
            (&[0.002, 0.002, 1e-12], 0.001, &[false, false, true]),
        ];
        for (floors, alpha, want) in cases {
            assert_eq!(family(floors, alpha), want, "{floors:?}");
        }
    }

    #[test]
    fn nothing_answered_plans_nothing() {
        let d = minimum_detectable(&[probe("p", Compare::Text, true, 0, 10)], 0.01);
        assert!(d.tests.is_empty() && !d.any_reachable);
    }

    #[test]
    fn required_baseline_finds_the_boundary() {
        let cases: [(u64, Option<u64>); 3] = [(1, Some(1)), (777, Some(777)), (u64::MAX, None)];
        for (boundary, want) in cases {
            assert_eq!(required_baseline(|n| n >= boundary), want);
        }
    }
}
