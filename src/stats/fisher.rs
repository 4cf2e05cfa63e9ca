//! Fisher's exact test, one-sided: is the pass rate now lower than in the baseline?
//!
//! Exact rather than a z-test because audits are small (10 calls against a few dozen baseline
//! answers) and the false-alarm rate must hold there too. One-sided because a model that got
//! *better* at a probe is not the drift users pin against. Conditioning on the total number of
//! passes, the current passes X ~ Hypergeometric(N = n0 + n, K = s0 + s, n) under H0, and
//! p = P(X ≤ s) (detection-science §4.2).

use serde::Serialize;
use statrs::function::factorial::ln_binomial;

use super::{Calibration, Effect, TestKind, TestResult};

/// Passes out of calls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    pub passes: u64,
    pub n: u64,
    /// `passes / n`; `None` when there were no calls.
    pub rate: Option<f64>,
}

impl Rate {
    #[must_use]
    pub fn new(passes: u64, n: u64) -> Rate {
        assert!(passes <= n, "{passes} passes out of {n} calls");
        Rate {
            passes,
            n,
            rate: (n > 0).then(|| passes as f64 / n as f64),
        }
    }

    /// Counts the `true`s.
    #[must_use]
    pub fn of(outcomes: &[bool]) -> Rate {
        Rate::new(
            outcomes.iter().filter(|&&p| p).count() as u64,
            outcomes.len() as u64,
        )
    }
}

/// One-sided Fisher exact test of H1: current pass rate < baseline pass rate.
#[must_use]
pub fn fisher_pass_rate(baseline: Rate, current: Rate) -> TestResult {
    let (p_value, calibration) = if baseline.n == 0 || current.n == 0 {
        (1.0, Calibration::NoEvidence)
    } else {
        (lower_tail(baseline, current), Calibration::Exact)
    };
    TestResult {
        test: TestKind::PassRate,
        statistic: current.passes as f64,
        p_value,
        calibration,
        effect: Effect::PassRate { baseline, current },
    }
}

/// P(X ≤ s) for X ~ Hypergeometric(n0 + n, s0 + s, n), summed term by term in log space.
fn lower_tail(baseline: Rate, current: Rate) -> f64 {
    let total = baseline.n + current.n;
    let passes = baseline.passes + current.passes;
    let draws = current.n;
    let lowest = draws.saturating_sub(total - passes);
    let ln_all = ln_binomial(total, draws);
    let p: f64 = (lowest..=current.passes)
        .map(|x| (ln_binomial(passes, x) + ln_binomial(total - passes, draws - x) - ln_all).exp())
        .sum();
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::{Rate, fisher_pass_rate};
    use crate::stats::Calibration;

    fn close(got: f64, want: f64, rel: f64) -> bool {
        (got - want).abs() <= rel * want.abs().max(1e-300)
    }

    #[test]
    fn matches_published_fisher_values() {
        // (baseline passes, baseline n, current passes, current n, p)
        let cases = [
            // R `fisher.test(TeaTasting, alternative = "greater")` (?fisher.test): p = 0.2429,
            // = 17/70 exactly: P(X ≤ 1) with N = 8, K = 4, n = 4.
            (3, 4, 1, 4, 17.0 / 70.0),
            // R `fisher.test(Convictions, alternative = "less")` (?fisher.test): 0.0004652.
            // Dizygotic 2 convicted of 17 (current) vs monozygotic 10 of 13 (baseline).
            (10, 13, 2, 17, 0.000_465_180_943_362_905),
            // Wikipedia "Fisher's exact test" dieting example: one-tailed
            // (91 + 3640) / 2704156; R's two-sided p 0.002759 is twice this.
            (9, 12, 1, 12, 3731.0 / 2_704_156.0),
            // Hand: nothing extreme about equal rates; P(X ≤ 5) with N = 20, K = 10, n = 10
            // = (C(20,10)/2 + C(10,5)²/2) / C(20,10) = 0.5 + 31752 / 184756 = 0.671859...
            (5, 10, 5, 10, 0.5 + 31_752.0 / 184_756.0),
            // Hand: a single current call that failed against 3/3: P(X = 0) = 1/4.
            (3, 3, 0, 1, 0.25),
            // All calls pass everywhere: X is certain, p = 1.
            (30, 30, 10, 10, 1.0),
            // Rate went up: p close to 1, never a rejection.
            (0, 10, 10, 10, 1.0),
        ];
        for (s0, n0, s, n, want) in cases {
            let r = fisher_pass_rate(Rate::new(s0, n0), Rate::new(s, n));
            assert!(
                close(r.p_value, want, 1e-9),
                "{s0}/{n0} vs {s}/{n}: {}",
                r.p_value
            );
            assert_eq!(r.calibration, Calibration::Exact);
        }
    }

    #[test]
    fn empty_sides_carry_no_evidence() {
        for (b, c) in [
            (Rate::new(0, 0), Rate::new(0, 5)),
            (Rate::new(5, 5), Rate::new(0, 0)),
            (Rate::new(0, 0), Rate::new(0, 0)),
        ] {
            let r = fisher_pass_rate(b, c);
            assert!((r.p_value - 1.0).abs() < f64::EPSILON);
            assert_eq!(r.calibration, Calibration::NoEvidence);
        }
        assert_eq!(Rate::of(&[]).rate, None);
    }

    #[test]
    fn the_all_fail_table_is_the_floor_detectability_assumes() {
        // Every baseline call passed, every current call failed: p = 1/C(40, 10) = 1/847660528.
        let extreme = fisher_pass_rate(Rate::new(30, 30), Rate::new(0, 10)).p_value;
        assert!(close(extreme, 1.0 / 847_660_528.0, 1e-9), "{extreme}");
    }
}
