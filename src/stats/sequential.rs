//! Evidence that accumulates across a pin's audits, with a false-alarm guarantee that holds
//! however long the daemon runs.
//!
//! Every audit of a pin is judged against one lock, and a lock that happened to be unusual makes
//! every later audit more likely to reject: per-audit p-values are valid over locks, not given
//! one, so multiplying them (or e-values made from them) over time would drift to an alarm on
//! such a lock. This detector never compares an audit with a nominal distribution. It compares
//! it with the audits before it:
//!
//! 1. **Strangeness.** An audit's strangeness is a fixed function of the audit and the lock (the
//!    smallest Holm-adjusted p-value of its behaviour tests, as `-ln p`, in `BIN`-wide bins).
//!    While the model is unchanged, the audits of one lock are independent draws of one
//!    distribution *given that lock*, however unusual the lock is.
//! 2. **Conformal p-value.** Ranking each audit's strangeness among all since the lock, ties
//!    broken by an independent uniform draw, gives p-values that are independent and exactly
//!    uniform under that null (the smoothed conformal p-value: Vovk, Nouretdinov & Gammerman
//!    2003, "Testing exchangeability on-line", ICML). The ranks need only the histogram of the
//!    bins, so the state is bounded (`BINS` counts) however long the pin is watched.
//! 3. **E-value.** The mixture calibrator `f(p) = ∫₀¹ κ p^(κ−1) dκ = (1 − p + p ln p) / (p ln² p)`
//!    turns each into an e-value, `E[f(p)] = 1` for uniform `p` (Vovk & Wang 2021, "E-values:
//!    calibration, combination and applications", Ann. Statist. 49(3), §2).
//! 4. **Change detector.** The Shiryaev–Roberts statistic `R_t = (1 + R_{t−1}) e_t`, `R_0 = 0`,
//!    alarms at `R_t ≥ A`. Under the null `R_t − t` is a martingale, so the mean number of audits
//!    to a false alarm is at least `A` (the conformal Shiryaev–Roberts procedure of Vovk, Petej,
//!    Nouretdinov, Ahlberg, Carlsson & Gammerman 2021, "Retrain or not retrain: conformal test
//!    martingales for change-point detection", PMLR 152).
//!
//! What it assumes: the audits of one lock are independent and identically distributed while the
//! model is unchanged (same plan, same probes, the provider's randomness fresh per call). What
//! it cannot see: a change already present at the first audit after the lock (every audit is
//! then equally strange), and, because changed audits join the ranks, a change within the first
//! days after a lock (after 24 unchanged audits it was mostly never caught). And it is slow for
//! a large change: its e-values are bounded by the ranks, so even audits stranger than all
//! before need several to reach the threshold. So every audit also looks on its own
//! (`own_look`): the early ones at a level near `alpha`, the later ones at `later_level`, a
//! share of the yearly rate, which a large change passes at once. BENCHMARKS.md measures the
//! delay by how many unchanged audits came before.

use std::collections::BTreeMap;

/// Bins per unit of `-ln p`: a bin spans p-values within a factor of `e^(1/4)` ≈ 1.28.
pub const BIN: f64 = 4.0;
/// Bins kept: strangeness past the last bin (`p < e^(−64)` ≈ 1.6·10⁻²⁸) counts in it.
pub const BINS: u16 = 256;

/// The bin of an audit whose smallest adjusted p-value is `p` (clamped into `(0, 1]`).
#[must_use]
pub fn bin_of(p: f64) -> u16 {
    let p = if p.is_nan() {
        1.0
    } else {
        p.clamp(f64::MIN_POSITIVE, 1.0)
    };
    let strangeness = -p.ln() * BIN;
    // `as` saturates; the bins past the last fold into it.
    (strangeness.floor() as u16).min(BINS - 1)
}

/// The smoothed conformal p-value of an audit in bin `bin` among the earlier audits `seen`
/// (bin → count), with `theta` uniform in `(0, 1)` breaking ties: the share of audits, this one
/// included, at least as strange.
#[must_use]
pub fn conformal_p(seen: &BTreeMap<u16, u64>, bin: u16, theta: f64) -> f64 {
    let stranger: u64 = seen.range(bin.saturating_add(1)..).map(|(_, n)| n).sum();
    let equal = seen.get(&bin).copied().unwrap_or(0) + 1;
    let all = seen.values().sum::<u64>() + 1;
    (stranger as f64 + theta * equal as f64) / all as f64
}

/// The mixture calibrator: an e-value from a p-value in `(0, 1]`.
#[must_use]
pub fn calibrate(p: f64) -> f64 {
    let p = p.clamp(f64::MIN_POSITIVE, 1.0);
    let x = -p.ln();
    if x < 1e-4 {
        // (1 − e^−x − x e^−x) / (e^−x x²) = 1/2 + x/6 + O(x²).
        return 0.5 + x / 6.0;
    }
    (1.0 - p - p * x) / (p * x * x)
}

/// The share of the yearly false-alarm budget that later audits' own looks spend; the
/// detector has the rest.
pub const LOOK_SHARE: f64 = 0.5;

/// The statistic's threshold for at most `(1 − LOOK_SHARE) · false_alarms_per_year` false alarms
/// a year on average at `audits_per_year` audits: the mean number of audits to a false alarm is
/// at least this.
#[must_use]
pub fn threshold(audits_per_year: f64, false_alarms_per_year: f64) -> f64 {
    (audits_per_year / (false_alarms_per_year * (1.0 - LOOK_SHARE))).max(1.0)
}

/// The level of a later audit's own look: `LOOK_SHARE · false_alarms_per_year` spread over the
/// year's audits (1.4·10⁻⁵ at 350 behaviour audits a year and 0.01), never above an early
/// audit's. Each audit's own p-value is valid over locks, so these looks cost that share of the
/// yearly rate on average over locks; given one unusual lock they may cost more, which the
/// detector's ranks do not (`weigh` in `alert::lifetime`).
#[must_use]
pub fn later_level(audits_per_year: f64, false_alarms_per_year: f64, alpha: f64) -> f64 {
    (LOOK_SHARE * false_alarms_per_year / audits_per_year.max(1.0)).min(alpha / EARLY_SHARE)
}

/// Audits after a lock that look on their own at an early audit's level: until the detector
/// has this many to rank against, a change soon after the lock would join the ranks and hide
/// (BENCHMARKS.md: after 96 unchanged audits it is caught within a day; after 24, mostly not at
/// all).
pub const EARLY_AUDITS: u64 = 72;

/// The level of an early audit's own look after the first: `alpha / EARLY_SHARE`, so the first
/// `EARLY_AUDITS` cost at most `alpha · (1 + 71/8)` ≈ `9.9 · alpha` false alarms per lock.
pub const EARLY_SHARE: f64 = 8.0;

/// Which own look the `k`-th audit weighed after a lock (1-based) gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// The first audit after the lock, at `alpha`.
    First,
    /// The rest of the first `EARLY_AUDITS`, at `alpha / EARLY_SHARE`.
    Early,
    /// Every audit after them, at `later_level`.
    Later,
}

impl Look {
    #[must_use]
    pub fn at(k: u64) -> Look {
        match k {
            0 | 1 => Look::First,
            k if k <= EARLY_AUDITS => Look::Early,
            _ => Look::Later,
        }
    }

    /// The level this look rejects and alarms at; `later` is `later_level`'s.
    #[must_use]
    pub fn level(self, alpha: f64, later: f64) -> f64 {
        match self {
            Look::First => alpha,
            Look::Early => alpha / EARLY_SHARE,
            Look::Later => later,
        }
    }
}

/// The level at which the `k`-th audit weighed after a lock (1-based) rejects on its own and
/// alarms: `alpha` for the first, `alpha / EARLY_SHARE` for the rest of the first
/// `EARLY_AUDITS`, `later` (`later_level`) after them.
#[must_use]
pub fn own_look(k: u64, alpha: f64, later: f64) -> f64 {
    Look::at(k).level(alpha, later)
}

/// The Shiryaev–Roberts step, kept finite.
#[must_use]
pub fn shiryaev_roberts(previous: f64, e: f64) -> f64 {
    ((1.0 + previous.max(0.0)) * e).min(1e300)
}

/// A uniform draw in `(0, 1)` fixed by `key` (an audit's id): the tie-break of its conformal
/// p-value, the same every time the audit is weighed again.
#[must_use]
pub fn tie_break(key: &str) -> f64 {
    let mut rng = crate::stats::rng::Rng::new(crate::stats::rng::fnv1a(key.as_bytes()));
    // Never exactly 0: the p-value stays positive.
    (rng.next_f64() + f64::EPSILON).min(1.0 - f64::EPSILON)
}

/// One pin's detector state: the bins seen and the statistic.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detector {
    pub seen: BTreeMap<u16, u64>,
    pub statistic: f64,
}

/// What one audit did to the detector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub conformal_p: f64,
    pub e_value: f64,
    pub statistic: f64,
}

impl Detector {
    /// Weighs one audit whose smallest adjusted p-value is `p`, tie broken by `theta`.
    pub fn step(&mut self, p: f64, theta: f64) -> Step {
        let bin = bin_of(p);
        let conformal_p = conformal_p(&self.seen, bin, theta);
        let e_value = calibrate(conformal_p);
        self.statistic = shiryaev_roberts(self.statistic, e_value);
        let count = self.seen.entry(bin).or_insert(0);
        *count = count.saturating_add(1);
        Step {
            conformal_p,
            e_value,
            statistic: self.statistic,
        }
    }

    /// Audits weighed so far.
    #[must_use]
    pub fn audits(&self) -> u64 {
        self.seen.values().fold(0, |a, n| a.saturating_add(*n))
    }

    /// Folds bins past the last (a damaged or foreign state) into it, so the state stays within
    /// `BINS` counts.
    pub fn bound(&mut self) {
        let past: u64 = self.seen.range(BINS..).map(|(_, n)| n).sum();
        self.seen.retain(|bin, _| *bin < BINS);
        if past > 0 {
            *self.seen.entry(BINS - 1).or_insert(0) += past;
        }
        if !self.statistic.is_finite() || self.statistic < 0.0 {
            self.statistic = 0.0;
        }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact: these values are computed, not measured
mod tests {
    use super::*;

    #[test]
    fn bins_are_quarter_nats_of_strangeness_and_saturate() {
        for (p, bin) in [
            (1.0, 0),
            (0.9, 0),
            (0.7, 1),
            (0.5, 2),
            (0.05, 11),
            (0.001, 27),
            (1e-28, 255),
            (0.0, 255),
            (-1.0, 255),
            (f64::NAN, 0),
            (2.0, 0),
        ] {
            assert_eq!(bin_of(p), bin, "p = {p}");
        }
    }

    #[test]
    fn a_conformal_p_value_is_the_share_at_least_as_strange_with_ties_split() {
        let seen: BTreeMap<u16, u64> = [(0, 5), (3, 3), (9, 1)].into();
        // 9 earlier audits and this one: 10 in all.
        for (bin, theta, p) in [
            (20, 0.5, 0.05), // stranger than all: only itself, half counted
            (9, 1.0, 0.2),   // ties the strangest: it and that one
            (3, 0.0, 0.1),   // one stranger, ties not counted
            (3, 1.0, 0.5),   // one stranger and four equal
            (0, 1.0, 1.0),   // as ordinary as possible
        ] {
            let got = conformal_p(&seen, bin, theta);
            assert!((got - p).abs() < 1e-12, "bin {bin}: {got} vs {p}");
        }
    }

    /// Under the null the conformal p-value is exactly uniform: over every rank the audit can
    /// take among `n` distinct earlier ones and a uniform tie-break, P(p ≤ u) = u.
    #[test]
    fn under_exchangeability_the_conformal_p_value_is_uniform() {
        let n = 9u16;
        let seen: BTreeMap<u16, u64> = (0..n).map(|b| (b * 2 + 1, 1)).collect();
        for u in [0.05, 0.1, 0.33, 0.5, 0.9] {
            // The new audit falls below, between or above the earlier ones (even bins), each of
            // the n + 1 places equally likely; theta uniform on a fine grid.
            let mut below = 0usize;
            let mut all = 0usize;
            for place in 0..=n {
                let bin = 2 * place;
                for k in 0..1000 {
                    let theta = (f64::from(k) + 0.5) / 1000.0;
                    below += usize::from(conformal_p(&seen, bin, theta) <= u);
                    all += 1;
                }
            }
            let share = below as f64 / all as f64;
            assert!((share - u).abs() < 2e-3, "P(p ≤ {u}) = {share}");
        }
    }

    #[test]
    fn the_calibrator_integrates_to_one_and_pays_for_small_p_values() {
        // ∫₀¹ f(p) dp = 1: midpoint rule on a log grid (f ~ 1/(p ln² p) near 0).
        let mut total = 0.0;
        let steps = 200_000;
        let (lo, hi) = (1e-300f64.ln(), 0.0f64);
        for i in 0..steps {
            let a = (lo + (hi - lo) * f64::from(i) / f64::from(steps)).exp();
            let b = (lo + (hi - lo) * f64::from(i + 1) / f64::from(steps)).exp();
            total += calibrate(f64::midpoint(a.ln(), b.ln()).exp()) * (b - a);
        }
        // The mass below 1e-300 is 1/ln(1e300) ≈ 0.0014 (∫₀^q f ≈ 1/(−ln q)).
        assert!((total + 1.0 / 690.8 - 1.0).abs() < 5e-4, "∫ f = {total}");
        for (p, e) in [(1.0, 0.5), (0.5, 0.6386), (0.01, 4.4506), (0.001, 20.79)] {
            assert!(
                (calibrate(p) - e).abs() / e < 2e-3,
                "f({p}) = {}",
                calibrate(p)
            );
        }
        assert!(calibrate(1.0 - 1e-9) > 0.49 && calibrate(1.0 - 1e-9) < 0.51);
        assert!(calibrate(0.0).is_finite());
    }

    #[test]
    fn the_statistic_grows_on_strange_audits_and_stays_finite() {
        assert_eq!(shiryaev_roberts(0.0, 2.0), 2.0);
        assert_eq!(shiryaev_roberts(3.0, 0.5), 2.0);
        assert_eq!(shiryaev_roberts(-1.0, 2.0), 2.0);
        assert!(shiryaev_roberts(1e300, 1e300).is_finite());
        let mut d = Detector::default();
        for i in 0..50 {
            d.step(0.5, tie_break(&format!("a{i}")));
        }
        let quiet = d.statistic;
        for i in 0..10 {
            d.step(1e-6, tie_break(&format!("b{i}")));
        }
        assert!(
            d.statistic > 100.0 * quiet.max(1.0),
            "{quiet} → {}",
            d.statistic
        );
        assert_eq!(d.audits(), 60);
    }

    #[test]
    fn a_damaged_state_is_bounded_again() {
        let mut d = Detector {
            seen: [(3, 2), (300, 4), (u16::MAX, 1)].into(),
            statistic: f64::NAN,
        };
        d.bound();
        assert_eq!(d.seen, [(3, 2), (255, 5)].into());
        assert_eq!(d.statistic, 0.0);
    }

    #[test]
    fn own_looks_and_threshold_share_the_yearly_rate() {
        // (audits a year, false alarms a year, alpha) → (threshold, later level)
        for (n, f, alpha, a, later) in [
            (350.0, 0.01, 0.001, 70_000.0, 0.5 * 0.01 / 350.0),
            (8_760.0, 0.01, 0.001, 1_752_000.0, 0.5 * 0.01 / 8_760.0),
            // A lenient rate: the later look never above an early audit's.
            (24.0, 12.0, 0.001, 4.0, 0.001 / 8.0),
            (1.0, 12.0, 0.5, 1.0, 0.5 / 8.0),
        ] {
            assert!(
                (threshold(n, f) - a).abs() < 1e-6,
                "{n} {f}: {}",
                threshold(n, f)
            );
            assert!((later_level(n, f, alpha) - later).abs() < 1e-15, "{n} {f}");
            // A year's own looks and the detector's mean rate add up to at most f.
            assert!(n * later_level(n, f, alpha) + n / threshold(n, f) <= f + 1e-12);
        }
        let later = later_level(350.0, 0.01, 0.001);
        assert!((later - 1.428_571e-5).abs() < 1e-10);
        for (k, look, level) in [
            (0, Look::First, 0.001),
            (1, Look::First, 0.001),
            (2, Look::Early, 0.000_125),
            (72, Look::Early, 0.000_125),
            (73, Look::Later, later),
            (10_000, Look::Later, later),
        ] {
            assert_eq!(Look::at(k), look, "audit {k}");
            assert_eq!(own_look(k, 0.001, later), level, "audit {k}");
        }
    }

    #[test]
    fn the_tie_break_is_fixed_by_the_key_and_inside_the_open_interval() {
        assert_eq!(tie_break("x"), tie_break("x"));
        assert_ne!(tie_break("x"), tie_break("y"));
        for i in 0..1000 {
            let t = tie_break(&i.to_string());
            assert!(t > 0.0 && t < 1.0);
        }
    }
}
