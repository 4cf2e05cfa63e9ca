//! First-token log-probabilities: did the numbers the provider reports for its top tokens move?
//!
//! Where a provider reports `top_logprobs`, one output token carries the model's whole opinion of
//! the first position, and a change of weights, quantization or kernels moves it even when the
//! sampled text does not change (Logprob Tracking, Chauvin et al., arXiv 2512.03816). The same
//! model does not report identical numbers on every call either (batching, cached prefixes), so
//! the null is the provider's own spread, recorded at the lock: a two-sample permutation test
//! per prompt, rows (calls) permuted between baseline and now, pooled over prompts.
//!
//! Statistic (as Logprob Tracking's): for each prompt, over every token seen in either sample,
//! the absolute difference of the token's mean logprob, then and now, averaged over tokens; a
//! token missing from a call's top-k counts as that call's smallest reported logprob. Summed over
//! prompts. Per permutation the work is the audit's calls times the prompt's tokens.

use std::collections::BTreeMap;

use serde::Serialize;

use super::permutation::{PermutationBudget, sequential_p};
use super::rng::{Rng, derive_seed};
use super::{Calibration, Effect, TestKind, TestResult};

/// One call's top tokens with their logprobs.
pub type TopLogprobs = Vec<(String, f64)>;

/// One call's first token as the tests read it: the most probable tokens of its report, cut to
/// a set no draw can change, and where the sampled token fell.
///
/// Stacks list `top_logprobs` differently: OpenAI lists exactly the top k and gives the
/// sampled token's logprob apart; llama.cpp appends the sampled token when it is not among the
/// top k (k + 1 entries); others put it in place of the k-th, or list fewer. Under each of them
/// the top k − 1 (of at most k entries, fewer when fewer are listed) are the same whatever was
/// drawn, so the tests read only those: which tokens are listed, and how often, never depends
/// on what the provider sampled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reported {
    /// The tested tokens with their logprobs, most probable first.
    pub top: TopLogprobs,
    /// The sampled token's place among them; `None` when it was drawn from outside them.
    pub sampled: Option<usize>,
}

impl Reported {
    /// Reads a call's list (most probable first, as asked with `top_logprobs: asked`) and the
    /// token it returned; `None` when fewer than two entries are listed.
    #[must_use]
    pub fn cut(listed: &[(String, f64)], sampled: &str, asked: usize) -> Option<Reported> {
        let keep = listed.len().min(asked).checked_sub(1)?;
        if keep == 0 {
            return None;
        }
        let top: TopLogprobs = listed[..keep].to_vec();
        let sampled = top.iter().position(|(t, _)| t == sampled);
        Some(Reported { top, sampled })
    }
}

/// One prompt's calls: at the lock and in this audit.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptLogprobs<'a> {
    pub prompt: &'a str,
    pub baseline: Vec<&'a TopLogprobs>,
    pub current: Vec<&'a TopLogprobs>,
}

/// How far one prompt's numbers moved, for the evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptShift {
    pub prompt: String,
    /// The token whose mean logprob moved most, then and now.
    pub token: String,
    pub baseline_mean: f64,
    pub current_mean: f64,
    /// This prompt's part of the statistic.
    pub distance: f64,
}

const SHOWN: usize = 5;

/// A prompt's calls as a dense matrix: one row per call (baseline rows first), one column per
/// token seen anywhere.
struct Matrix {
    tokens: Vec<String>,
    rows: Vec<Vec<f64>>,
    n0: usize,
    /// Column sums over all rows: the baseline's are the total minus the current's.
    totals: Vec<f64>,
}

impl Matrix {
    fn new(prompt: &PromptLogprobs<'_>) -> Option<Matrix> {
        let calls: Vec<&TopLogprobs> = prompt
            .baseline
            .iter()
            .chain(&prompt.current)
            .copied()
            .filter(|c| c.iter().any(|(_, lp)| lp.is_finite()))
            .collect();
        let n0 = prompt
            .baseline
            .iter()
            .filter(|c| c.iter().any(|(_, lp)| lp.is_finite()))
            .count();
        if n0 == 0 || calls.len() == n0 {
            return None;
        }
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        for call in &calls {
            for (token, _) in *call {
                let next = index.len();
                index.entry(token.as_str()).or_insert(next);
            }
        }
        let rows: Vec<Vec<f64>> = calls.iter().map(|c| row(c, &index)).collect();
        let mut totals = vec![0.0; index.len()];
        for r in &rows {
            for (t, v) in totals.iter_mut().zip(r) {
                *t += v;
            }
        }
        let mut tokens = vec![String::new(); index.len()];
        for (token, i) in index {
            token.clone_into(&mut tokens[i]);
        }
        Some(Matrix {
            tokens,
            rows,
            n0,
            totals,
        })
    }

    fn n1(&self) -> usize {
        self.rows.len() - self.n0
    }

    /// The statistic when `current` holds the column sums of the current rows.
    fn distance(&self, current: &[f64]) -> f64 {
        let (n0, n1) = (self.n0 as f64, self.n1() as f64);
        let sum: f64 = current
            .iter()
            .zip(&self.totals)
            .map(|(c, t)| ((t - c) / n0 - c / n1).abs())
            .sum();
        sum / self.tokens.len().max(1) as f64
    }

    fn sums(&self, rows: impl Iterator<Item = usize>, into: &mut [f64]) {
        into.fill(0.0);
        for r in rows {
            for (s, v) in into.iter_mut().zip(&self.rows[r]) {
                *s += v;
            }
        }
    }
}

/// A call's logprob for every token of the prompt: its own, or its smallest for tokens it did
/// not list.
fn row(call: &TopLogprobs, index: &BTreeMap<&str, usize>) -> Vec<f64> {
    let floor = call
        .iter()
        .map(|(_, lp)| *lp)
        .filter(|lp| lp.is_finite())
        .fold(f64::INFINITY, f64::min);
    let mut values = vec![floor; index.len()];
    for (token, lp) in call {
        if lp.is_finite()
            && let Some(&i) = index.get(token.as_str())
        {
            values[i] = *lp;
        }
    }
    values
}

/// Tests whether the reported first-token logprobs of `prompts` are as at the lock.
#[must_use]
pub fn logprobs(
    prompts: &[PromptLogprobs<'_>],
    budget: PermutationBudget,
    seed: u64,
) -> TestResult {
    let matrices: Vec<(&str, Matrix)> = prompts
        .iter()
        .filter_map(|p| Some((p.prompt, Matrix::new(p)?)))
        .collect();
    let mut scratch: Vec<Vec<f64>> = matrices
        .iter()
        .map(|(_, m)| vec![0.0; m.tokens.len()])
        .collect();
    let mut parts = Vec::new();
    for ((prompt, m), s) in matrices.iter().zip(&mut scratch) {
        m.sums(m.n0..m.rows.len(), s);
        parts.push((*prompt, m.distance(s), moved_most(m, s)));
    }
    let observed: f64 = parts.iter().map(|(_, d, _)| d).sum();
    let effect = Effect::Logprobs {
        prompts: prompts.len(),
        compared: matrices.len(),
        moved: shown(&parts),
    };
    if matrices.is_empty() {
        return TestResult {
            test: TestKind::Logprobs,
            statistic: 0.0,
            p_value: 1.0,
            calibration: Calibration::NoEvidence,
            effect,
        };
    }
    let mut orders: Vec<Vec<usize>> = matrices
        .iter()
        .map(|(_, m)| (0..m.rows.len()).collect())
        .collect();
    let (p_value, calibration) = sequential_p(
        observed,
        budget,
        derive_seed(seed, 0x10C9),
        |rng: &mut Rng| {
            let mut total = 0.0;
            for (((_, m), order), s) in matrices.iter().zip(&mut orders).zip(&mut scratch) {
                rng.choose_front(order, m.n1());
                m.sums(order[..m.n1()].iter().copied(), s);
                total += m.distance(s);
            }
            total
        },
    );
    TestResult {
        test: TestKind::Logprobs,
        statistic: observed,
        p_value,
        calibration,
        effect,
    }
}

/// The token whose mean moved most: (token, baseline mean, current mean).
fn moved_most(m: &Matrix, current: &[f64]) -> (String, f64, f64) {
    let (n0, n1) = (m.n0 as f64, m.n1() as f64);
    m.tokens
        .iter()
        .zip(current.iter().zip(&m.totals))
        .map(|(token, (c, t))| (token.clone(), (t - c) / n0, c / n1))
        .max_by(|a, b| (a.1 - a.2).abs().total_cmp(&(b.1 - b.2).abs()))
        .unwrap_or_default()
}

fn shown(parts: &[(&str, f64, (String, f64, f64))]) -> Vec<PromptShift> {
    let mut shifts: Vec<PromptShift> = parts
        .iter()
        .map(|(prompt, distance, (token, b, c))| PromptShift {
            prompt: (*prompt).to_owned(),
            token: token.clone(),
            baseline_mean: round4(*b),
            current_mean: round4(*c),
            distance: round4(*distance),
        })
        .collect();
    shifts.sort_by(|a, b| b.distance.total_cmp(&a.distance));
    shifts.truncate(SHOWN);
    shifts
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's top-3 around `centre`, with jitter of size `noise`.
    fn call(rng: &mut Rng, centre: [f64; 3], noise: f64) -> TopLogprobs {
        ["a", "b", "c"]
            .iter()
            .zip(centre)
            .map(|(t, lp)| ((*t).to_owned(), lp + noise * (rng.next_f64() - 0.5)))
            .collect()
    }

    fn audit(seed: u64, before: [f64; 3], after: [f64; 3]) -> f64 {
        let mut rng = Rng::new(seed);
        let calls: Vec<(Vec<TopLogprobs>, Vec<TopLogprobs>)> = (0..4)
            .map(|_| {
                let b = (0..10).map(|_| call(&mut rng, before, 0.2)).collect();
                let c = (0..5).map(|_| call(&mut rng, after, 0.2)).collect();
                (b, c)
            })
            .collect();
        let prompts: Vec<PromptLogprobs<'_>> = calls
            .iter()
            .map(|(b, c)| PromptLogprobs {
                prompt: "x",
                baseline: b.iter().collect(),
                current: c.iter().collect(),
            })
            .collect();
        logprobs(&prompts, PermutationBudget::resolving(0.001), seed).p_value
    }

    #[test]
    fn false_alarms_stay_at_the_level() {
        let runs = 300u32;
        let same = [-0.7, -1.2, -2.5];
        let hits = (0..runs)
            .filter(|&s| audit(u64::from(s), same, same) <= 0.05)
            .count();
        crate::stats::assert_false_alarms_at_level(hits, runs);
    }

    #[test]
    fn a_shift_beyond_the_spread_is_seen() {
        let hits = (0..20u64)
            .filter(|&s| audit(s, [-0.7, -1.2, -2.5], [-0.9, -1.0, -2.5]) <= 0.001)
            .count();
        assert!(hits >= 19, "{hits} of 20");
    }

    #[test]
    fn missing_tokens_take_the_calls_smallest_logprob() {
        let index: BTreeMap<&str, usize> = [("a", 0), ("b", 1), ("z", 2)].into_iter().collect();
        let call: TopLogprobs = vec![("a".into(), -0.1), ("b".into(), -3.0)];
        assert_eq!(row(&call, &index), vec![-0.1, -3.0, -3.0]);
    }

    #[test]
    fn the_tested_tokens_do_not_depend_on_the_draw_under_any_listing_convention() {
        let model: Vec<(String, f64)> = ["a", "b", "c", "d", "e"]
            .iter()
            .zip([0.4f64, 0.3, 0.15, 0.1, 0.05])
            .map(|(t, p)| ((*t).to_owned(), p.ln()))
            .collect();
        let top3 = &model[..3];
        let with = |extra: &str| -> Vec<(String, f64)> {
            let mut l = top3.to_vec();
            if !l.iter().any(|(t, _)| t == extra) {
                l.push(model.iter().find(|(t, _)| t == extra).unwrap().clone());
            }
            l
        };
        let replaced = |extra: &str| -> Vec<(String, f64)> {
            let mut l = model[..2].to_vec();
            l.push(model.iter().find(|(t, _)| t == extra).unwrap().clone());
            l
        };
        // (listing, sampled): exactly top 3 (OpenAI), the sampled token appended (llama.cpp),
        // the sampled token in place of the third, all asked with top_logprobs 3.
        let table: [(TopLogprobs, &str, Option<usize>); 6] = [
            (top3.to_vec(), "a", Some(0)),
            (top3.to_vec(), "e", None),
            (with("b"), "b", Some(1)),
            (with("e"), "e", None),
            (replaced("c"), "c", None),
            (replaced("d"), "d", None),
        ];
        for (listing, sampled, place) in table {
            let cut = Reported::cut(&listing, sampled, 3).unwrap();
            assert_eq!(cut.top, model[..2].to_vec(), "{listing:?}");
            assert_eq!(cut.sampled, place, "{listing:?} sampled {sampled}");
        }
        // Fewer than asked: the listed ones less one; a single entry tests nothing.
        assert_eq!(
            Reported::cut(&model[..2], "a", 10).unwrap().top,
            model[..1].to_vec()
        );
        assert_eq!(Reported::cut(&model[..1], "a", 10), None);
    }

    #[test]
    fn no_evidence_without_a_baseline() {
        let now: TopLogprobs = vec![("a".into(), -0.1)];
        let prompt = PromptLogprobs {
            prompt: "x",
            baseline: Vec::new(),
            current: vec![&now],
        };
        let result = logprobs(&[prompt], PermutationBudget::CLASSIC, 1);
        assert_eq!(result.calibration, Calibration::NoEvidence);
    }
}
