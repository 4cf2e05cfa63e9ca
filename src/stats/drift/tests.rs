use super::{DriftVerdict, ProbeSamples, Samples, compare_pin, compare_pin_resolving};
use crate::stats::expect::{Compare, Expect, Normalize};
use crate::stats::rng::Rng;
use crate::stats::{Calibration, TestKind};

/// A toy model: how it answers the four example probes of `probes/`.
struct Model {
    /// P(Sydney, Melbourne, Brisbane, Perth).
    capital: [f64; 4],
    /// P("391").
    arith: f64,
    /// Vocabulary offset of the haiku words: another model, other words.
    words: usize,
    /// P(a bare JSON object rather than a fenced one).
    json: f64,
}

const BASE: Model = Model {
    capital: [0.7, 0.2, 0.07, 0.03],
    arith: 0.9,
    words: 0,
    json: 0.9,
};

const SWAPPED: Model = Model {
    capital: [0.3, 0.5, 0.1, 0.1],
    arith: 0.6,
    words: 6,
    json: 0.3,
};

const WORDS: [&str; 12] = [
    "leaves", "fall", "softly", "gold", "wind", "quiet", "AUTUMN", "ends", "so", "fast", "now",
    "!!",
];

fn pick(rng: &mut Rng, weights: &[f64]) -> usize {
    let mut u = rng.next_f64();
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    weights.len() - 1
}

impl Model {
    fn answer(&self, probe: &str, rng: &mut Rng) -> (String, u64) {
        let text = match probe {
            "capital" => {
                ["Sydney", "Melbourne", "Brisbane", "Perth"][pick(rng, &self.capital)].to_owned()
            }
            "arith" if rng.next_f64() < self.arith => "391".to_owned(),
            "arith" => "It is 391.".to_owned(),
            "json" if rng.next_f64() < self.json => r#"{"a": 1, "b": 2}"#.to_owned(),
            "json" => "```json\n{\"a\": 1, \"b\": 2}\n```".to_owned(),
            _ => {
                let n = 3 + rng.below(4);
                let words: Vec<&str> = (0..n).map(|_| WORDS[self.words + rng.below(6)]).collect();
                words.join(" ")
            }
        };
        let tokens = text.len() as u64 / 4 + 1;
        (text, tokens)
    }

    fn samples(&self, probe: &str, n: usize, rng: &mut Rng) -> Samples {
        let (outputs, lengths) = (0..n).map(|_| self.answer(probe, rng)).unzip();
        Samples { outputs, lengths }
    }
}

fn probe(id: &str, then: &Model, now: &Model, sizes: (usize, usize), seed: u64) -> ProbeSamples {
    let mut rng = Rng::new(seed);
    let (compare, expect) = match id {
        "capital" => (
            Compare::Choice,
            Some(Expect::OneOf(vec![
                "Sydney".into(),
                "Melbourne".into(),
                "Brisbane".into(),
            ])),
        ),
        "arith" => (Compare::Choice, Some(Expect::Equals("391".into()))),
        "json" => (Compare::Text, Some(Expect::Json)),
        _ => (Compare::Text, None),
    };
    ProbeSamples {
        probe_id: id.into(),
        compare,
        expect,
        normalize: vec![Normalize::Trim],
        baseline: then.samples(id, sizes.0, &mut rng),
        current: now.samples(id, sizes.1, &mut rng),
    }
}

fn pin(then: &Model, now: &Model, sizes: (usize, usize), seed: u64) -> Vec<ProbeSamples> {
    ["arith", "capital", "haiku", "json"]
        .iter()
        .enumerate()
        .map(|(i, id)| probe(id, then, now, sizes, seed * 8 + i as u64))
        .collect()
}

#[test]
fn the_null_rejects_at_most_alpha_plus_two_standard_errors() {
    let (alpha, runs) = (0.05, 400u32);
    let rejections = (0..runs)
        .filter(|&run| {
            let seed = u64::from(run);
            compare_pin(&pin(&BASE, &BASE, (30, 10), seed), alpha, seed).drift
        })
        .count();
    let rate = rejections as f64 / f64::from(runs);
    let se = (alpha * (1.0 - alpha) / f64::from(runs)).sqrt();
    assert!(rate <= alpha + 2.0 * se, "family-wise false alarms {rate}");
}

#[test]
fn a_swapped_model_is_caught_at_the_default_alpha() {
    let v = compare_pin(&pin(&BASE, &SWAPPED, (30, 10), 1), 0.001, 77);
    assert!(v.drift, "{v:#?}");
    assert_eq!(v.tests.len(), 8);
    assert!(v.skipped.is_empty());
    for t in &v.tests {
        let adjusted = t
            .adjusted_p
            .expect("30 vs 10 puts every test in the family");
        assert!(adjusted >= t.result.p_value);
        assert_eq!(t.rejected, adjusted <= 0.001);
    }
    let text = v
        .tests
        .iter()
        .find(|t| t.result.test == TestKind::Mmd)
        .unwrap();
    assert_eq!(text.probes, ["arith", "capital", "haiku", "json"]);
    assert!(matches!(
        text.result.calibration,
        Calibration::Permutation { .. }
    ));
}

#[test]
fn resolving_deeper_tells_small_p_values_apart_without_changing_the_verdict() {
    let probes = pin(&BASE, &SWAPPED, (30, 10), 1);
    let permutations = |v: &DriftVerdict| {
        v.tests
            .iter()
            .filter_map(|t| match t.result.calibration {
                Calibration::Permutation { permutations, .. } => Some(permutations),
                _ => None,
            })
            .max()
            .unwrap()
    };
    let smallest = |v: &DriftVerdict| {
        v.tests
            .iter()
            .filter_map(|t| t.adjusted_p)
            .fold(1.0, f64::min)
    };
    let at_alpha = compare_pin(&probes, 0.01, 77);
    let deep = compare_pin_resolving(&probes, |_| Vec::new(), 0.01, Some(0.001), 77);
    assert_eq!(at_alpha.drift, deep.drift);
    // A swap's strongest test spends its whole budget, ten times larger when resolving ten
    // times below alpha.
    let (shallow_draws, deep_draws) = (permutations(&at_alpha), permutations(&deep));
    assert!(shallow_draws >= 999, "{shallow_draws}");
    assert_eq!(deep_draws + 1, 10 * (shallow_draws + 1));
    assert!(
        smallest(&deep) < smallest(&at_alpha) / 5.0,
        "{} vs {}",
        smallest(&deep),
        smallest(&at_alpha)
    );
    // Resolving above alpha asks nothing more.
    let shallow = compare_pin_resolving(&probes, |_| Vec::new(), 0.01, Some(0.5), 77);
    assert_eq!(shallow, at_alpha);
}

#[test]
fn the_verdict_is_reproducible_from_its_seed() {
    let probes = pin(&BASE, &SWAPPED, (30, 10), 5);
    assert_eq!(compare_pin(&probes, 0.01, 9), compare_pin(&probes, 0.01, 9));
}

#[test]
fn missing_data_is_skipped_not_rejected() {
    let empty = Samples::default();
    let mut probes = pin(&BASE, &SWAPPED, (30, 10), 2);
    probes[0].current = empty.clone();
    probes[2].baseline.lengths.clear();
    probes[3].baseline = empty;
    let v = compare_pin(&probes, 0.001, 1);
    let skipped: Vec<(&str, Option<TestKind>)> = v
        .skipped
        .iter()
        .map(|s| (s.probes[0].as_str(), s.test))
        .collect();
    assert_eq!(
        skipped,
        [
            ("arith", None),
            ("haiku", Some(TestKind::Length)),
            ("json", None)
        ]
    );
    let none = compare_pin(&[], 0.001, 1);
    assert!(!none.drift && none.tests.is_empty());
    let tiny = compare_pin(&pin(&BASE, &SWAPPED, (1, 1), 3), 0.001, 1);
    assert!(!tiny.drift, "{tiny:#?}");
}

#[test]
fn the_verdict_serializes_as_evidence() {
    let v = compare_pin(&pin(&BASE, &BASE, (30, 10), 4), 0.001, 12);
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["seed"], 12);
    let first = &json["tests"][0];
    for key in [
        "probes",
        "test",
        "statistic",
        "p_value",
        "calibration",
        "effect",
        "adjusted_p",
        "rejected",
    ] {
        assert!(first.get(key).is_some(), "{key} missing in {first}");
    }
    assert_eq!(first["effect"]["kind"], "pass_rate");
}

#[test]
fn tests_that_cannot_reject_are_reported_but_left_out_of_holm() {
    // Two new answers a probe against 30: every per-probe floor is 1/C(32, 2) > 0.001, so only
    // the MMD is in the family, and it is held to α itself rather than α/8.
    let v = compare_pin(&pin(&BASE, &SWAPPED, (30, 2), 6), 0.001, 3);
    assert_eq!(v.tests.len(), 8);
    for t in &v.tests {
        let in_family = t.result.test == TestKind::Mmd;
        assert_eq!(t.adjusted_p.is_some(), in_family, "{:?}", t.result.test);
        if in_family {
            assert!((t.adjusted_p.unwrap() - t.result.p_value).abs() < 1e-15);
        } else {
            assert!(!t.rejected);
        }
    }
}
