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

#[cfg(test)]
mod tests {
    use super::holm;

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
