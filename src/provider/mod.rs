//! Provider adapters: one wire format per file, as pure functions.
//!
//! An adapter knows how to phrase one probe call for its provider (`build_request`) and how to
//! read whatever came back (`parse_reply`). Neither does I/O, so both are tested directly on the
//! real recorded responses under `tests/fixtures/real/`. The transport sends what `build_request`
//! returns; the auditor judges what `parse_reply` returns.

// Provider names (OpenAI, OpenRouter, DeepSeek) appear in these docs as prose, not as code; a
// crate-wide `doc-valid-idents` in clippy.toml would be the better home for this.

mod anthropic;
mod envelope;
#[cfg(test)]
pub(crate) mod fixture_table;
pub mod gateway;
mod gemini;
mod headers;
mod json;
pub mod modality;
mod openai;
#[cfg(test)]
mod props;
mod refusal;

use std::fmt;

use crate::redact::Redactor;
use crate::text;

/// The wire formats modelpin speaks. A closed set: `match` over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderKind {
    OpenAi,
    OpenAiCompatible,
    OpenRouter,
    Azure,
    Anthropic,
    Gemini,
}

impl ProviderKind {
    pub const ALL: [ProviderKind; 6] = [
        ProviderKind::OpenAi,
        ProviderKind::OpenAiCompatible,
        ProviderKind::OpenRouter,
        ProviderKind::Azure,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
    ];

    /// Whether its chat call takes a `seed`: the OpenAI shape does; Anthropic's Messages API has
    /// none, and Gemini draws a fresh one itself for a call that names none (Gemini API
    /// reference, `GenerationConfig.seed`).
    #[must_use]
    pub fn takes_seed(self) -> bool {
        !matches!(self, ProviderKind::Anthropic | ProviderKind::Gemini)
    }

    /// The spelling used in `pins.toml` (`kind = "..."`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::OpenAiCompatible => "openai-compatible",
            ProviderKind::OpenRouter => "openrouter",
            ProviderKind::Azure => "azure",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<ProviderKind> {
        ProviderKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The API root each provider's official SDK uses; `None` where the user must say.
    #[must_use]
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("https://api.openai.com/v1"),
            ProviderKind::OpenRouter => Some("https://openrouter.ai/api/v1"),
            ProviderKind::Anthropic => Some("https://api.anthropic.com"),
            ProviderKind::Gemini => Some("https://generativelanguage.googleapis.com"),
            ProviderKind::OpenAiCompatible | ProviderKind::Azure => None,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A secret read from the environment. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    #[must_use]
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The raw value, for the one place that puts it on the wire.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Where and how to reach one configured provider.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub kind: ProviderKind,
    /// API root without a trailing slash, as the official SDK takes it.
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// Azure `api-version` query parameter.
    pub api_version: Option<String>,
    /// Extra headers from `pins.toml` (`headers = { ... }`), sent on every call.
    pub headers: Vec<(String, String)>,
    /// Each sampled call carries a fresh random `seed` (`seed = false` in `pins.toml` turns it
    /// off; only OpenAI-shaped kinds take one).
    pub seed: bool,
}

/// One probe call, as the adapter needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeCall<'a> {
    /// The model ID sent on the wire (Azure: the deployment name).
    pub model: &'a str,
    pub system: Option<&'a str>,
    pub prompt: &'a str,
    pub max_tokens: u32,
    pub temperature: f64,
    /// Ask for the top `n` logprobs of each output token (OpenAI-shaped providers only).
    pub top_logprobs: Option<u8>,
    /// The call's own sampling seed (OpenAI-shaped providers only), fresh for every call.
    pub seed: Option<u32>,
}

/// A seed for one call, from the operating system's randomness, below 2³¹ so that every server's
/// integer type holds it (llama.cpp's is 32-bit unsigned, Gemini's a signed 32-bit integer).
/// Fresh per call: a seed shared by calls would make their draws one draw.
#[must_use]
pub fn fresh_seed() -> u32 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) & 0x7FFF_FFFF
}

/// Most top tokens a provider may report per position: OpenAI's `top_logprobs` ceiling (the API
/// reference: "an integer between 0 and 20"). More entries are dropped.
pub const MAX_TOP_LOGPROBS: usize = 20;

/// Longest token text kept (a token is a few characters; a longer one is no token).
pub const MAX_TOKEN_CHARS: usize = 64;

/// The first output token as the provider reported it, where it reports logprobs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FirstToken {
    /// The token the provider returned first.
    pub sampled: String,
    /// The logprob the provider gave the returned token itself (`content[0].logprob`).
    pub sampled_logprob: Option<f64>,
    /// Its top tokens with their natural-log probabilities, most probable first, each token once,
    /// at most `MAX_TOP_LOGPROBS`, every value finite and at most 0.
    pub top: Vec<(String, f64)>,
    /// How many entries `top_logprobs` held as it came, before any was dropped.
    pub listed: usize,
    /// What made the listing no distribution, seen while reading it: such a call is no evidence
    /// for the logprob and sampling tests.
    pub flaw: Option<Flaw>,
}

/// Why a call's reported logprobs cannot be read as the model's distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Flaw {
    /// An entry (or the returned token) carried no number as its logprob.
    NotANumber,
    /// A logprob above 0: a probability above 1.
    AboveZero,
    /// A token listed twice.
    Repeated,
    /// More entries than asked for, beyond the returned token appended to the top ones.
    MoreThanAsked,
    /// The returned token's own logprob differs from its entry in the list.
    SampledDisagrees,
    /// The listed probabilities add up to more than 1.
    NotADistribution,
}

impl Flaw {
    /// The reason a report gives.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Flaw::NotANumber => "a logprob that is not a number",
            Flaw::AboveZero => "a logprob above 0",
            Flaw::Repeated => "a token listed twice",
            Flaw::MoreThanAsked => "more top_logprobs entries than asked for",
            Flaw::SampledDisagrees => "the returned token's logprob differs from its own entry",
            Flaw::NotADistribution => "listed probabilities adding up to more than 1",
        }
    }
}

/// Logprobs this far above 0 are rounding of a probability of 1 (a float32 log-softmax), read
/// as 0; further above, a flaw.
pub const LOGPROB_ROUNDING: f64 = 1e-4;

/// A fully built HTTP request: always `POST` with a JSON body.
#[derive(Clone)]
pub struct HttpRequest {
    pub url: String,
    /// Header names lower-case. Auth headers carry secrets: never log this struct's headers.
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpRequest")
            .field("url", &self.url)
            .field("header_names", &names)
            .field("body", &self.body)
            .finish()
    }
}

/// What came back over HTTP, before any interpretation. Header names lower-case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// First value of a header, by lower-case name.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A 200 with these headers and no body: what header readers are tested on.
    #[cfg(test)]
    pub(crate) fn with_headers(headers: &[(&str, &str)]) -> RawResponse {
        RawResponse {
            status: 200,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        }
    }
}

/// Token counts as the provider reported them; `None` where the provider said nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cached_input: Option<u64>,
    pub reasoning: Option<u64>,
    /// A count past `MAX_TOKEN_COUNT`: the field is `None` above, and the call's tokens and cost
    /// are unmeasured (inconclusive), never 0.
    pub implausible: Option<ImplausibleCount>,
}

/// The largest token count a call can plausibly report: 10^8, ten times the largest context
/// window offered for general use (10 million tokens, Meta's Llama 4 Scout, April 2025) and as
/// large as the largest ever announced (100 million, Magic's LTM-2-mini, August 2024). A call's
/// input and output together fit in its context window, so a larger count is a broken or
/// hostile usage block; summing it would also overflow the totals.
pub const MAX_TOKEN_COUNT: u64 = 100_000_000;

/// A usage field holding a number past `MAX_TOKEN_COUNT`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImplausibleCount {
    /// The field as the provider named it (`completion_tokens`, `candidatesTokenCount`, ...).
    pub field: &'static str,
    pub value: f64,
}

/// A lifecycle hint seen on an ordinary response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleHint {
    /// `Sunset` header (RFC 8594), raw value.
    Sunset(String),
    /// `Deprecation` header (RFC 9745 `@<unix>` or the older `true` / date forms), raw value.
    Deprecation(String),
    /// A deprecation warning in the body (OpenAI's legacy top-level `warning`).
    BodyWarning(String),
    /// Mistral's `x-model-deprecation-timestamp` header, raw value.
    ModelDeprecationTimestamp(String),
}

impl LifecycleHint {
    /// The same hint with its raw value passed through `f`.
    #[must_use]
    pub fn map(self, f: impl Fn(String) -> String) -> LifecycleHint {
        match self {
            LifecycleHint::Sunset(v) => LifecycleHint::Sunset(f(v)),
            LifecycleHint::Deprecation(v) => LifecycleHint::Deprecation(f(v)),
            LifecycleHint::BodyWarning(v) => LifecycleHint::BodyWarning(f(v)),
            LifecycleHint::ModelDeprecationTimestamp(v) => {
                LifecycleHint::ModelDeprecationTimestamp(f(v))
            }
        }
    }
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// The model the provider says served the call, normalised (`models/` prefix removed).
    pub served_model: Option<String>,
    /// OpenRouter's upstream host (`$.provider`).
    pub upstream: Option<String>,
    /// Another model that actually produced the answer (Anthropic `usage.iterations[]`
    /// `fallback_message` entry), when the top-level model still names the requested one.
    pub fallback_model: Option<String>,
    pub usage: Usage,
    /// Cost the provider itself reported for this call (OpenRouter `usage.cost`), USD.
    pub reported_cost_usd: Option<f64>,
    pub system_fingerprint: Option<String>,
    /// The answer text (all text parts joined).
    pub text: String,
    pub request_id: Option<String>,
    pub lifecycle: Vec<LifecycleHint>,
    /// What a gateway in front of the provider said about the answer (LiteLLM, Kong, ...).
    pub gateway: Option<Box<gateway::Gateway>>,
    /// The first output token and its reported top logprobs, when they were asked for and given.
    pub first_token: Option<Box<FirstToken>>,
}

/// How a provider refused a call. Classification lives here because only the adapter knows the
/// provider's error shape (OpenAI 400 `model_not_found` on Responses, Gemini `NOT_FOUND`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The model (or Azure deployment) does not exist or is gone.
    NotFound,
    Auth,
    /// Quota or balance exhausted: not a transient error.
    Quota,
    InvalidRequest,
    RateLimited,
    Overloaded,
    Server,
}

impl ErrorClass {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::NotFound => "not_found",
            ErrorClass::Auth => "auth",
            ErrorClass::Quota => "quota",
            ErrorClass::InvalidRequest => "invalid_request",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Overloaded => "overloaded",
            ErrorClass::Server => "server",
        }
    }
}

/// A refusal, with the provider's own words kept for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub status: u16,
    pub class: ErrorClass,
    /// Provider error code (`model_not_found`, `DeploymentNotFound`, `1500`, `NOT_FOUND`, ...).
    pub code: Option<String>,
    /// Provider error type (`invalid_request_error`, `not_found_error`, ...).
    pub error_type: Option<String>,
    pub message: String,
    pub request_id: Option<String>,
}

/// Everything `parse_reply` can conclude. Never a panic, whatever the bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Reply(Reply),
    Rejected(Rejected),
    Unparseable { status: u16, reason: String },
}

/// Phrases one probe call for `endpoint`: URL, headers (names lower-case) and JSON body.
///
/// Header order: `content-type`, the provider's auth and version headers, then the endpoint's
/// own `headers` from `pins.toml`, appended as given.
#[must_use]
pub fn build_request(endpoint: &Endpoint, call: &ProbeCall<'_>) -> HttpRequest {
    let base = endpoint.base_url.trim_end_matches('/');
    let mut request = match endpoint.kind {
        ProviderKind::OpenAi
        | ProviderKind::OpenAiCompatible
        | ProviderKind::OpenRouter
        | ProviderKind::Azure => openai::request(endpoint, base, call),
        ProviderKind::Anthropic => anthropic::request(endpoint, base, call),
        ProviderKind::Gemini => gemini::request(endpoint, base, call),
    };
    let content_type = ("content-type".to_owned(), "application/json".to_owned());
    request.headers.insert(0, content_type);
    let extra = endpoint.headers.iter();
    request
        .headers
        .extend(extra.map(|(name, value)| (name.to_ascii_lowercase(), value.clone())));
    request
}

/// Reads whatever came back for a call to a `kind` provider. Never panics, whatever the bytes;
/// every string kept is bounded (`text::bounded`), so a hostile reply cannot grow the store, the
/// lock or a metric label.
#[must_use]
pub fn parse_reply(kind: ProviderKind, response: &RawResponse) -> Parsed {
    parse_reply_masked(kind, response, &Redactor::default())
}

/// `parse_reply` with every secret of `redactor` masked in the decoded text before it is bounded:
/// a key the body spells with escapes, or splits across the parts an answer is joined from,
/// reaches no `Reply` or `Rejected`. Masking before bounding matters too: a cut through the middle
/// of a key would otherwise keep its first half.
#[must_use]
pub fn parse_reply_masked(
    kind: ProviderKind,
    response: &RawResponse,
    redactor: &Redactor,
) -> Parsed {
    let parsed = match kind {
        ProviderKind::OpenAi
        | ProviderKind::OpenAiCompatible
        | ProviderKind::OpenRouter
        | ProviderKind::Azure => openai::parse(kind, response),
        ProviderKind::Anthropic => anthropic::parse(response),
        ProviderKind::Gemini => gemini::parse(response),
    };
    bound(mask(parsed, redactor))
}

/// Every string of `parsed` through `redactor`.
fn mask(parsed: Parsed, redactor: &Redactor) -> Parsed {
    let m = |s: String| redactor.scrub_owned(s);
    let opt = |s: Option<String>| s.map(m);
    match parsed {
        Parsed::Reply(r) => Parsed::Reply(Reply {
            served_model: opt(r.served_model),
            upstream: opt(r.upstream),
            fallback_model: opt(r.fallback_model),
            system_fingerprint: opt(r.system_fingerprint),
            text: m(r.text),
            request_id: opt(r.request_id),
            lifecycle: r.lifecycle.into_iter().map(|h| h.map(m)).collect(),
            gateway: r.gateway.map(|g| {
                Box::new(gateway::Gateway {
                    public_model: opt(g.public_model),
                    deployment: opt(g.deployment),
                    deployment_id: opt(g.deployment_id),
                    api_base: opt(g.api_base),
                    ..*g
                })
            }),
            first_token: r.first_token.map(|t| {
                let FirstToken { sampled, top, .. } = *t;
                Box::new(FirstToken {
                    sampled: m(sampled),
                    top: top.into_iter().map(|(token, lp)| (m(token), lp)).collect(),
                    ..*t
                })
            }),
            ..r
        }),
        Parsed::Rejected(r) => Parsed::Rejected(Rejected {
            code: opt(r.code),
            error_type: opt(r.error_type),
            message: m(r.message),
            request_id: opt(r.request_id),
            ..r
        }),
        Parsed::Unparseable { status, reason } => Parsed::Unparseable {
            status,
            reason: m(reason),
        },
    }
}

fn bound(parsed: Parsed) -> Parsed {
    let id = |s: String| text::bounded_owned(s, text::MAX_ID_CHARS);
    let message = |s: String| text::bounded_owned(s, text::MAX_MESSAGE_CHARS);
    match parsed {
        Parsed::Reply(r) => Parsed::Reply(Reply {
            served_model: r.served_model.map(id),
            upstream: r.upstream.map(id),
            fallback_model: r.fallback_model.map(id),
            system_fingerprint: r.system_fingerprint.map(id),
            text: text::bounded_owned(r.text, text::MAX_ANSWER_CHARS),
            request_id: r.request_id.map(id),
            lifecycle: r.lifecycle.into_iter().map(|h| h.map(message)).collect(),
            first_token: r.first_token.map(|t| Box::new(bound_first_token(*t))),
            ..r
        }),
        Parsed::Rejected(r) => Parsed::Rejected(Rejected {
            code: r.code.map(id),
            error_type: r.error_type.map(id),
            message: message(r.message),
            request_id: r.request_id.map(id),
            ..r
        }),
        Parsed::Unparseable { status, reason } => Parsed::Unparseable {
            status,
            reason: message(reason),
        },
    }
}

/// Token texts cut to `MAX_TOKEN_CHARS`; tokens that became equal by the cut (or by masking)
/// keep their first, most probable entry.
fn bound_first_token(t: FirstToken) -> FirstToken {
    let token = |s: String| text::bounded_owned(s, MAX_TOKEN_CHARS);
    let mut top: Vec<(String, f64)> = Vec::with_capacity(t.top.len());
    for (tok, lp) in t.top.into_iter().take(MAX_TOP_LOGPROBS) {
        let tok = token(tok);
        if !top.iter().any(|(seen, _)| *seen == tok) {
            top.push((tok, lp));
        }
    }
    FirstToken {
        sampled: token(t.sampled),
        top,
        ..t
    }
}

/// Which provider endpoint states retirement dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelsEndpoint {
    /// OpenAI `GET {base}/models/{id}`: `shutdown_date`.
    OpenAiModel,
    /// OpenRouter `GET {base}/models`: `expiration_date` for every slug.
    OpenRouterModels,
    /// Mistral `GET {base}/models`: `deprecation` and its replacement.
    MistralModels,
}

/// A `GET` for a provider's model metadata, with the same auth headers a probe call carries.
#[derive(Clone)]
pub struct ModelsRequest {
    pub endpoint: ModelsEndpoint,
    pub url: String,
    pub headers: Vec<(String, String)>,
}

impl fmt::Debug for ModelsRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelsRequest")
            .field("endpoint", &self.endpoint)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Where `endpoint` publishes lifecycle data for `model`, if anywhere. Mistral speaks the
/// OpenAI-compatible wire, so it is recognised by its host or by a provider table named for it.
#[must_use]
pub fn models_request(
    endpoint: &Endpoint,
    provider_name: &str,
    model: &str,
) -> Option<ModelsRequest> {
    let base = endpoint.base_url.trim_end_matches('/');
    let (kind, url) = match endpoint.kind {
        ProviderKind::OpenAi => (
            ModelsEndpoint::OpenAiModel,
            format!("{base}/models/{}", path_segment(model)),
        ),
        ProviderKind::OpenRouter => (ModelsEndpoint::OpenRouterModels, format!("{base}/models")),
        ProviderKind::OpenAiCompatible
            if base.contains("mistral.ai")
                || provider_name.to_ascii_lowercase().contains("mistral") =>
        {
            (ModelsEndpoint::MistralModels, format!("{base}/models"))
        }
        _ => return None,
    };
    let call = ProbeCall {
        model,
        system: None,
        prompt: "",
        max_tokens: 1,
        temperature: 0.0,
        top_logprobs: None,
        seed: None,
    };
    let headers = build_request(endpoint, &call)
        .headers
        .into_iter()
        .filter(|(name, _)| name != "content-type")
        .collect();
    Some(ModelsRequest {
        endpoint: kind,
        url,
        headers,
    })
}

/// A served model ID in the form pins compare against: surrounding whitespace, Gemini's
/// `models/` prefix and Vertex's resource path (`projects/.../publishers/google/models/x`) removed.
/// Dates and slugs are left alone: whether `gpt-4o-2024-08-06` counts as `gpt-4o` is the pin's call.
#[must_use]
pub fn normalize_model_id(id: &str) -> String {
    let id = id.trim();
    let id = if id.starts_with("projects/") || id.starts_with("publishers/") {
        id.rsplit_once("/models/").map_or(id, |(_, model)| model)
    } else {
        id
    };
    id.strip_prefix("models/").unwrap_or(id).to_owned()
}

pub(crate) use crate::text::path_segment;

#[cfg(test)]
mod tests {
    use super::{
        Endpoint, Parsed, ProbeCall, ProviderKind, RawResponse, Secret, build_request,
        normalize_model_id, parse_reply, path_segment,
    };

    pub(super) const KEY: &str = "sk-test-SECRET-0123456789";

    pub(super) fn endpoint(kind: ProviderKind, base_url: &str) -> Endpoint {
        Endpoint {
            kind,
            base_url: base_url.to_owned(),
            api_key: Some(Secret::new(KEY.to_owned())),
            api_version: None,
            headers: Vec::new(),
            seed: true,
        }
    }

    pub(super) fn call() -> ProbeCall<'static> {
        ProbeCall {
            model: "m-1",
            system: Some("Be brief."),
            prompt: "What is 17 * 23?",
            max_tokens: 8,
            temperature: 1.0,
            top_logprobs: None,
            seed: None,
        }
    }

    pub(super) fn response(status: u16, body: &[u8]) -> RawResponse {
        RawResponse {
            status,
            headers: Vec::new(),
            body: body.to_vec(),
        }
    }

    pub(super) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn every_kind_sends_json_tolerates_a_trailing_slash_and_appends_endpoint_headers() {
        for kind in ProviderKind::ALL {
            let mut ep = endpoint(kind, "https://api.example.com/root/");
            ep.headers = vec![("X-Team".to_owned(), "ml".to_owned())];
            let request = build_request(&ep, &call());
            assert!(
                request.url.starts_with("https://api.example.com/root/")
                    && !request.url.contains("root//"),
                "{kind}: {}",
                request.url
            );
            assert_eq!(
                request.headers[0],
                ("content-type".to_owned(), "application/json".to_owned())
            );
            assert_eq!(
                request.headers.last(),
                Some(&("x-team".to_owned(), "ml".to_owned()))
            );
            assert!(
                request
                    .headers
                    .iter()
                    .all(|(k, _)| *k == k.to_ascii_lowercase()),
                "{kind}"
            );
            assert!(request.body.is_object(), "{kind}");
        }
    }

    #[test]
    fn debug_of_a_request_never_shows_the_key() {
        for kind in ProviderKind::ALL {
            let request = build_request(&endpoint(kind, "https://h"), &call());
            assert!(
                request.headers.iter().any(|(_, v)| v.contains(KEY)),
                "{kind}: key not sent"
            );
            let shown = format!("{request:?} {request:#?}");
            assert!(!shown.contains("SECRET"), "{kind}: {shown}");
        }
    }

    #[test]
    fn model_ids_lose_google_prefixes_only() {
        let cases = [
            ("models/gemini-2.5-pro", "gemini-2.5-pro"),
            (" gemini-1.5-flash\n", "gemini-1.5-flash"),
            (
                "projects/p/locations/l/publishers/google/models/gemini-2.0-flash",
                "gemini-2.0-flash",
            ),
            (
                "publishers/google/models/gemini-3-flash-preview",
                "gemini-3-flash-preview",
            ),
            (
                "anthropic/claude-4.6-sonnet-20260217",
                "anthropic/claude-4.6-sonnet-20260217",
            ),
            ("gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
            ("acme/models/x", "acme/models/x"),
            ("", ""),
        ];
        for (raw, normalized) in cases {
            assert_eq!(normalize_model_id(raw), normalized, "{raw:?}");
        }
    }

    #[test]
    fn path_segments_cannot_smuggle_paths_or_queries() {
        assert_eq!(path_segment("gpt-4o_v2.1~x"), "gpt-4o_v2.1~x");
        assert_eq!(
            path_segment("a/../b?x=1#f é"),
            "a%2F..%2Fb%3Fx%3D1%23f%20%C3%A9"
        );
    }

    /// Bodies a misbehaving server or proxy really sends, for every kind and both status ranges.
    #[test]
    fn hostile_bodies_never_panic_and_never_pass_as_replies() {
        let nested = "[".repeat(100_000);
        let bodies: Vec<&[u8]> = vec![
            b"",
            b"   \n",
            b"\xff\xfe\x00\x80garbage",
            b"<html><body><h1>502 Bad Gateway</h1></body></html>",
            b"{\"choices\": [{\"message\": {\"content\": \"trunc",
            b"null",
            b"[]",
            b"42",
            b"\"a string\"",
            b"{}",
            b"{\"choices\": \"nope\", \"content\": 7, \"candidates\": {}}",
            b"{\"error\": null}",
            b"{\"error\": 17}",
            nested.as_bytes(),
        ];
        for kind in ProviderKind::ALL {
            for body in &bodies {
                for status in [200, 204, 400, 404, 500, 529] {
                    let parsed = parse_reply(kind, &response(status, body));
                    let shown = String::from_utf8_lossy(&body[..body.len().min(40)]).into_owned();
                    match (status, parsed) {
                        (200 | 204, Parsed::Unparseable { status: s, reason }) => {
                            assert_eq!(s, status);
                            assert!(!reason.is_empty(), "{kind} {shown}");
                        }
                        (400.., Parsed::Rejected(r)) => {
                            assert_eq!(r.status, status);
                            assert!(!r.message.is_empty(), "{kind} {shown}");
                        }
                        (_, other) => panic!("{kind} {status} {shown:?}: {other:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn unparseable_reasons_name_what_was_wrong() {
        let reason = |body: &[u8]| match parse_reply(ProviderKind::OpenAi, &response(200, body)) {
            Parsed::Unparseable { reason, .. } => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason(b""), "empty body");
        assert!(reason(b"{\"model\": \"x\"").starts_with("body is not valid JSON: EOF"));
        assert_eq!(reason(b"[1]"), "body is a JSON array, not an object");
        assert!(reason(b"{\"model\": \"x\"}").contains("`choices`"));
    }
}
