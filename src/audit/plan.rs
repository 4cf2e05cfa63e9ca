//! What an audit will do before it does it: which pins, how many calls, what they may cost.
//!
//! Pure: the commands print the estimate before the first call, so a user sees the spend before
//! it happens, and refuse unknown pin names before anything runs.

use std::fmt;

use crate::words::{count, count_of};

use crate::config::{Config, Pin};

/// The tool was asked for something the config does not have.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("no pin `{id}` in {config}; pins are: {known}")]
    UnknownPin {
        id: String,
        config: String,
        known: String,
    },
    #[error("pin `{id}` in {config} names no probes, so nothing could be measured for it")]
    NoProbes { id: String, config: String },
}

impl crate::problem::Explain for AuditError {
    fn help(&self) -> Option<String> {
        match self {
            AuditError::UnknownPin { .. } => None,
            AuditError::NoProbes { .. } => Some(
                "add `probes = [\"probes/*.toml\"]` to the pin (`modelpin init` writes example probes)"
                    .to_owned(),
            ),
        }
    }
}

/// The pins named on the command line, in config order; all when none are named.
pub fn select_pins<'a>(config: &'a Config, ids: &[String]) -> Result<Vec<&'a Pin>, AuditError> {
    if let Some(id) = ids
        .iter()
        .find(|id| !config.pins.iter().any(|p| &p.id == *id))
    {
        let known: Vec<&str> = config.pins.iter().map(|p| p.id.as_str()).collect();
        return Err(AuditError::UnknownPin {
            id: id.clone(),
            config: config.path.display().to_string(),
            known: known.join(", "),
        });
    }
    let pins: Vec<&Pin> = config
        .pins
        .iter()
        .filter(|p| ids.is_empty() || ids.contains(&p.id))
        .collect();
    if let Some(empty) = pins.iter().find(|p| p.probes.is_empty()) {
        return Err(AuditError::NoProbes {
            id: empty.id.clone(),
            config: config.path.display().to_string(),
        });
    }
    Ok(pins)
}

/// Calls, tokens and cost an audit plans, said before it starts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Estimate {
    /// Pins that are called.
    pub pins: usize,
    /// Pins of the audit that make no call: `check` calls no pin without a baseline.
    pub unbaselined: usize,
    /// Probe calls planned (retries not counted).
    pub calls: u64,
    /// Prompt plus `max_tokens` of every call.
    pub tokens: u64,
    /// USD at the pins' prices, for the pins that have one.
    pub usd: f64,
    /// Pins without a price, whose cost is unknown in advance, in config order.
    pub unpriced: Vec<String>,
    /// Of `calls`, the first-token tier's one-token calls (at most: a lock's baseline calls
    /// depend on what discovery keeps).
    pub tier_calls: u64,
    /// Of `tokens` and `usd`, the tier's (one output token a call).
    pub tier_tokens: u64,
    pub tier_usd: f64,
}

impl Estimate {
    /// `samples` overrides each pin's own (`lock --samples`, `check --no-probes`). Each pin is
    /// priced by `price_of`: the figure the audit counts against the cap and its report uses
    /// (`run::price_of`: its `price`, else its lock's).
    #[must_use]
    pub fn of(
        config: &Config,
        pins: &[&Pin],
        samples: crate::audit::run::Samples,
        price_of: impl Fn(&Pin) -> Option<crate::config::Price>,
    ) -> Estimate {
        let mut estimate = Estimate {
            pins: pins.len(),
            ..Estimate::default()
        };
        for pin in pins {
            let price = price_of(pin);
            let n = u64::from(samples.of(pin));
            for probe in config.probes_of(pin) {
                let prompt_chars = probe.prompt.chars().count()
                    + probe.system.as_ref().map_or(0, |s| s.chars().count());
                // About four characters per token for English text, plus the chat template.
                let input = (prompt_chars as u64).div_ceil(4) + 8;
                let output = u64::from(probe.max_tokens);
                estimate.calls += n;
                estimate.tokens += n * (input + output);
                if let Some(p) = price {
                    estimate.usd +=
                        n as f64 * (input as f64 * p.input + output as f64 * p.output) / 1e6;
                }
            }
            if price.is_none() {
                estimate.unpriced.push(pin.id.clone());
            }
        }
        estimate
    }

    /// Adds a pin's first-token calls (one output token each), at its price.
    pub fn add_tier(
        &mut self,
        price: Option<crate::config::Price>,
        calls: &crate::audit::first_tokens::TierCalls,
    ) {
        let n = u64::from(calls.samples);
        for probe in &calls.probes {
            let prompt_chars = probe.prompt.chars().count()
                + probe.system.as_ref().map_or(0, |s| s.chars().count());
            let input = (prompt_chars as u64).div_ceil(4) + 8;
            self.calls += n;
            self.tier_calls += n;
            self.tokens += n * (input + 1);
            self.tier_tokens += n * (input + 1);
            if let Some(p) = price {
                let usd = n as f64 * (input as f64 * p.input + p.output) / 1e6;
                self.usd += usd;
                self.tier_usd += usd;
            }
        }
    }
}

/// "it" or "the N of them".
fn pick(n: usize) -> String {
    if n == 1 {
        "it".to_owned()
    } else {
        format!("any of the {n}")
    }
}

/// "N pins: C calls planned (about T tokens, about $X)": an estimate, not a bound — prompt
/// tokens are guessed from characters, and a provider may answer past `max_tokens`.
impl Estimate {
    /// The warning for pins the spend cap cannot hold, when there are any: their cost is
    /// neither in the estimate nor, unless the provider reports it, in the running total.
    #[must_use]
    pub fn unpriced_warning(&self, cap: Option<f64>) -> Option<String> {
        let n = self.unpriced.len();
        if n == 0 {
            return None;
        }
        let shown: Vec<&str> = self.unpriced.iter().take(5).map(String::as_str).collect();
        let more = if n > shown.len() {
            format!(" and {} more", n - shown.len())
        } else {
            String::new()
        };
        let cap = cap.map_or("the spend cap".to_owned(), |c| {
            format!("the spend cap (${c:.2})")
        });
        let (have, them) = if n == 1 {
            ("has", "it")
        } else {
            ("have", "them")
        };
        Some(format!(
            "{} {have} no `price` ({}{more}): the estimate leaves {them} out and {cap} cannot limit {them} unless the provider reports each call's cost (OpenRouter, the LiteLLM proxy); give each a `price` in pins.toml (USD per million tokens)",
            count_of(n, "pin"),
            shown.join(", ")
        ))
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let usd = self.usd;
        let cost = match self.unpriced.len() {
            0 => format!(", about ${usd:.4}"),
            n if n == self.pins => ", cost unknown: unpriced".to_owned(),
            n => format!(
                ", about ${usd:.4} for the {} priced",
                count_of(self.pins - n, "pin")
            ),
        };
        let tier = if self.tier_calls > 0 {
            let tier_cost = match self.unpriced.len() {
                0 => format!(", about ${:.4}", self.tier_usd),
                n if n == self.pins => String::new(),
                _ => format!(", about ${:.4} for the priced pins", self.tier_usd),
            };
            format!(
                ", {} of them one-token (first-token tier: {}{tier_cost})",
                self.tier_calls,
                count(self.tier_tokens, "token")
            )
        } else {
            String::new()
        };
        let idle = match self.unbaselined {
            0 => String::new(),
            n if self.pins == 0 => format!(" (no baseline for {}: none is called)", pick(n)),
            n => format!(" ({n} without a baseline: not called)"),
        };
        write!(
            f,
            "{}: {} planned{idle}{tier} (estimated {}{cost}, if providers keep to max_tokens)",
            count_of(self.pins + self.unbaselined, "pin"),
            count(self.calls, "call"),
            count(self.tokens, "token")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(unpriced: &[&str], tier_calls: u64) -> Estimate {
        Estimate {
            pins: 2,
            unbaselined: 0,
            calls: 20 + tier_calls,
            tokens: 1000 + tier_calls * 12,
            usd: 0.25,
            unpriced: unpriced.iter().map(|s| (*s).to_owned()).collect(),
            tier_calls,
            tier_tokens: tier_calls * 12,
            tier_usd: 0.0125,
        }
    }

    #[test]
    fn the_plan_line_states_calls_tokens_and_cost_of_the_tier() {
        let table = [
            (
                estimate(&[], 0),
                "2 pins: 20 calls planned (estimated 1000 tokens, about $0.2500, if providers keep to max_tokens)",
            ),
            (
                estimate(&[], 256),
                "2 pins: 276 calls planned, 256 of them one-token (first-token tier: 3072 tokens, about $0.0125) (estimated 4072 tokens, about $0.2500, if providers keep to max_tokens)",
            ),
            (
                estimate(&["b"], 256),
                "2 pins: 276 calls planned, 256 of them one-token (first-token tier: 3072 tokens, about $0.0125 for the priced pins) (estimated 4072 tokens, about $0.2500 for the 1 pin priced, if providers keep to max_tokens)",
            ),
            (
                estimate(&["a", "b"], 256),
                "2 pins: 276 calls planned, 256 of them one-token (first-token tier: 3072 tokens) (estimated 4072 tokens, cost unknown: unpriced, if providers keep to max_tokens)",
            ),
        ];
        for (estimate, want) in table {
            assert_eq!(estimate.to_string(), want);
        }
    }

    #[test]
    fn pins_without_a_baseline_count_as_pins_that_make_no_call() {
        let none = Estimate {
            unbaselined: 1,
            ..Estimate::default()
        };
        assert_eq!(
            none.to_string(),
            "1 pin: 0 calls planned (no baseline for it: none is called) (estimated 0 tokens, about $0.0000, if providers keep to max_tokens)"
        );
        let some = Estimate {
            unbaselined: 2,
            ..estimate(&[], 0)
        };
        assert_eq!(
            some.to_string(),
            "4 pins: 20 calls planned (2 without a baseline: not called) (estimated 1000 tokens, about $0.2500, if providers keep to max_tokens)"
        );
    }
}
