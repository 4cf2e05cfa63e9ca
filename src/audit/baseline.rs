//! Turning one audit's observation into the pin's entry in `modelpin.lock`.

use crate::audit::Observation;
use crate::audit::judge::{served_counts, upstream_counts};
use crate::config::{Pin, Probe};
use crate::lock::{LockedPin, LockedPrice, LockedProbe, PriceSource};

/// The baseline for a pin, or `None` when no call was answered (nothing to record).
#[must_use]
pub fn record(
    pin: &Pin,
    provider_kind: &str,
    probes: &[&Probe],
    obs: &Observation,
) -> Option<LockedPin> {
    obs.replies().next()?;
    let mut fingerprints: Vec<String> = obs
        .replies()
        .filter_map(|(_, r)| r.system_fingerprint.clone())
        .collect();
    fingerprints.sort();
    fingerprints.dedup();
    let probes = probes
        .iter()
        .filter_map(|probe| Some((probe.id.clone(), record_probe(probe, obs)?)))
        .collect();
    Some(LockedPin {
        provider: pin.provider.clone(),
        kind: provider_kind.to_owned(),
        model: pin.model.clone(),
        served_models: served_counts(obs),
        upstreams: upstream_counts(obs),
        system_fingerprints: fingerprints,
        effective_price: effective_price(pin, obs),
        probes,
        first_tokens: None,
        tiers_missing: std::collections::BTreeMap::new(),
    })
}

fn record_probe(probe: &Probe, obs: &Observation) -> Option<LockedProbe> {
    let replies: Vec<_> = obs.replies().filter(|(c, _)| c.probe == probe.id).collect();
    if replies.is_empty() {
        return None;
    }
    let mut prompt_tokens: Vec<u64> = replies.iter().filter_map(|(_, r)| r.usage.input).collect();
    prompt_tokens.sort_unstable();
    prompt_tokens.dedup();
    Some(LockedProbe {
        digest: probe.digest.clone(),
        max_tokens: probe.max_tokens,
        temperature: probe.temperature,
        prompt_tokens,
        outputs: replies.iter().map(|(_, r)| r.text.clone()).collect(),
        completion_tokens: replies.iter().filter_map(|(_, r)| r.usage.output).collect(),
    })
}

/// Per-token prices fitted by least squares to the costs the provider reported
/// (`cost ≈ a·input + b·output`); the pin's list price when the provider reports none.
fn effective_price(pin: &Pin, obs: &Observation) -> Option<LockedPrice> {
    let points: Vec<(f64, f64, f64)> = obs
        .replies()
        .filter_map(|(_, r)| {
            Some((
                r.usage.input? as f64,
                r.usage.output? as f64,
                r.reported_cost_usd?,
            ))
        })
        .collect();
    if points.is_empty() {
        return pin.price.map(|p| LockedPrice {
            input: p.input,
            output: p.output,
            source: PriceSource::List,
        });
    }
    let (input, output) = fit(&points);
    Some(LockedPrice {
        input: round_micro(input * 1e6),
        output: round_micro(output * 1e6),
        source: PriceSource::Reported,
    })
}

/// Least squares for (a, b); when input and output counts are collinear the system has no
/// unique answer, so one blended rate is used for both.
fn fit(points: &[(f64, f64, f64)]) -> (f64, f64) {
    let (mut xx, mut xy, mut yy, mut xc, mut yc) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (x, y, c) in points {
        xx += x * x;
        xy += x * y;
        yy += y * y;
        xc += x * c;
        yc += y * c;
    }
    let det = xx * yy - xy * xy;
    if det.abs() > 1e-9 * xx * yy {
        let a = (xc * yy - yc * xy) / det;
        let b = (yc * xx - xc * xy) / det;
        if a >= 0.0 && b >= 0.0 {
            return (a, b);
        }
    }
    let tokens: f64 = points.iter().map(|(x, y, _)| x + y).sum();
    let cost: f64 = points.iter().map(|(_, _, c)| c).sum();
    let blended = if tokens > 0.0 { cost / tokens } else { 0.0 };
    (blended, blended)
}

fn round_micro(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_linear_prices() {
        let points: Vec<(f64, f64, f64)> = [(10.0, 2.0), (20.0, 7.0), (15.0, 1.0), (40.0, 9.0)]
            .iter()
            .map(|(i, o)| (*i, *o, (i * 3.0 + o * 15.0) / 1e6))
            .collect();
        let (a, b) = fit(&points);
        assert!(
            (a * 1e6 - 3.0).abs() < 1e-6 && (b * 1e6 - 15.0).abs() < 1e-6,
            "{a} {b}"
        );
    }

    #[test]
    fn collinear_counts_fall_back_to_a_blended_rate() {
        let points = vec![(10.0, 1.0, 20.0 / 1e6), (20.0, 2.0, 40.0 / 1e6)];
        let (a, b) = fit(&points);
        assert!((a - b).abs() < f64::EPSILON, "one rate for both");
        assert!((a * 1e6 - 60.0 / 33.0).abs() < 1e-9);
    }
}
