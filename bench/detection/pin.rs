//! Whole-pin scenarios through `compare_pin`: the null (family-wise false alarms after Holm), a
//! full model swap, and the small-sample calibration of each test at the audit's real sizes
//! (30 baseline answers against 10 per audit).
//!
//! The pin has the four example probes of `probes/`: `arith` (choice, equals "391"), `capital`
//! (choice, one_of the three largest cities), `haiku` (text) and `json` (text, json = true).

use std::time::Instant;

use modelpin::config::{Compare, Expect, Normalize};
use modelpin::stats::rng::Rng;
use modelpin::stats::{
    PermutationBudget, ProbeSamples, Rate, Samples, answers_homogeneity, compare_pin,
    fisher_pass_rate, mann_whitney,
};

use crate::harness::rate;
use crate::models::{Categorical, Chain, LogNormal, Markov, text};
use crate::scalar::{ALPHA, NULL_RUNS, calibrated};
use crate::table::{Row, rate_text};

const ARITH: [&str; 4] = ["391", "391.", "It is 391.", "392"];
const CITIES: [&str; 4] = ["Sydney", "Melbourne", "Brisbane", "Perth"];
const JSON: [&str; 2] = [r#"{"a": 1, "b": 2}"#, "```json\n{\"a\": 1, \"b\": 2}\n```"];
const BASELINE: usize = 30;

/// How a model answers the four probes.
struct PinModel {
    arith: Categorical,
    capital: Categorical,
    json: Categorical,
    /// Prompt 0: haiku; answers are truncated to a length drawn from `chars`.
    haiku: Chain,
    chars: (usize, usize),
}

impl PinModel {
    fn pinned() -> PinModel {
        PinModel {
            arith: Categorical::new(&[0.90, 0.04, 0.03, 0.03]),
            capital: Categorical::new(&[0.70, 0.20, 0.07, 0.03]),
            json: Categorical::new(&[0.9, 0.1]),
            haiku: Markov::random(1, 16, 48, 2.0, 91).chain(),
            chars: (24, 48),
        }
    }

    /// Another model altogether: other answer habits, another chain, shorter answers.
    fn swapped() -> PinModel {
        PinModel {
            arith: Categorical::new(&[0.55, 0.10, 0.25, 0.10]),
            capital: Categorical::new(&[0.25, 0.55, 0.05, 0.15]),
            json: Categorical::new(&[0.3, 0.7]),
            haiku: Markov::random(1, 16, 48, 2.0, 92).chain(),
            chars: (16, 40),
        }
    }

    fn answer(&self, probe: &str, rng: &mut Rng) -> String {
        match probe {
            "arith" => ARITH[self.arith.draw(rng)].to_owned(),
            "capital" => CITIES[self.capital.draw(rng)].to_owned(),
            "json" => JSON[self.json.draw(rng)].to_owned(),
            _ => {
                let (lo, hi) = self.chars;
                let keep = lo + rng.below(hi - lo + 1);
                let mut t = text(&self.haiku.draw(0, rng));
                t.truncate(keep);
                t
            }
        }
    }

    fn samples(&self, probe: &str, n: usize, rng: &mut Rng) -> Samples {
        let outputs: Vec<String> = (0..n).map(|_| self.answer(probe, rng)).collect();
        let lengths = outputs.iter().map(|o| o.len().div_ceil(4) as u64).collect();
        Samples { outputs, lengths }
    }
}

fn probes(then: &PinModel, now: &PinModel, m: usize, rng: &mut Rng) -> Vec<ProbeSamples> {
    let s = |v: &str| v.to_owned();
    let spec = [
        ("arith", Compare::Choice, Some(Expect::Equals(s("391")))),
        (
            "capital",
            Compare::Choice,
            Some(Expect::OneOf(CITIES[..3].iter().map(|c| s(c)).collect())),
        ),
        ("haiku", Compare::Text, None),
        ("json", Compare::Text, Some(Expect::Json)),
    ];
    spec.into_iter()
        .map(|(id, compare, expect)| ProbeSamples {
            probe_id: id.into(),
            compare,
            expect,
            normalize: vec![Normalize::Trim],
            baseline: then.samples(id, BASELINE, rng),
            current: now.samples(id, m, rng),
        })
        .collect()
}

fn drift(then: &PinModel, now: &PinModel, m: usize, alpha: f64, rng: &mut Rng) -> bool {
    let seed = rng.next_u64();
    compare_pin(&probes(then, now, m, rng), alpha, seed).drift
}

pub fn rows() -> Vec<Row> {
    let (p, q) = (PinModel::pinned(), PinModel::swapped());
    let mut rows = Vec::new();
    for alpha in [0.01, 0.001] {
        let far = rate(NULL_RUNS, 101, |rng| drift(&p, &p, 10, alpha, rng));
        rows.push(Row {
            scenario: "Null, whole pin (4 probes, 8 tests, Holm)".into(),
            detector: format!("compare_pin, α = {alpha}"),
            design: "30 vs 10 per probe (40 calls)".into(),
            n_modelpin: None,
            n_oracle: None,
            power: "—".into(),
            false_alarms: rate_text(far, NULL_RUNS),
            target: "FWER ≤ α + 2 SE".into(),
            met: Some(calibrated(far, alpha, NULL_RUNS)),
        });
    }
    for alpha in [0.01, 0.001] {
        // 10,000 runs where 99.9% has to be shown; 2,000 for the larger audits (full
        // permutation budgets make them slow).
        let plan = [
            (1, NULL_RUNS),
            (2, NULL_RUNS),
            (3, NULL_RUNS),
            (5, 2000),
            (10, 2000),
        ];
        let power: Vec<(usize, f64)> = plan
            .into_iter()
            .map(|(m, runs)| {
                let seed = 102 + m as u64;
                (4 * m, rate(runs, seed, |rng| drift(&p, &q, m, alpha, rng)))
            })
            .collect();
        let met = power
            .iter()
            .any(|&(calls, hit)| calls <= 10 && hit >= 0.999);
        let power: Vec<String> = power
            .iter()
            .map(|(calls, hit)| format!("{hit:.4} at {calls} calls"))
            .collect();
        rows.push(Row {
            scenario: "Full model swap (statistics only)".into(),
            detector: format!("compare_pin, α = {alpha}"),
            design: "30 per probe vs 1, 2, 3, 5, 10 per probe".into(),
            n_modelpin: None,
            n_oracle: None,
            power: power.join("; "),
            false_alarms: "see null rows".into(),
            target: "≥ 99.9% within 10 calls".into(),
            met: Some(met),
        });
    }
    rows.extend(small_sample_calibration());
    rows
}

/// Each test alone at the audit's real sizes, where their small-sample paths (exact Fisher,
/// exact X² enumeration, exact tied Mann–Whitney) are the ones that run.
fn small_sample_calibration() -> Vec<Row> {
    let pass = rate(NULL_RUNS, 111, |rng| {
        let mut draw = |n: u64| (0..n).filter(|_| rng.next_f64() < 0.9).count() as u64;
        let (s0, s) = (draw(30), draw(10));
        fisher_pass_rate(Rate::new(s0, 30), Rate::new(s, 10)).p_value <= ALPHA
    });
    let capital = Categorical::new(&[0.70, 0.20, 0.07, 0.03]);
    let answers = rate(NULL_RUNS, 112, |rng| {
        let seed = rng.next_u64();
        let mut draw =
            |n: usize| -> Vec<&str> { (0..n).map(|_| CITIES[capital.draw(rng)]).collect() };
        let (b, c) = (draw(30), draw(10));
        answers_homogeneity(&b, &c, PermutationBudget::resolving(ALPHA), seed).p_value <= ALPHA
    });
    let tokens = LogNormal {
        median: 20.0,
        sigma: 0.3,
    };
    let lengths = rate(NULL_RUNS, 113, |rng| {
        let mut draw =
            |n: usize| -> Vec<f64> { (0..n).map(|_| tokens.draw(rng).round()).collect() };
        let (b, c) = (draw(30), draw(10));
        mann_whitney(&b, &c).p_value <= ALPHA
    });
    [
        ("Fisher exact, pass rate 0.9", pass),
        ("X² exact enumeration, 4 answers", answers),
        ("Mann–Whitney exact with ties, integer tokens", lengths),
    ]
    .into_iter()
    .map(|(detector, far)| Row {
        scenario: "Null, one test at audit size".into(),
        detector: detector.into(),
        design: "30 vs 10".into(),
        n_modelpin: None,
        n_oracle: None,
        power: "—".into(),
        false_alarms: rate_text(far, NULL_RUNS),
        target: "FAR ≤ α + 2 SE".into(),
        met: Some(calibrated(far, ALPHA, NULL_RUNS)),
    })
    .collect()
}

/// Median and worst wall time of one `compare_pin` on 4 probes × 10 calls against 30, at the
/// default α = 0.001: under the null and under a swap (which spends full permutation budgets).
pub fn timing() -> String {
    let (p, q) = (PinModel::pinned(), PinModel::swapped());
    let mut lines = Vec::new();
    for (name, now) in [("null", &p), ("swap", &q)] {
        let mut times: Vec<f64> = (0..200)
            .map(|i| {
                let mut rng = Rng::new(900 + i);
                let probes = probes(&p, now, 10, &mut rng);
                let start = Instant::now();
                let v = compare_pin(&probes, 0.001, i);
                std::hint::black_box(v);
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        lines.push(format!(
            "{name}: median {:.2} ms, max {:.2} ms",
            times[100], times[199]
        ));
    }
    lines.join("; ")
}
