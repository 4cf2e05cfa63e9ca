//! Holm's step-down adjustment: one family-wise false-alarm rate for all the tests of a pin.
//!
//! The tests of one audit share the same responses, so they are dependent; Holm controls the
//! family-wise error under any dependence (unlike Fisher's combination) and is uniformly more
//! powerful than Bonferroni (Holm, "A simple sequentially rejective multiple test procedure",
//! Scand. J. Statist. 6, 1979).

/// Holm-adjusted p-values, in the order given: p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j)).
/// A test rejects at level α exactly when its adjusted p ≤ α.
#[must_use]
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let scaled = ((m - rank) as f64 * p_values[i]).min(1.0);
        running = running.max(scaled);
        adjusted[i] = running;
    }
    adjusted
}

/// Weighted Holm-adjusted p-values (Holm 1979, §4): test i spends the share `weights[i]` of α, so
/// the tier expected to see a change gets most of the level instead of an equal cut. Tests are
/// taken in the order of p/w; p̃_(j) = max_{l ≤ j} min(1, p_(l) · Σ_{k ≥ l} w_(k) / w_(l)). The
/// family-wise error stays ≤ α under any dependence for any fixed positive weights; with equal
/// weights this is `holm`. Weights need not sum to one (they are shares of their own total).
#[must_use]
pub fn weighted_holm(p_values: &[f64], weights: &[f64]) -> Vec<f64> {
    let m = p_values.len().min(weights.len());
    let ratio = |i: usize| p_values[i] / weights[i].max(f64::MIN_POSITIVE);
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| ratio(a).total_cmp(&ratio(b)));
    let mut remaining: f64 = order.iter().map(|&i| weights[i].max(0.0)).sum();
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for &i in &order {
        let scaled = (ratio(i) * remaining).min(1.0);
        running = running.max(scaled);
        adjusted[i] = running;
        remaining -= weights[i].max(0.0);
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::{holm, weighted_holm};

    #[test]
    fn equal_weights_are_holm() {
        let p = [0.01, 0.04, 0.03, 0.005];
        let w = [2.0; 4];
        for (a, b) in weighted_holm(&p, &w).iter().zip(holm(&p)) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn weight_goes_where_the_signal_is() {
        // One test with 80 % of the level rejects at p = 0.0007 (α = 0.001), which plain Holm
        // over five tests (threshold 0.0002) would not.
        let p = [0.0007, 0.5, 0.6, 0.7, 0.9];
        let w = [0.8, 0.05, 0.05, 0.05, 0.05];
        let adjusted = weighted_holm(&p, &w);
        assert!((adjusted[0] - 0.000_875).abs() < 1e-12, "{adjusted:?}");
        assert!(holm(&p)[0] > 0.001);
    }

    #[test]
    fn the_family_wise_rate_holds_under_the_null() {
        // Independent uniform p-values: P(any adjusted p ≤ α) ≤ α.
        let mut rng = crate::stats::rng::Rng::new(5);
        let runs = 20_000;
        let w = [0.5, 0.3, 0.1, 0.05, 0.05];
        let hits = (0..runs)
            .filter(|_| {
                let p: Vec<f64> = (0..5).map(|_| rng.next_f64()).collect();
                weighted_holm(&p, &w).iter().any(|&a| a <= 0.05)
            })
            .count();
        crate::stats::assert_false_alarms_at_level(hits, runs);
    }

    #[test]
    fn matches_r_p_adjust() {
        // Hand-computed by the definition R's p.adjust(p, "holm") implements:
        // c(0.01, 0.04, 0.03, 0.005) → 0.03 0.06 0.06 0.02; c(0.5, 0.001, 0.2) → 0.5 0.003 0.4.
        let cases: [(&[f64], &[f64]); 4] = [
            (&[0.01, 0.04, 0.03, 0.005], &[0.03, 0.06, 0.06, 0.02]),
            (&[0.5, 0.001, 0.2], &[0.5, 0.003, 0.4]),
            (&[0.7], &[0.7]),
            (&[], &[]),
        ];
        for (raw, want) in cases {
            let got = holm(raw);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-12, "{raw:?} → {got:?}");
            }
        }
    }

    #[test]
    fn adjusted_values_never_exceed_one() {
        assert_eq!(holm(&[0.6, 0.9, 1.0]), vec![1.0, 1.0, 1.0]);
    }
}
