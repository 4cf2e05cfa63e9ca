//! Scenarios with one number per call: pass rate (S1), categorical answers (S3), lengths (S4).

use modelpin::stats::rng::Rng;
use modelpin::stats::{
    PermutationBudget, Rate, answers_homogeneity, fisher_pass_rate, mann_whitney,
};

use crate::harness::{rate, smallest_n};
use crate::models::{Categorical, LogNormal};
use crate::oracle::{binomial_cdf, binomial_n, ln_binomial_pmf, normal_n, simulated_power};
use crate::table::{Row, rate_text};

pub const ALPHA: f64 = 0.01;
pub const TARGET: f64 = 0.95;
pub const NULL_RUNS: u64 = 10_000;
const POWER_RUNS: u64 = 2_000;

/// Whether an empirical false-alarm rate is within α + 2 SE.
pub fn calibrated(far: f64, alpha: f64, runs: u64) -> bool {
    far <= alpha + 2.0 * crate::harness::se(alpha, runs)
}

/// S1: pass rate 0.90 → 0.80 against a 1000-call baseline, Fisher one-sided.
pub fn pass_rate() -> Row {
    let (n0, p0, p1) = (1000, 0.9, 0.8);
    let power = |n: usize| fisher_power(n0, n as u64, p0, p1);
    let n = smallest_n(TARGET, 50, 2000, power).expect("reached");
    let at_260 = power(260);
    let far = rate(NULL_RUNS, 11, |rng| {
        let s0 = binomial_draw(n0, p0, rng);
        let s = binomial_draw(n as u64, p0, rng);
        fisher_pass_rate(Rate::new(s0, n0), Rate::new(s, n as u64)).p_value <= ALPHA
    });
    let exact_far = fisher_power(n0, n as u64, p0, p0);
    let oracle = binomial_n(p0, p1, ALPHA, TARGET);
    Row {
        scenario: "S1 pass rate 0.90 → 0.80".into(),
        detector: "Fisher exact, one-sided".into(),
        design: format!("{n0} vs n"),
        n_modelpin: Some(n.to_string()),
        n_oracle: Some(oracle),
        power: format!("{at_260:.3} at n = 260 (exact)"),
        false_alarms: format!(
            "{} at n = {n}; exact {exact_far:.4}",
            rate_text(far, NULL_RUNS)
        ),
        target: "95% power within 260 calls".into(),
        met: Some(n <= 260 && calibrated(far, ALPHA, NULL_RUNS)),
    }
}

/// Exact power of the one-sided Fisher test: Σ over baseline passes s0 of
/// P(s0) · P(current passes ≤ the largest s still rejected given s0).
fn fisher_power(n0: u64, n: u64, p0: f64, p_now: f64) -> f64 {
    (0..=n0)
        .map(|s0| (s0, ln_binomial_pmf(n0, s0, p0).exp()))
        .filter(|&(_, w)| w > 1e-14)
        .map(|(s0, w)| w * binomial_cdf(n, critical(s0, n0, n), p_now))
        .sum()
}

/// Largest current pass count the test rejects at α (−1: none); p grows with s.
fn critical(s0: u64, n0: u64, n: u64) -> i64 {
    let rejects = |s: u64| fisher_pass_rate(Rate::new(s0, n0), Rate::new(s, n)).p_value <= ALPHA;
    let (mut low, mut high) = (-1i64, i64::try_from(n).expect("small") + 1);
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if rejects(mid as u64) {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

fn binomial_draw(n: u64, p: f64, rng: &mut Rng) -> u64 {
    (0..n).filter(|_| rng.next_f64() < p).count() as u64
}

const LABELS: [&str; 4] = ["A", "B", "C", "D"];

fn answers(model: &Categorical, n: usize, rng: &mut Rng) -> Vec<&'static str> {
    (0..n).map(|_| LABELS[model.draw(rng)]).collect()
}

/// S3: categorical shift against a 2000-call baseline, Pearson X² homogeneity.
pub fn categorical() -> Row {
    let p = Categorical::new(&[0.70, 0.20, 0.07, 0.03]);
    let q = Categorical::new(&[0.55, 0.30, 0.10, 0.05]);
    let n0 = 2000;
    let rejects = |now: &Categorical, n: usize, rng: &mut Rng| {
        let seed = rng.next_u64();
        let (b, c) = (answers(&p, n0, rng), answers(now, n, rng));
        answers_homogeneity(&b, &c, PermutationBudget::resolving(ALPHA), seed).p_value <= ALPHA
    };
    let n = smallest_n(TARGET, 50, 2000, |n| {
        rate(POWER_RUNS, 21, |rng| rejects(&q, n, rng))
    });
    let far = rate(NULL_RUNS, 22, |rng| rejects(&p, n.unwrap_or(250), rng));
    let llr: Vec<f64> = p
        .probs
        .iter()
        .zip(&q.probs)
        .map(|(a, b)| (b / a).ln())
        .collect();
    let oracle = smallest_n(TARGET, 20, 2000, |m| {
        simulated_power(ALPHA, 23, |rng, alt| {
            let model = if alt { &q } else { &p };
            (0..m).map(|_| llr[model.draw(rng)]).sum()
        })
    });
    scalar_row(
        "S3 answers (.70,.20,.07,.03) → (.55,.30,.10,.05)",
        "Pearson X² (χ², df 3)",
        n0,
        (n, oracle),
        (far, n.unwrap_or(250)),
    )
}

/// S4: log-normal lengths, median +10%, sd(log) 0.3, against a 2000-call baseline.
pub fn length() -> Row {
    let before = LogNormal {
        median: 100.0,
        sigma: 0.3,
    };
    let after = LogNormal {
        median: 110.0,
        ..before
    };
    let n0 = 2000;
    let rejects = |now: LogNormal, n: usize, rng: &mut Rng| {
        let b: Vec<f64> = (0..n0).map(|_| before.draw(rng)).collect();
        let c: Vec<f64> = (0..n).map(|_| now.draw(rng)).collect();
        mann_whitney(&b, &c).p_value <= ALPHA
    };
    let n = smallest_n(TARGET, 50, 2000, |n| {
        rate(POWER_RUNS, 31, |rng| rejects(after, n, rng))
    });
    let far = rate(NULL_RUNS, 32, |rng| rejects(before, n.unwrap_or(200), rng));
    let oracle = normal_n(1.1f64.ln(), 0.3, ALPHA, TARGET) as usize;
    scalar_row(
        "S4 lengths log-normal, median +10%, sd(log) 0.3",
        "Mann–Whitney U, two-sided",
        n0,
        (n, Some(oracle)),
        (far, n.unwrap_or(200)),
    )
}

fn scalar_row(
    scenario: &str,
    detector: &str,
    n0: usize,
    (n, oracle): (Option<usize>, Option<usize>),
    (far, far_n): (f64, usize),
) -> Row {
    let efficiency = match (n, oracle) {
        (Some(n), Some(o)) => o as f64 / n as f64,
        _ => 0.0,
    };
    Row {
        scenario: scenario.into(),
        detector: detector.into(),
        design: format!("{n0} vs n"),
        n_modelpin: n.map(|n| n.to_string()),
        n_oracle: oracle.map(|o| o as u64),
        power: format!("{TARGET} at n (by definition)"),
        false_alarms: format!("{} at n = {far_n}", rate_text(far, NULL_RUNS)),
        target: "efficiency ≥ 0.65".into(),
        met: Some(efficiency >= 0.65 && calibrated(far, ALPHA, NULL_RUNS)),
    }
}
