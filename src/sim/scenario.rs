//! What the simulated providers do, as plain data.
//!
//! A scenario maps each requested model ID to the simulated model that actually answers it, the
//! ID that model reports (honest, or masked as the requested one), and the faults to inject.
//! Tests, the demo and the benchmarks write scenarios; the server in `sim/mod.rs` plays them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Simulated models by name.
    pub models: BTreeMap<String, SimModel>,
    /// Requested model ID (Azure: deployment name) → what answers it. A requested ID without a
    /// route is unknown: the provider's own "model not found" answer.
    pub routes: BTreeMap<String, Route>,
    /// When set, every call must carry this key in the provider's auth header.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Seed for answer sampling, so a scenario replays the same answers.
    #[serde(default)]
    pub seed: u64,
    /// Documents served on `GET /feeds/<name>` (deprecation feeds), by name.
    #[serde(default)]
    pub feeds: BTreeMap<String, FeedDoc>,
}

/// A document the simulator serves as a lifecycle feed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedDoc {
    pub status: u16,
    pub body: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimModel {
    /// The ID this model reports when it answers honestly.
    pub id: String,
    pub tokenizer: Tokenizer,
    /// The first rule whose `prompt_contains` is in the prompt decides the answer distribution.
    #[serde(default)]
    pub answers: Vec<AnswerRule>,
    /// USD per million tokens; reported as `usage.cost` on OpenRouter.
    pub price: SimPrice,
    #[serde(default)]
    pub latency_ms: u64,
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// OpenRouter `provider` field: the upstream host serving this model.
    #[serde(default)]
    pub upstream: Option<String>,
    /// Samples answers at this temperature (weights raised to 1/T) while reporting logprobs of
    /// the rule's own weights, as a provider that silently changed its sampler would.
    #[serde(default)]
    pub sampling_temperature: Option<f64>,
}

/// A deterministic token counting rule: `overhead + ceil(chars / chars_per_token)`. Two models
/// with different rules give different `prompt_tokens` for the same prompt, as real tokenizers do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tokenizer {
    pub chars_per_token: f64,
    /// Chat-template tokens added to every prompt.
    pub overhead: u32,
}

impl Tokenizer {
    #[must_use]
    pub fn count(&self, text: &str) -> u64 {
        let chars = text.chars().count() as f64;
        if chars == 0.0 {
            return 0;
        }
        (chars / self.chars_per_token.max(0.1)).ceil() as u64
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimPrice {
    pub input: f64,
    pub output: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerRule {
    pub prompt_contains: String,
    /// Answers with relative weights.
    pub answers: Vec<(String, f64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Name of the simulated model that answers.
    pub model: String,
    /// Which ID the response reports.
    #[serde(default)]
    pub report: Reported,
    /// Faults, applied in order to the route's requests.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// The retirement date the provider's models endpoint states for this ID (`YYYY-MM-DD`):
    /// OpenAI `shutdown_date`, OpenRouter `expiration_date`.
    #[serde(default)]
    pub shutdown_date: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reported {
    /// The answering model's own ID: a reroute is visible in the body.
    #[default]
    Honest,
    /// The requested ID, whatever answers: a masked reroute.
    Requested,
    /// A fixed ID.
    Fixed(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// The fault hits the route's first `first` requests; `None` hits every request.
    #[serde(default)]
    pub first: Option<u32>,
    pub kind: FaultKind,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// An error in the provider's own shape for this class.
    Error {
        class: SimError,
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
    /// Any status and body, verbatim.
    Raw {
        status: u16,
        body: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
    /// Accept the request and never answer.
    Hang,
    /// A 200 whose JSON is cut off.
    Malformed,
    /// A 200 with a body of this many bytes.
    Oversized { bytes: usize },
    /// Send the status line and part of the body, then drop the connection.
    DropMidBody,
    /// Answer normally, adding these headers (e.g. `Sunset`).
    Headers { headers: Vec<(String, String)> },
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SimError {
    NotFound,
    Auth,
    Quota,
    RateLimited,
    Overloaded,
    Server,
    InvalidRequest,
}
