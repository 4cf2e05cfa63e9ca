//! The decision the auditor asks for: did this pin's behaviour drift from its baseline?
//!
//! Each probe contributes the tests that fit it: a `choice` probe its categorical answers, a
//! `text` probe its completion lengths, and any probe with an `[expect]` rule its pass rate.
//! On top, one kernel MMD reads the answers of *every* probe as strings, each probe a stratum
//! (Gao et al.'s prompt-masked design): it is the pin's wording test for free text, and it is
//! what catches a wholesale swap in a handful of calls. A per-probe exact test cannot: with 30
//! baseline answers and 2 new ones its p-value never drops below 1/C(32, 2) = 0.002, while the
//! stratified test's floor is the product over probes. Holm over all of a pin's tests that can
//! reject at these sample sizes (`detectability::family`) holds the chance of a false alarm for
//! the pin at α per audit, whatever the dependence between tests that read the same answers.
//! Tests that cannot reject still run, as evidence. Permutation budgets are sized so that
//! p-values down to the strictest Holm threshold are resolvable.

use serde::Serialize;

use super::detectability::{family, floor};
use super::expect::{Expectation, normalized};
use super::fisher::{Rate, fisher_pass_rate};
use super::holm::holm;
use super::mann_whitney::mann_whitney;
use super::mmd::{Kernel, Stratum, text_mmd};
use super::permutation::PermutationBudget;
use super::rng::derive_seed;
use super::{TestKind, TestResult, answers_homogeneity};
use crate::config::{Compare, Expect, Normalize};

/// What one probe answered when the baseline was recorded and in this audit.
#[derive(Debug, Clone)]
pub struct ProbeSamples {
    pub probe_id: String,
    pub compare: Compare,
    pub expect: Option<Expect>,
    pub normalize: Vec<Normalize>,
    pub baseline: Samples,
    pub current: Samples,
}

/// Raw answers and their `completion_tokens` (empty when the provider reports none).
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub outputs: Vec<String>,
    pub lengths: Vec<u64>,
}

/// The verdict for a pin: every test with raw and Holm-adjusted p-values and what moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftVerdict {
    /// Family-wise false-alarm rate the tests were held to.
    pub alpha: f64,
    /// Seed of every permutation p-value below (each test derives its own from it).
    pub seed: u64,
    /// Some test rejected after Holm.
    pub drift: bool,
    pub tests: Vec<DriftTest>,
    /// Tests a probe would have had but the data could not support.
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftTest {
    /// The probes the test read (all answered ones for the MMD).
    pub probes: Vec<String>,
    #[serde(flatten)]
    pub result: TestResult,
    /// Holm-adjusted p; `None` when the sample sizes put the test's smallest possible p above
    /// its threshold, so it was left out of the Holm family (it could never reject).
    pub adjusted_p: Option<f64>,
    pub rejected: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub probes: Vec<String>,
    /// `None`: every test of the probe.
    pub test: Option<TestKind>,
    pub reason: &'static str,
}

/// A probe's answers as the tests read them: normalized, judged, lengths as numbers.
struct Read {
    id: String,
    compare: Compare,
    answers: [Vec<String>; 2],
    passes: Option<[Vec<bool>; 2]>,
    lengths: [Vec<f64>; 2],
}

/// One test to run, by index into the probes.
enum Planned {
    PassRate(usize),
    Answers(usize),
    Length(usize),
    Mmd(Vec<usize>),
}

/// Runs every applicable test on each probe and applies Holm across all of them at `alpha`.
#[must_use]
pub fn compare_pin(probes: &[ProbeSamples], alpha: f64, seed: u64) -> DriftVerdict {
    let read: Vec<Read> = probes.iter().map(Read::new).collect();
    let (plan, skipped) = plan(&read);
    let floors: Vec<f64> = plan
        .iter()
        .map(|t| floor(t.kind(), &t.sizes(&read)))
        .collect();
    let in_family = family(&floors, alpha);
    let members = in_family.iter().filter(|&&f| f).count();
    let budget = PermutationBudget::resolving(alpha / members.max(1) as f64);
    let results: Vec<TestResult> = plan.iter().map(|t| t.run(&read, budget, seed)).collect();
    let raw: Vec<f64> = results
        .iter()
        .zip(&in_family)
        .filter(|(_, f)| **f)
        .map(|(r, _)| r.p_value)
        .collect();
    let mut adjusted = holm(&raw).into_iter();
    let tests: Vec<DriftTest> = plan
        .iter()
        .zip(results)
        .zip(in_family)
        .map(|((t, result), member)| {
            let adjusted_p = if member { adjusted.next() } else { None };
            DriftTest {
                probes: t.probes(&read),
                result,
                rejected: adjusted_p.is_some_and(|p| p <= alpha),
                adjusted_p,
            }
        })
        .collect();
    DriftVerdict {
        alpha,
        seed,
        drift: tests.iter().any(|t| t.rejected),
        tests,
        skipped,
    }
}

impl Read {
    fn new(p: &ProbeSamples) -> Read {
        let answers = [&p.baseline, &p.current].map(|s| {
            s.outputs
                .iter()
                .map(|o| normalized(&p.normalize, o))
                .collect::<Vec<_>>()
        });
        let passes = p.expect.as_ref().map(|e| {
            let rule = Expectation::lenient(e, &p.normalize);
            [0, 1].map(|side| answers[side].iter().map(|a| rule.accepts(a)).collect())
        });
        Read {
            id: p.probe_id.clone(),
            compare: p.compare,
            lengths: [&p.baseline, &p.current]
                .map(|s| s.lengths.iter().map(|&l| l as f64).collect()),
            answers,
            passes,
        }
    }

    fn both_answered(&self) -> bool {
        self.answers.iter().all(|a| !a.is_empty())
    }
}

/// The tests the data supports, and those it does not (with why).
fn plan(read: &[Read]) -> (Vec<Planned>, Vec<Skipped>) {
    let (mut plan, mut skipped) = (Vec::new(), Vec::new());
    let mut skip = |i: usize, test, reason| {
        skipped.push(Skipped {
            probes: vec![read[i].id.clone()],
            test,
            reason,
        });
    };
    let mut answered = Vec::new();
    for (i, r) in read.iter().enumerate() {
        if !r.both_answered() {
            skip(i, None, "no answers on one side");
            continue;
        }
        answered.push(i);
        if r.passes.is_some() {
            plan.push(Planned::PassRate(i));
        }
        match r.compare {
            Compare::Choice => plan.push(Planned::Answers(i)),
            Compare::Text => {
                if r.lengths.iter().all(|l| !l.is_empty()) {
                    plan.push(Planned::Length(i));
                } else {
                    skip(i, Some(TestKind::Length), "completion_tokens not reported");
                }
            }
        }
    }
    if !answered.is_empty() {
        plan.push(Planned::Mmd(answered));
    }
    (plan, skipped)
}

impl Planned {
    fn kind(&self) -> TestKind {
        match self {
            Planned::PassRate(_) => TestKind::PassRate,
            Planned::Answers(_) => TestKind::Answers,
            Planned::Length(_) => TestKind::Length,
            Planned::Mmd(_) => TestKind::Mmd,
        }
    }

    /// (baseline, current) sample sizes per probe the test reads.
    fn sizes(&self, read: &[Read]) -> Vec<(u64, u64)> {
        let pair = |a: usize, b: usize| (a as u64, b as u64);
        match self {
            Planned::PassRate(i) | Planned::Answers(i) => {
                let [b, c] = &read[*i].answers;
                vec![pair(b.len(), c.len())]
            }
            Planned::Length(i) => {
                let [b, c] = &read[*i].lengths;
                vec![pair(b.len(), c.len())]
            }
            Planned::Mmd(is) => is
                .iter()
                .map(|&i| pair(read[i].answers[0].len(), read[i].answers[1].len()))
                .collect(),
        }
    }

    fn probes(&self, read: &[Read]) -> Vec<String> {
        match self {
            Planned::PassRate(i) | Planned::Answers(i) | Planned::Length(i) => {
                vec![read[*i].id.clone()]
            }
            Planned::Mmd(is) => is.iter().map(|&i| read[i].id.clone()).collect(),
        }
    }

    /// A per-test seed derived from the pin's seed, the test kind and its first probe, so
    /// adding or removing a probe does not change another test's permutations.
    fn seed(&self, read: &[Read], seed: u64) -> u64 {
        let (tag, first) = match self {
            Planned::PassRate(i) => (1, *i),
            Planned::Answers(i) => (2, *i),
            Planned::Length(i) => (3, *i),
            Planned::Mmd(is) => (4, is[0]),
        };
        let name = read[first]
            .id
            .bytes()
            .fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
            });
        derive_seed(seed, name ^ tag)
    }

    fn run(&self, read: &[Read], budget: PermutationBudget, seed: u64) -> TestResult {
        let seed = self.seed(read, seed);
        match self {
            Planned::PassRate(i) => {
                let [b, c] = read[*i].passes.as_ref().expect("planned with passes");
                fisher_pass_rate(Rate::of(b), Rate::of(c))
            }
            Planned::Answers(i) => {
                let [b, c] = &read[*i].answers;
                answers_homogeneity(b, c, budget, seed)
            }
            Planned::Length(i) => {
                let [b, c] = &read[*i].lengths;
                mann_whitney(b, c)
            }
            Planned::Mmd(is) => {
                let strata: Vec<Stratum<'_>> = is
                    .iter()
                    .map(|&i| Stratum {
                        id: &read[i].id,
                        baseline: &read[i].answers[0],
                        current: &read[i].answers[1],
                    })
                    .collect();
                text_mmd(&strata, Kernel::DEFAULT, budget, seed)
            }
        }
    }
}

#[cfg(test)]
mod tests;
