//! What an audit will do before it does it: which pins, how many calls, what they may cost.
//!
//! Pure: the commands print the estimate before the first call, so a user sees the spend before
//! it happens, and refuse unknown pin names before anything runs.

use std::fmt;

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
    #[error(
        "pin `{id}` in {config} names no probes, so nothing could be measured for it\n  = help: add `probes = [\"probes/*.toml\"]` to the pin (`modelpin init` writes example probes)"
    )]
    NoProbes { id: String, config: String },
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
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub pins: usize,
    /// Probe calls planned (retries not counted).
    pub calls: u64,
    /// Prompt plus `max_tokens` of every call.
    pub tokens: u64,
    /// USD at the pins' prices, for the pins that have one.
    pub usd: f64,
    /// Pins without a price, whose cost is unknown in advance.
    pub unpriced: usize,
}

impl Estimate {
    /// `samples` overrides each pin's own (`lock --samples`, `check --no-probes`).
    #[must_use]
    pub fn of(config: &Config, pins: &[&Pin], samples: Option<u32>) -> Estimate {
        let mut estimate = Estimate {
            pins: pins.len(),
            calls: 0,
            tokens: 0,
            usd: 0.0,
            unpriced: 0,
        };
        for pin in pins {
            let n = u64::from(samples.unwrap_or(pin.samples));
            for probe in config.probes_of(pin) {
                let prompt_chars = probe.prompt.chars().count()
                    + probe.system.as_ref().map_or(0, |s| s.chars().count());
                // About four characters per token for English text, plus the chat template.
                let input = (prompt_chars as u64).div_ceil(4) + 8;
                let output = u64::from(probe.max_tokens);
                estimate.calls += n;
                estimate.tokens += n * (input + output);
                if let Some(p) = pin.price {
                    estimate.usd +=
                        n as f64 * (input as f64 * p.input + output as f64 * p.output) / 1e6;
                }
            }
            estimate.unpriced += usize::from(pin.price.is_none());
        }
        estimate
    }
}

/// "N pins: C calls planned (about T tokens, about $X)": an estimate, not a bound — prompt
/// tokens are guessed from characters, and a provider may answer past `max_tokens`.
impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let usd = self.usd;
        let cost = match self.unpriced {
            0 => format!(", about ${usd:.4}"),
            n if n == self.pins => String::new(),
            n => format!(", about ${usd:.4} for the {} priced pins", self.pins - n),
        };
        write!(
            f,
            "{} pin{}: {} calls planned (estimated {} tokens{cost}, if providers keep to max_tokens)",
            self.pins,
            if self.pins == 1 { "" } else { "s" },
            self.calls,
            self.tokens
        )
    }
}
