//! GenAI spans out of an OTLP/JSON trace export: the model asked for, the model that answered,
//! the provider, token usage and where to find the span again.
//!
//! Both generations of the OpenTelemetry GenAI semantic conventions are read
//! (`gen_ai.provider.name`, formerly `gen_ai.system`; `gen_ai.usage.input_tokens`, formerly
//! `gen_ai.usage.prompt_tokens`), and OpenInference's `llm.*` attributes. OTLP/JSON writes ids as
//! hex and 64-bit integers as strings (opentelemetry-proto, "JSON Protobuf Encoding"). Spans
//! without GenAI attributes are skipped; anything malformed is skipped and counted, never a panic.
//!
//! Three more attributes are read when present:
//! - `modelpin.probe.digest`, set by an application that opted in, on a call that sent exactly
//!   one of the pin's probes: its value is the probe's `digest` from `modelpin.lock`, so the
//!   call's prompt token count can be held against the locked one.
//! - `hidden_params`, the JSON string the LiteLLM OpenTelemetry callback sets on its request span
//!   (BerriAI/litellm `litellm/integrations/opentelemetry.py`, `set_attributes`), holding the
//!   `StandardLoggingHiddenParams` of `litellm/types/utils.py`: `litellm_model_name` ("the model
//!   name sent to the provider by litellm"), `model_id` (the router's deployment id) and
//!   `api_base`. They carry what the proxy's `x-litellm-model-name`, `x-litellm-model-id` and
//!   `x-litellm-model-api-base` response headers carry on the probe path.
//! - `litellm.provider.model`, set by LiteLLM's newer OpenTelemetry engine
//!   (`litellm/integrations/otel/model/semconv.py`, `LiteLLM.PROVIDER_MODEL`): "the model string
//!   litellm actually sent to the provider (the deployment's `litellm_params.model`)", while its
//!   `gen_ai.request.model` is the model group the caller asked for. That engine writes the API
//!   base only as `server.address` (its host), so no upstream is taken from it.

use serde_json::Value;

use crate::redact::Redactor;

/// Longest attribute value kept (model IDs, provider names): longer ones are cut.
pub const MAX_VALUE: usize = 256;

/// One LLM call as its span recorded it; serialized only into a fleet's inbox of spans.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct GenAiSpan {
    pub trace_id: String,
    pub span_id: String,
    pub service: Option<String>,
    pub provider: Option<String>,
    /// The model the application asked for.
    pub requested: Option<String>,
    /// The model that produced the response.
    pub served: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub server_address: Option<String>,
    /// The lock's digest of the probe this call sent verbatim (`modelpin.probe.digest`).
    pub probe_digest: Option<String>,
    /// The gateway deployment that answered, when a gateway's span names it.
    pub deployment: Option<Deployment>,
}

/// What LiteLLM's span attributes say about the deployment that answered.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Deployment {
    /// `litellm.provider.model`, else `litellm_model_name`: the model the deployment sent to
    /// the provider.
    pub model: Option<String>,
    /// `model_id`: the router's id of the deployment.
    pub id: Option<String>,
    /// `api_base`, without credentials, query or fragment: the upstream.
    pub api_base: Option<String>,
}

impl GenAiSpan {
    /// The span with every secret of `redactor` masked in its text: an application's
    /// instrumentation records what the provider answered (its model field, say), so a key the
    /// provider echoed would otherwise reach the verdicts, the store and the metric labels.
    #[must_use]
    pub fn masked(self, redactor: &Redactor) -> GenAiSpan {
        let m = |s: Option<String>| s.map(|s| redactor.scrub_owned(s));
        GenAiSpan {
            trace_id: redactor.scrub_owned(self.trace_id),
            span_id: redactor.scrub_owned(self.span_id),
            service: m(self.service),
            provider: m(self.provider),
            requested: m(self.requested),
            served: m(self.served),
            server_address: m(self.server_address),
            probe_digest: m(self.probe_digest),
            deployment: self.deployment.map(|d| Deployment {
                model: m(d.model),
                id: m(d.id),
                api_base: m(d.api_base),
            }),
            ..self
        }
    }
}

/// `spans` with the secrets `config` names (read from the environment) masked.
#[must_use]
pub fn masked(spans: Vec<GenAiSpan>, config: &crate::config::Config) -> Vec<GenAiSpan> {
    let redactor = config.redactor(&|name| std::env::var(name).ok());
    spans.into_iter().map(|s| s.masked(&redactor)).collect()
}

/// Longest `hidden_params` JSON parsed; LiteLLM's is a few hundred bytes.
const MAX_HIDDEN_PARAMS: usize = 16 * 1024;

/// What a document held.
#[derive(Debug, Default)]
pub struct Extracted {
    pub spans: Vec<GenAiSpan>,
    /// Spans seen in all (GenAI or not).
    pub seen: u64,
    /// Entries that were not spans of the expected shape.
    pub malformed: u64,
}

/// Every GenAI span in an `ExportTraceServiceRequest` (or a file of them, one per line).
#[must_use]
pub fn extract(document: &Value) -> Extracted {
    let mut out = Extracted::default();
    for resource in items(document, "resourceSpans") {
        let service = attribute(resource.get("resource"), "service.name")
            .and_then(|v| v.get("stringValue"))
            .and_then(Value::as_str)
            .map(bounded);
        for scope in items(resource, "scopeSpans") {
            for span in items(scope, "spans") {
                out.seen += 1;
                match read_span(span, service.clone()) {
                    Read::GenAi(genai) => out.spans.push(genai),
                    Read::Other => {}
                    Read::Malformed => out.malformed += 1,
                }
            }
        }
    }
    out
}

/// How one span entry read.
// Returned and consumed at once, never stored: boxing the span would cost an allocation per span.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Read {
    GenAi(GenAiSpan),
    /// A span without GenAI attributes.
    Other,
    Malformed,
}

fn read_span(span: &Value, service: Option<String>) -> Read {
    let attributes = match span.get("attributes") {
        None => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => return Read::Malformed,
    };
    let mut fields = Fields::default();
    for kv in attributes {
        if let (Some(key), Some(value)) = (kv.get("key").and_then(Value::as_str), kv.get("value")) {
            fields.offer(key, || json_value(value));
        }
    }
    let id = |key: &str| span.get(key).and_then(Value::as_str).map(bounded);
    fields.into_span(Ids {
        trace_id: id("traceId").unwrap_or_default(),
        span_id: id("spanId").unwrap_or_default(),
        service,
    })
}

/// An OTLP/JSON `AnyValue` as the core reads it.
fn json_value(value: &Value) -> Attr<'_> {
    if let Some(text) = value.get("stringValue").and_then(Value::as_str) {
        return Attr::Text(text);
    }
    match value.get("intValue") {
        Some(Value::String(s)) => Attr::Int(s.parse::<u64>().ok()),
        Some(other) => Attr::Int(other.as_u64()),
        None => Attr::Other,
    }
}

/// One attribute value as either wire format carries it: the only two kinds GenAI attributes
/// are read as. An integer that is negative or does not fit is `Int(None)`.
pub(crate) enum Attr<'a> {
    Text(&'a str),
    Int(Option<u64>),
    Other,
}

/// Where a span is found again, and the service that sent it.
pub(crate) struct Ids {
    pub trace_id: String,
    pub span_id: String,
    pub service: Option<String>,
}

/// Every attribute key read, in one table: the JSON and protobuf readers offer each attribute
/// once and the first value of a key wins, so both formats give the same span.
const KEYS: [&str; 18] = [
    "gen_ai.request.model",
    "llm.invocation_parameters",
    "gen_ai.response.model",
    "llm.model_name",
    "gen_ai.provider.name",
    "gen_ai.system",
    "llm.provider",
    "llm.system",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "server.address",
    "modelpin.probe.digest",
    "hidden_params",
    "litellm.provider.model",
];

/// Whether `Fields` reads attributes of this key.
pub(crate) fn is_read(key: &str) -> bool {
    KEYS.contains(&key)
}

/// The GenAI attributes of one span, collected in a single pass over its attributes.
#[derive(Default)]
pub(crate) struct Fields<'a> {
    slots: [Option<Attr<'a>>; KEYS.len()],
}

impl<'a> Fields<'a> {
    /// Keeps `value` when `key` is read and not seen yet; `value` is only built then.
    pub(crate) fn offer(&mut self, key: &str, value: impl FnOnce() -> Attr<'a>) {
        if let Some(i) = KEYS.iter().position(|k| *k == key)
            && self.slots[i].is_none()
        {
            self.slots[i] = Some(value());
        }
    }

    fn text(&self, keys: &[&str]) -> Option<String> {
        keys.iter().find_map(|key| match self.slot(key)? {
            Attr::Text(t) => Some(bounded(t)),
            _ => None,
        })
    }

    /// A non-negative count bounded like provider token counts.
    fn count(&self, keys: &[&str]) -> Option<u64> {
        keys.iter().find_map(|key| match self.slot(key)? {
            Attr::Int(Some(n)) if *n <= 1_000_000_000 => Some(*n),
            _ => None,
        })
    }

    /// The text as sent, unbounded: for JSON that is parsed, not kept.
    fn raw(&self, key: &str) -> Option<&'a str> {
        match self.slot(key)? {
            Attr::Text(t) => Some(t),
            _ => None,
        }
    }

    fn slot(&self, key: &str) -> Option<&Attr<'a>> {
        let i = KEYS.iter().position(|k| *k == key)?;
        self.slots[i].as_ref()
    }

    /// The span, or `Other` when it names no model at all.
    pub(crate) fn into_span(self, ids: Ids) -> Read {
        // Parsed whole (up to the hidden-params bound), not cut first: the parameters of a real
        // call (tools, response format) run past any display bound, and only the model is kept.
        let invocation_model = self
            .raw("llm.invocation_parameters")
            .filter(|json| json.len() <= MAX_HIDDEN_PARAMS)
            .and_then(|json| serde_json::from_str::<Value>(json).ok())
            .and_then(|v| v.get("model").and_then(Value::as_str).map(bounded));
        let requested = self.text(&["gen_ai.request.model"]).or(invocation_model);
        let served = self.text(&["gen_ai.response.model", "llm.model_name"]);
        if requested.is_none() && served.is_none() {
            return Read::Other;
        }
        Read::GenAi(GenAiSpan {
            trace_id: ids.trace_id,
            span_id: ids.span_id,
            service: ids.service,
            provider: self.text(&[
                "gen_ai.provider.name",
                "gen_ai.system",
                "llm.provider",
                "llm.system",
            ]),
            requested: requested.or_else(|| self.text(&["llm.model_name"])),
            served,
            input_tokens: self.count(&[
                "gen_ai.usage.input_tokens",
                "gen_ai.usage.prompt_tokens",
                "llm.token_count.prompt",
            ]),
            output_tokens: self.count(&[
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.completion_tokens",
                "llm.token_count.completion",
            ]),
            server_address: self.text(&["server.address"]),
            probe_digest: self
                .raw("modelpin.probe.digest")
                .filter(|d| is_digest(d))
                .map(str::to_owned),
            deployment: self.deployment(),
        })
    }

    /// The deployment either LiteLLM integration names; the newer one's model is the more
    /// precise (it prefers the router's own deployment record).
    fn deployment(&self) -> Option<Deployment> {
        let provider_model = self.text(&["litellm.provider.model"]);
        match self.raw("hidden_params").and_then(deployment) {
            Some(found) => Some(Deployment {
                model: provider_model.or(found.model),
                ..found
            }),
            None => provider_model.map(|model| Deployment {
                model: Some(model),
                ..Deployment::default()
            }),
        }
    }
}

/// `sha256:` and 64 lowercase hex digits, the form `modelpin.lock` writes probe digests in.
fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The deployment LiteLLM's `hidden_params` names, when it names one (by model or by id).
fn deployment(json: &str) -> Option<Deployment> {
    if json.len() > MAX_HIDDEN_PARAMS {
        return None;
    }
    let params: Value = serde_json::from_str(json).ok()?;
    let field = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let found = Deployment {
        model: field("litellm_model_name").map(bounded),
        id: field("model_id").map(bounded),
        api_base: field("api_base").map(|url| bounded(&without_credentials(url))),
    };
    (found.model.is_some() || found.id.is_some()).then_some(found)
}

/// A URL without user info, query or fragment, where credentials can hide.
fn without_credentials(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    // User info ends at the last `@`: a careless password may hold `/`, `?` or `#` before it.
    let rest = rest.rsplit_once('@').map_or(rest, |(_, after)| after);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    if scheme.is_empty() {
        rest.to_owned()
    } else {
        format!("{scheme}://{rest}")
    }
}

fn items<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn attribute<'a>(owner: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    items(owner?, "attributes")
        .iter()
        .find(|kv| kv.get("key").and_then(Value::as_str) == Some(key))
        .and_then(|kv| kv.get("value"))
}

pub(crate) fn bounded(text: &str) -> String {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= MAX_VALUE {
        clean
    } else {
        clean.chars().take(MAX_VALUE).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests;
