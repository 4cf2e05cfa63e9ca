//! GenAI spans out of an OTLP/JSON trace export: the model asked for, the model that answered,
//! the provider, token usage and where to find the span again.
//!
//! Both generations of the OpenTelemetry GenAI semantic conventions are read
//! (`gen_ai.provider.name`, formerly `gen_ai.system`; `gen_ai.usage.input_tokens`, formerly
//! `gen_ai.usage.prompt_tokens`), and OpenInference's `llm.*` attributes. OTLP/JSON writes ids as
//! hex and 64-bit integers as strings (opentelemetry-proto, "JSON Protobuf Encoding"). Spans
//! without GenAI attributes are skipped; anything malformed is skipped and counted, never a panic.

use serde_json::Value;

/// Longest attribute value kept (model IDs, provider names): longer ones are cut.
const MAX_VALUE: usize = 256;

/// One LLM call as its span recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
}

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
        let service = attribute(resource.get("resource"), "service.name").and_then(text);
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
enum Read {
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
    let get = |key: &str| {
        attributes
            .iter()
            .find(|kv| kv.get("key").and_then(Value::as_str) == Some(key))
            .and_then(|kv| kv.get("value"))
    };
    let first_text = |keys: &[&str]| keys.iter().find_map(|k| get(k).and_then(text));
    let first_count = |keys: &[&str]| keys.iter().find_map(|k| get(k).and_then(count));
    let invocation_model = get("llm.invocation_parameters")
        .and_then(text)
        .and_then(|json| serde_json::from_str::<Value>(&json).ok())
        .and_then(|v| v.get("model").and_then(Value::as_str).map(bounded));
    let requested = first_text(&["gen_ai.request.model"]).or(invocation_model);
    let served = first_text(&["gen_ai.response.model", "llm.model_name"]);
    if requested.is_none() && served.is_none() {
        return Read::Other;
    }
    Read::GenAi(GenAiSpan {
        trace_id: span
            .get("traceId")
            .and_then(Value::as_str)
            .map(bounded)
            .unwrap_or_default(),
        span_id: span
            .get("spanId")
            .and_then(Value::as_str)
            .map(bounded)
            .unwrap_or_default(),
        service,
        provider: first_text(&[
            "gen_ai.provider.name",
            "gen_ai.system",
            "llm.provider",
            "llm.system",
        ]),
        requested: requested.or_else(|| first_text(&["llm.model_name"])),
        served,
        input_tokens: first_count(&[
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
        ]),
        output_tokens: first_count(&[
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        ]),
        server_address: first_text(&["server.address"]),
    })
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

/// An `AnyValue` holding a string.
fn text(value: &Value) -> Option<String> {
    value
        .get("stringValue")
        .and_then(Value::as_str)
        .map(bounded)
}

/// An `AnyValue` holding a non-negative integer (`intValue` is a string in OTLP/JSON; some
/// exporters write a number), bounded like provider token counts.
fn count(value: &Value) -> Option<u64> {
    let n = match value.get("intValue")? {
        Value::String(s) => s.parse::<u64>().ok()?,
        other => other.as_u64()?,
    };
    (n <= 1_000_000_000).then_some(n)
}

fn bounded(text: &str) -> String {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    if clean.chars().count() <= MAX_VALUE {
        clean
    } else {
        clean.chars().take(MAX_VALUE).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[allow(clippy::needless_pass_by_value)] // the json! values of the table read best inline
    fn kv(key: &str, value: Value) -> Value {
        json!({"key": key, "value": value})
    }

    fn export(attributes: &[Value]) -> Value {
        json!({"resourceSpans": [{
            "resource": {"attributes": [kv("service.name", json!({"stringValue": "support"}))]},
            "scopeSpans": [{"scope": {"name": "x"}, "spans": [
                {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
                 "name": "chat gpt-4o", "attributes": attributes},
                {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175",
                 "name": "GET /", "attributes": [kv("http.method", json!({"stringValue": "GET"}))]}
            ]}]
        }]})
    }

    #[test]
    fn both_convention_generations_and_openinference() {
        let current = export(&[
            kv("gen_ai.provider.name", json!({"stringValue": "openai"})),
            kv("gen_ai.request.model", json!({"stringValue": "gpt-4o"})),
            kv(
                "gen_ai.response.model",
                json!({"stringValue": "gpt-4o-2024-08-06"}),
            ),
            kv("gen_ai.usage.input_tokens", json!({"intValue": "17"})),
            kv("gen_ai.usage.output_tokens", json!({"intValue": 3})),
            kv("server.address", json!({"stringValue": "api.openai.com"})),
        ]);
        let older = export(&[
            kv("gen_ai.system", json!({"stringValue": "openai"})),
            kv("gen_ai.request.model", json!({"stringValue": "gpt-4o"})),
            kv(
                "gen_ai.response.model",
                json!({"stringValue": "gpt-4o-2024-08-06"}),
            ),
            kv("gen_ai.usage.prompt_tokens", json!({"intValue": "17"})),
            kv("gen_ai.usage.completion_tokens", json!({"intValue": "3"})),
        ]);
        let openinference = export(&[
            kv("llm.provider", json!({"stringValue": "openai"})),
            kv(
                "llm.model_name",
                json!({"stringValue": "gpt-4o-2024-08-06"}),
            ),
            kv(
                "llm.invocation_parameters",
                json!({"stringValue": "{\"model\": \"gpt-4o\"}"}),
            ),
            kv("llm.token_count.prompt", json!({"intValue": "17"})),
            kv("llm.token_count.completion", json!({"intValue": "3"})),
        ]);
        for doc in [current, older, openinference] {
            let got = extract(&doc);
            assert_eq!((got.seen, got.malformed, got.spans.len()), (2, 0, 1));
            let s = &got.spans[0];
            assert_eq!(s.provider.as_deref(), Some("openai"));
            assert_eq!(s.requested.as_deref(), Some("gpt-4o"));
            assert_eq!(s.served.as_deref(), Some("gpt-4o-2024-08-06"));
            assert_eq!((s.input_tokens, s.output_tokens), (Some(17), Some(3)));
            assert_eq!(s.service.as_deref(), Some("support"));
            assert_eq!(s.span_id, "eee19b7ec3c1b174");
        }
    }

    #[test]
    fn hostile_shapes_are_skipped_not_fatal() {
        for doc in [
            json!(null),
            json!({"resourceSpans": "x"}),
            json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": 7}]}]}]}),
            json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [
                kv("gen_ai.request.model", json!({"stringValue": "\u{1b}]0;x\u{7}m".repeat(200)})),
                kv("gen_ai.usage.input_tokens", json!({"intValue": "-5"})),
                kv("gen_ai.usage.output_tokens", json!({"intValue": "18446744073709551615"})),
            ]}]}]}]}),
        ] {
            let got = extract(&doc);
            for s in &got.spans {
                assert!(s.requested.as_ref().unwrap().chars().count() <= MAX_VALUE);
                assert!(!s.requested.as_ref().unwrap().contains('\u{1b}'));
                assert_eq!((s.input_tokens, s.output_tokens), (None, None));
            }
        }
    }
}
