//! Simulated models with closed-form likelihoods, so the Neyman–Pearson oracle can be computed.
//!
//! - `Categorical`: a fixed answer distribution (pass/fail is the special case of two answers).
//! - `LogNormal`: completion lengths.
//! - `Markov`: free text as one first-order Markov chain per prompt over V symbols with logits
//!   drawn N(0, 2²) (detection-science §5, S7); a perturbed copy adds N(0, τ²) to every logit,
//!   the toy stand-in for quantization; a freshly drawn chain is another model altogether.

use modelpin::stats::rng::Rng;

/// Answer i with probability `probs[i]`.
#[derive(Debug, Clone)]
pub struct Categorical {
    pub probs: Vec<f64>,
}

impl Categorical {
    pub fn new(probs: &[f64]) -> Categorical {
        Categorical {
            probs: probs.to_vec(),
        }
    }

    pub fn draw(&self, rng: &mut Rng) -> usize {
        let mut u = rng.next_f64();
        for (i, p) in self.probs.iter().enumerate() {
            if u < *p {
                return i;
            }
            u -= p;
        }
        self.probs.len() - 1
    }
}

/// exp(N(ln median, sigma²)).
#[derive(Debug, Clone, Copy)]
pub struct LogNormal {
    pub median: f64,
    pub sigma: f64,
}

impl LogNormal {
    pub fn draw(self, rng: &mut Rng) -> f64 {
        (self.median.ln() + self.sigma * rng.normal()).exp()
    }
}

/// First-order Markov chains over `symbols` letters, one per prompt, emitting `length` letters.
#[derive(Debug, Clone)]
pub struct Markov {
    /// Per prompt: the initial distribution's logits, then one row per previous symbol.
    logits: Vec<Vec<Vec<f64>>>,
    pub length: usize,
}

/// Log-probabilities from logits.
fn log_softmax(logits: &[f64]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ln_sum = logits.iter().map(|l| (l - max).exp()).sum::<f64>().ln() + max;
    logits.iter().map(|l| l - ln_sum).collect()
}

/// A chain ready to sample and score: log-probabilities per prompt and row.
#[derive(Debug, Clone)]
pub struct Chain {
    ln_p: Vec<Vec<Vec<f64>>>,
    length: usize,
}

impl Markov {
    /// Logits N(0, scale²) for `prompts` prompts over `symbols` letters.
    pub fn random(prompts: usize, symbols: usize, length: usize, scale: f64, seed: u64) -> Markov {
        let mut rng = Rng::new(seed);
        let logits = (0..prompts)
            .map(|_| {
                (0..=symbols)
                    .map(|_| (0..symbols).map(|_| scale * rng.normal()).collect())
                    .collect()
            })
            .collect();
        Markov { logits, length }
    }

    /// The same chain with N(0, τ²) noise added to every logit.
    pub fn perturbed(&self, tau: f64, seed: u64) -> Markov {
        let mut rng = Rng::new(seed);
        let logits = self
            .logits
            .iter()
            .map(|rows| {
                rows.iter()
                    .map(|row| row.iter().map(|l| l + tau * rng.normal()).collect())
                    .collect()
            })
            .collect();
        Markov {
            logits,
            length: self.length,
        }
    }

    pub fn chain(&self) -> Chain {
        Chain {
            ln_p: self
                .logits
                .iter()
                .map(|rows| rows.iter().map(|r| log_softmax(r)).collect())
                .collect(),
            length: self.length,
        }
    }
}

impl Chain {
    pub fn prompts(&self) -> usize {
        self.ln_p.len()
    }

    /// One answer to `prompt` as symbol indices.
    pub fn draw(&self, prompt: usize, rng: &mut Rng) -> Vec<usize> {
        let rows = &self.ln_p[prompt];
        let mut out = Vec::with_capacity(self.length);
        let mut row = 0;
        for _ in 0..self.length {
            let mut u = rng.next_f64();
            let probs = &rows[row];
            let mut next = probs.len() - 1;
            for (s, lp) in probs.iter().enumerate() {
                let p = lp.exp();
                if u < p {
                    next = s;
                    break;
                }
                u -= p;
            }
            out.push(next);
            row = next + 1;
        }
        out
    }

    pub fn ln_likelihood(&self, prompt: usize, symbols: &[usize]) -> f64 {
        let rows = &self.ln_p[prompt];
        let mut row = 0;
        symbols
            .iter()
            .map(|&s| {
                let lp = rows[row][s];
                row = s + 1;
                lp
            })
            .sum()
    }
}

/// Symbols as letters a, b, c, …
pub fn text(symbols: &[usize]) -> String {
    symbols
        .iter()
        .map(|&s| char::from(b'a' + s as u8))
        .collect()
}
