//! First tokens on border inputs: did the distribution of the first output token move?
//!
//! A border input is a prompt whose first output token is nearly tied between a few candidates,
//! so a small change of weights, quantization, kernels or sampling tips it one way (Chauvin et
//! al., "B3IT", arXiv 2602.11083). Each input is asked for one token, several times, at the lock
//! and in every audit; the test pools the evidence of all inputs into one statistic — the sum
//! over inputs of the 2×K Pearson X² of first tokens, baseline against now — so the family-wise
//! correction counts the tier once, not once per input.
//!
//! The null is exact: labels (baseline / now) are permuted within each input (Monte-Carlo with
//! the Besag–Clifford stop), which is valid for any statistic and any small count, so sparse
//! tokens need no pooling. Per permutation the work is linear in the audit's samples.

use std::collections::BTreeMap;

use serde::Serialize;

use super::permutation::{PermutationBudget, sequential_p};
use super::rng::{Rng, derive_seed};
use super::{Calibration, Effect, TestKind, TestResult};

/// One border input: the first tokens the lock recorded and those of this audit.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstTokens<'a> {
    pub input: &'a str,
    pub baseline: Vec<&'a str>,
    pub current: Vec<&'a str>,
}

/// How one input moved, for the evidence: its most frequent first token then and now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputShift {
    pub input: String,
    /// The most frequent baseline token and its share then and now.
    pub token: String,
    pub baseline_share: f64,
    pub current_share: f64,
    /// The token whose share moved most (of equal shifts, the first in token order), and its
    /// share then and now.
    pub moved_token: String,
    pub moved_baseline_share: f64,
    pub moved_current_share: f64,
    /// Total variation distance between the two first-token distributions.
    pub distance: f64,
    pub baseline_n: usize,
    pub current_n: usize,
}

/// Most-moved inputs listed in the evidence.
const SHOWN: usize = 5;

/// One input's samples as category indices, baseline first, and its table's shape.
struct Coded {
    /// Category of each pooled sample: the baseline's `n0` first, then the current `n1`.
    labels: Vec<usize>,
    n0: usize,
    categories: usize,
    /// Pooled count of each category (the table's fixed column margins).
    pooled: Vec<u64>,
}

impl Coded {
    fn new(input: &FirstTokens<'_>) -> Coded {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut labels = Vec::with_capacity(input.baseline.len() + input.current.len());
        for token in input.baseline.iter().chain(&input.current) {
            let next = index.len();
            labels.push(*index.entry(token).or_insert(next));
        }
        let mut pooled = vec![0u64; index.len()];
        for &l in &labels {
            pooled[l] += 1;
        }
        Coded {
            labels,
            n0: input.baseline.len(),
            categories: index.len(),
            pooled,
        }
    }

    fn n1(&self) -> usize {
        self.labels.len() - self.n0
    }

    /// Carries evidence: both sides sampled and more than one token seen.
    fn informative(&self) -> bool {
        self.n0 > 0 && self.n1() > 0 && self.categories > 1
    }

    /// Pearson X² of the table whose current row is `current` (counts per category).
    fn pearson(&self, current: &[u64]) -> f64 {
        let total = self.labels.len() as f64;
        let (n0, n1) = (self.n0 as f64, self.n1() as f64);
        let mut x2 = 0.0;
        for (&c, &pooled) in current.iter().zip(&self.pooled) {
            let col = pooled as f64;
            let (e0, e1) = (n0 * col / total, n1 * col / total);
            let (o1, o0) = (c as f64, col - c as f64);
            x2 += (o0 - e0).powi(2) / e0 + (o1 - e1).powi(2) / e1;
        }
        x2
    }

    fn observed(&self) -> Vec<u64> {
        let mut counts = vec![0u64; self.categories];
        for &l in &self.labels[self.n0..] {
            counts[l] += 1;
        }
        counts
    }
}

/// Tests whether the first tokens of `inputs` are drawn as at the lock, all inputs at once.
#[must_use]
pub fn first_tokens(
    inputs: &[FirstTokens<'_>],
    budget: PermutationBudget,
    seed: u64,
) -> TestResult {
    let coded: Vec<Coded> = inputs
        .iter()
        .map(Coded::new)
        .filter(Coded::informative)
        .collect();
    let effect = Effect::FirstTokens {
        inputs: inputs.len(),
        informative: coded.len(),
        moved: shifts(inputs),
    };
    if coded.is_empty() {
        return TestResult {
            test: TestKind::FirstTokens,
            statistic: 0.0,
            p_value: 1.0,
            calibration: Calibration::NoEvidence,
            effect,
        };
    }
    let observed: f64 = coded.iter().map(|c| c.pearson(&c.observed())).sum();
    let mut pools: Vec<Vec<usize>> = coded.iter().map(|c| c.labels.clone()).collect();
    let mut counts: Vec<Vec<u64>> = coded.iter().map(|c| vec![0; c.categories]).collect();
    let (p_value, calibration) = sequential_p(
        observed,
        budget,
        derive_seed(seed, 0xF1F7),
        |rng: &mut Rng| {
            let mut total = 0.0;
            for ((c, pool), current) in coded.iter().zip(&mut pools).zip(&mut counts) {
                rng.choose_front(pool, c.n1());
                current.fill(0);
                for &l in &pool[..c.n1()] {
                    current[l] += 1;
                }
                total += c.pearson(current);
            }
            total
        },
    );
    TestResult {
        test: TestKind::FirstTokens,
        statistic: observed,
        p_value,
        calibration,
        effect,
    }
}

/// The inputs that moved most, by total variation distance.
fn shifts(inputs: &[FirstTokens<'_>]) -> Vec<InputShift> {
    let mut shifts: Vec<InputShift> = inputs.iter().filter_map(shift).collect();
    shifts.sort_by(|a, b| b.distance.total_cmp(&a.distance));
    shifts.truncate(SHOWN);
    shifts
}

fn shift(input: &FirstTokens<'_>) -> Option<InputShift> {
    let share = |sample: &[&str]| -> BTreeMap<String, f64> {
        let mut counts: BTreeMap<String, f64> = BTreeMap::new();
        for t in sample {
            *counts.entry((*t).to_owned()).or_insert(0.0) += 1.0;
        }
        let n = sample.len().max(1) as f64;
        for c in counts.values_mut() {
            *c /= n;
        }
        counts
    };
    if input.baseline.is_empty() || input.current.is_empty() {
        return None;
    }
    let (then, now) = (share(&input.baseline), share(&input.current));
    let (token, baseline_share) = then
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(t, s)| (t.clone(), *s))?;
    let seen: std::collections::BTreeSet<&String> = then.keys().chain(now.keys()).collect();
    let moved = |t: &String| (then.get(t).unwrap_or(&0.0) - now.get(t).unwrap_or(&0.0)).abs();
    let distance = seen.iter().map(|t| moved(t)).sum::<f64>() / 2.0;
    let moved_token = seen
        .iter()
        .copied()
        .fold(None::<&String>, |best, t| match best {
            Some(b) if moved(b) >= moved(t) => Some(b),
            _ => Some(t),
        })
        .map_or_else(|| token.clone(), String::clone);
    Some(InputShift {
        input: input.input.to_owned(),
        moved_baseline_share: *then.get(&moved_token).unwrap_or(&0.0),
        moved_current_share: *now.get(&moved_token).unwrap_or(&0.0),
        moved_token,
        current_share: *now.get(&token).unwrap_or(&0.0),
        token,
        baseline_share,
        distance,
        baseline_n: input.baseline.len(),
        current_n: input.current.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` draws from `weights` over tokens "a", "b", "c", …
    fn draws(rng: &mut Rng, weights: &[f64], n: usize) -> Vec<&'static str> {
        const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
        (0..n)
            .map(|_| {
                let mut u = rng.next_f64() * weights.iter().sum::<f64>();
                for (i, w) in weights.iter().enumerate() {
                    if u < *w {
                        return NAMES[i];
                    }
                    u -= w;
                }
                NAMES[weights.len() - 1]
            })
            .collect()
    }

    fn audit(seed: u64, before: &[f64], after: &[f64], inputs: usize) -> f64 {
        let mut rng = Rng::new(seed);
        let samples: Vec<(Vec<&str>, Vec<&str>)> = (0..inputs)
            .map(|_| (draws(&mut rng, before, 30), draws(&mut rng, after, 10)))
            .collect();
        let inputs: Vec<FirstTokens<'_>> = samples
            .iter()
            .map(|(b, c)| FirstTokens {
                input: "x",
                baseline: b.clone(),
                current: c.clone(),
            })
            .collect();
        first_tokens(&inputs, PermutationBudget::CLASSIC, seed).p_value
    }

    #[test]
    fn false_alarms_stay_at_the_level() {
        let runs = 400u32;
        let hits = (0..runs)
            .filter(|&s| audit(u64::from(s), &[0.5, 0.3, 0.2], &[0.5, 0.3, 0.2], 10) <= 0.05)
            .count() as f64;
        let rate = hits / f64::from(runs);
        let se = (0.05f64 * 0.95 / f64::from(runs)).sqrt();
        assert!(rate <= 0.05 + 3.0 * se, "false-alarm rate {rate}");
    }

    #[test]
    fn a_tipped_border_is_seen_across_inputs() {
        let runs = 50u32;
        let hits = (0..runs)
            .filter(|&s| audit(u64::from(s), &[0.5, 0.5], &[0.8, 0.2], 10) <= 0.01)
            .count();
        assert!(hits >= 45, "{hits} of {runs}");
    }

    #[test]
    fn no_evidence_without_both_sides_or_a_second_token() {
        let one = FirstTokens {
            input: "x",
            baseline: vec!["a", "a"],
            current: vec!["a"],
        };
        let empty = FirstTokens {
            input: "y",
            baseline: vec!["a", "b"],
            current: Vec::new(),
        };
        let result = first_tokens(&[one, empty], PermutationBudget::CLASSIC, 1);
        assert_eq!(result.calibration, Calibration::NoEvidence);
        assert!((result.p_value - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn the_evidence_names_the_input_that_moved_most() {
        let moved = FirstTokens {
            input: "coin",
            baseline: vec!["heads", "tails", "heads", "tails"],
            current: vec!["heads", "heads", "heads", "heads"],
        };
        let still = FirstTokens {
            input: "letter",
            baseline: vec!["A", "B"],
            current: vec!["A", "B"],
        };
        let result = first_tokens(&[still, moved], PermutationBudget::CLASSIC, 3);
        let Effect::FirstTokens {
            moved, informative, ..
        } = result.effect
        else {
            panic!("{:?}", result.effect)
        };
        assert_eq!(informative, 2);
        assert_eq!(moved[0].input, "coin");
        assert!((moved[0].distance - 0.5).abs() < 1e-12);
        assert!((moved[0].current_share - 1.0).abs() < 1e-12);
        // heads 50 % → 100 % and tails 50 % → 0 % moved alike: the first in token order.
        assert_eq!(moved[0].moved_token, "heads");
        assert!((moved[0].moved_baseline_share - 0.5).abs() < 1e-12);
        assert!((moved[0].moved_current_share - 1.0).abs() < 1e-12);
    }
}
