//! The Neyman–Pearson ceiling: the likelihood-ratio test that knows both models exactly.
//!
//! No test can have more power at the same α and n. Bernoulli and normal oracles are exact
//! (closed form); for the others the statistic Σ ln q(x)/p(x) is simulated, its null quantile
//! taken from many draws under P.

use modelpin::stats::rng::Rng;
use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::factorial::ln_binomial;

use crate::harness::{rate, upper_quantile};

/// ln P(X = k) for X ~ Binomial(n, p).
pub fn ln_binomial_pmf(n: u64, k: u64, p: f64) -> f64 {
    ln_binomial(n, k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()
}

pub fn binomial_cdf(n: u64, k: i64, p: f64) -> f64 {
    if k < 0 {
        return 0.0;
    }
    (0..=(k as u64).min(n))
        .map(|i| ln_binomial_pmf(n, i, p).exp())
        .sum::<f64>()
        .min(1.0)
}

/// Exact NP test of p0 against p1 < p0 with n calls: reject when passes ≤ c, c the largest with
/// P0(S ≤ c) ≤ α. Returns its power.
pub fn binomial_power(n: u64, p0: f64, p1: f64, alpha: f64) -> f64 {
    let mut c: i64 = -1;
    while binomial_cdf(n, c + 1, p0) <= alpha {
        c += 1;
    }
    binomial_cdf(n, c, p1)
}

/// Smallest n whose exact NP test reaches `target` power.
pub fn binomial_n(p0: f64, p1: f64, alpha: f64, target: f64) -> u64 {
    (1..1_000_000)
        .find(|&n| binomial_power(n, p0, p1, alpha) >= target)
        .expect("finite")
}

/// One-sided z-test on the mean of logs, known σ: n = ⌈((z_α + z_β) σ / δ)²⌉ — for log-normal
/// lengths the NP statistic Σ ln x is exactly normal.
pub fn normal_n(delta: f64, sigma: f64, alpha: f64, target: f64) -> u64 {
    let z = Normal::standard();
    let total = z.inverse_cdf(1.0 - alpha) + z.inverse_cdf(target);
    ((total * sigma / delta).powi(2)).ceil() as u64
}

/// Power of the simulated NP test: `llr(rng, from_q)` draws one sample of size n from Q (or P)
/// and returns its Σ ln q/p.
pub fn simulated_power(alpha: f64, seed: u64, llr: impl Fn(&mut Rng, bool) -> f64 + Sync) -> f64 {
    let threshold = upper_quantile(alpha, 20_000, seed, |rng| llr(rng, false));
    rate(4_000, seed ^ 1, |rng| llr(rng, true) > threshold)
}
