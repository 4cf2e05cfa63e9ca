//! Monte-Carlo plumbing shared by the scenarios: parallel runs with per-run seeds, rejection
//! rates with their standard errors, and the search for the sample size that reaches a power.
//!
//! Every run draws from its own seed, `derive_seed(scenario seed, run)`, and the same runs are
//! reused for every sample size (common random numbers), so power curves are smooth enough to
//! bisect and the whole benchmark is reproducible.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use modelpin::stats::rng::{Rng, derive_seed};

/// The fraction of `runs` for which `rejects` holds, run on all cores.
pub fn rate(runs: u64, seed: u64, rejects: impl Fn(&mut Rng) -> bool + Sync) -> f64 {
    rates(runs, seed, 1, |rng| vec![rejects(rng)])[0]
}

/// Standard error of a rate estimated from `runs` Bernoulli trials at true rate `p`.
pub fn se(p: f64, runs: u64) -> f64 {
    (p * (1.0 - p) / runs as f64).sqrt()
}

/// The smallest n in [lo, hi] with power(n) ≥ target, assuming power grows with n; `None` when
/// even `hi` falls short. Bisects to within 1% of n.
pub fn smallest_n(
    target: f64,
    lo: usize,
    hi: usize,
    power: impl Fn(usize) -> f64,
) -> Option<usize> {
    if power(hi) < target {
        return None;
    }
    let (mut low, mut high) = (lo, hi);
    if power(low) >= target {
        return Some(low);
    }
    while high - low > (low / 100).max(1) {
        let mid = low + (high - low) / 2;
        if power(mid) >= target {
            high = mid;
        } else {
            low = mid;
        }
    }
    Some(high)
}

/// The (1 − α) quantile of `draw`'s distribution from `runs` simulations: the oracle rejects
/// when its statistic exceeds it.
pub fn upper_quantile(alpha: f64, runs: u64, seed: u64, draw: impl Fn(&mut Rng) -> f64) -> f64 {
    let mut values: Vec<f64> = (0..runs)
        .map(|run| draw(&mut Rng::new(derive_seed(seed, run))))
        .collect();
    values.sort_by(f64::total_cmp);
    let index = ((1.0 - alpha) * runs as f64).ceil() as usize;
    values[index.min(values.len() - 1)]
}

/// Like `rate`, for `k` detectors judged on the same simulated data in each run.
pub fn rates(
    runs: u64,
    seed: u64,
    k: usize,
    rejects: impl Fn(&mut Rng) -> Vec<bool> + Sync,
) -> Vec<f64> {
    let hits: Vec<AtomicU64> = (0..k).map(|_| AtomicU64::new(0)).collect();
    let threads = thread::available_parallelism().map_or(1, usize::from) as u64;
    thread::scope(|scope| {
        for t in 0..threads {
            let (hits, rejects) = (&hits, &rejects);
            scope.spawn(move || {
                for run in (t..runs).step_by(threads as usize) {
                    let verdicts = rejects(&mut Rng::new(derive_seed(seed, run)));
                    for (hit, v) in hits.iter().zip(verdicts) {
                        hit.fetch_add(u64::from(v), Ordering::Relaxed);
                    }
                }
            });
        }
    });
    hits.iter()
        .map(|h| h.load(Ordering::Relaxed) as f64 / runs as f64)
        .collect()
}
