//! S7, free text: a quantization-like perturbation of per-prompt Markov chains (10 prompts,
//! V = 16, L = 40, logits N(0, 2²), perturbation N(0, 0.3²) on every logit), as in
//! detection-science §5. Baseline 30 answers per prompt, as `modelpin lock` records by default
//! for text; the audit draws m per prompt.

use modelpin::stats::rng::Rng;
use modelpin::stats::{Kernel, PermutationBudget, Stratum, text_mmd};

use crate::harness::{rates, smallest_n};
use crate::models::{Chain, Markov, text};
use crate::oracle::simulated_power;
use crate::scalar::{ALPHA, NULL_RUNS, TARGET, calibrated};
use crate::table::{Row, rate_text};

const PROMPTS: usize = 10;
const BASELINE: usize = 30;
const POWER_RUNS: u64 = 300;
pub const TAU: f64 = 0.3;

pub struct World {
    pub p: Chain,
    pub q: Chain,
}

impl World {
    pub fn new() -> World {
        let p = Markov::random(PROMPTS, 16, 40, 2.0, 71);
        let q = p.perturbed(TAU, 72).chain();
        World { p: p.chain(), q }
    }
}

const KERNELS: [(&str, Kernel); 3] = [
    ("MMD Hamming", Kernel::Hamming { length: 1000 }),
    (
        "MMD 3-spectrum",
        Kernel::Spectrum {
            max_n: 3,
            length: 1000,
        },
    ),
    ("MMD sum (compare_pin's)", Kernel::DEFAULT),
];

/// Answers per prompt: `n` from `chain`.
pub fn answers(chain: &Chain, n: usize, rng: &mut Rng) -> Vec<Vec<String>> {
    (0..chain.prompts())
        .map(|j| (0..n).map(|_| text(&chain.draw(j, rng))).collect())
        .collect()
}

/// Each kernel's verdict at `alpha` on one simulated audit of `m` answers per prompt.
fn verdicts(
    world: &World,
    alt: bool,
    m: usize,
    alpha: f64,
    kernels: &[Kernel],
    rng: &mut Rng,
) -> Vec<bool> {
    let seed = rng.next_u64();
    let baseline = answers(&world.p, BASELINE, rng);
    let current = answers(if alt { &world.q } else { &world.p }, m, rng);
    let ids: Vec<String> = (0..PROMPTS).map(|j| j.to_string()).collect();
    let strata: Vec<Stratum<'_>> = (0..PROMPTS)
        .map(|j| Stratum {
            id: &ids[j],
            baseline: &baseline[j],
            current: &current[j],
        })
        .collect();
    let budget = PermutationBudget::resolving(alpha);
    kernels
        .iter()
        .map(|&k| text_mmd(&strata, k, budget, seed).p_value <= alpha)
        .collect()
}

/// NP log-likelihood ratio of m answers per prompt drawn from Q (`alt`) or P.
fn oracle_llr(world: &World, m: usize, alt: bool, rng: &mut Rng) -> f64 {
    let chain = if alt { &world.q } else { &world.p };
    (0..PROMPTS)
        .flat_map(|j| (0..m).map(move |_| j))
        .map(|j| {
            let y = chain.draw(j, rng);
            world.q.ln_likelihood(j, &y) - world.p.ln_likelihood(j, &y)
        })
        .sum()
}

pub fn rows() -> Vec<Row> {
    let world = World::new();
    let kernels: Vec<Kernel> = KERNELS.iter().map(|k| k.1).collect();
    let power = |m: usize, alpha: f64, seed: u64| {
        rates(POWER_RUNS, seed, kernels.len(), |rng| {
            verdicts(&world, true, m, alpha, &kernels, rng)
        })
    };
    let (at_100_05, at_250_05, at_100_01) = (
        power(10, 0.05, 81),
        power(25, 0.05, 82),
        power(10, ALPHA, 83),
    );
    let far = rates(NULL_RUNS, 84, kernels.len(), |rng| {
        verdicts(&world, false, 10, ALPHA, &kernels, rng)
    });
    let oracle = smallest_n(TARGET, 1, 100, |m| {
        simulated_power(ALPHA, 85, |rng, alt| oracle_llr(&world, m, alt, rng))
    })
    .map(|m| (m * PROMPTS) as u64);
    let sum_only = [Kernel::DEFAULT];
    let n_sum = smallest_n(TARGET, 5, 80, |m| {
        rates(POWER_RUNS, 86, 1, |rng| {
            verdicts(&world, true, m, ALPHA, &sum_only, rng)
        })[0]
    })
    .map(|m| m * PROMPTS);
    KERNELS
        .iter()
        .enumerate()
        .map(|(i, (name, _))| Row {
            scenario: format!("S7 free text, logit noise τ = {TAU}"),
            detector: (*name).into(),
            design: format!("{BASELINE}/prompt vs m/prompt, {PROMPTS} prompts"),
            n_modelpin: if i == 2 {
                Some(n_sum.map_or("> 800".into(), |n| n.to_string()))
            } else {
                None
            },
            n_oracle: oracle,
            power: format!(
                "α=0.05: {:.2} (N=100), {:.2} (N=250); α=0.01: {:.2} (N=100)",
                at_100_05[i], at_250_05[i], at_100_01[i]
            ),
            false_alarms: format!("{} at N = 100", rate_text(far[i], NULL_RUNS)),
            target: "FAR ≤ α + 2 SE (power: report)".into(),
            met: Some(calibrated(far[i], ALPHA, NULL_RUNS)),
        })
        .collect()
}
