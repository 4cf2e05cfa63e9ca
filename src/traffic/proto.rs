//! GenAI spans out of an OTLP protobuf `ExportTraceServiceRequest`, the encoding SDK exporters
//! and the Collector's `otlphttp` exporter send by default.
//!
//! Attributes go through the same reader as OTLP/JSON (`spans::Fields`), so a span gives the same
//! `GenAiSpan` whichever encoding carried it. Ids are bytes here and hex in JSON; they are
//! written as hex, as the JSON encoding and trace viewers show them.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;

use super::spans::{Attr, Extracted, Fields, Ids, Read, bounded};

/// Every GenAI span in a decoded request.
#[must_use]
pub fn extract(request: &ExportTraceServiceRequest) -> Extracted {
    let mut out = Extracted::default();
    for resource in &request.resource_spans {
        let service = resource
            .resource
            .as_ref()
            .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
            .and_then(|kv| match value(kv.value.as_ref()) {
                Attr::Text(t) => Some(bounded(t)),
                _ => None,
            });
        for scope in &resource.scope_spans {
            for span in &scope.spans {
                out.seen += 1;
                match read_span(span, service.as_ref()) {
                    Read::GenAi(genai) => out.spans.push(genai),
                    Read::Other => {}
                    Read::Malformed => out.malformed += 1,
                }
            }
        }
    }
    out
}

fn read_span(span: &Span, service: Option<&String>) -> Read {
    let mut fields = Fields::default();
    for KeyValue { key, value: v, .. } in &span.attributes {
        fields.offer(key, || value(v.as_ref()));
    }
    fields.into_span(Ids {
        trace_id: hex(&span.trace_id),
        span_id: hex(&span.span_id),
        service: service.cloned(),
    })
}

fn value(v: Option<&AnyValue>) -> Attr<'_> {
    match v.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => Attr::Text(s),
        Some(any_value::Value::IntValue(n)) => Attr::Int(u64::try_from(*n).ok()),
        _ => Attr::Other,
    }
}

/// Lowercase hex of an id; trace ids are 16 bytes and span ids 8, so longer ones are cut.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().take(32).fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message as _;

    use super::extract;

    pub(crate) fn text(key: &str, value: &str) -> KeyValue {
        kv(key, any_value::Value::StringValue(value.to_owned()))
    }

    pub(crate) fn int(key: &str, value: i64) -> KeyValue {
        kv(key, any_value::Value::IntValue(value))
    }

    fn kv(key: &str, value: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Some(AnyValue { value: Some(value) }),
            ..KeyValue::default()
        }
    }

    /// One resource (`service.name` support) with one GenAI span and one plain HTTP span.
    pub(crate) fn request(attributes: Vec<KeyValue>) -> ExportTraceServiceRequest {
        let span = |id: u8, attributes| Span {
            trace_id: vec![0x5b; 16],
            span_id: vec![0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, id],
            name: "chat".to_owned(),
            attributes,
            ..Span::default()
        };
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![text("service.name", "support")],
                    ..Resource::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans: vec![
                        span(0x74, attributes),
                        span(0x75, vec![text("http.method", "GET")]),
                    ],
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        }
    }

    #[test]
    fn both_convention_generations_and_openinference() {
        let current = vec![
            text("gen_ai.provider.name", "openai"),
            text("gen_ai.request.model", "gpt-4o"),
            text("gen_ai.response.model", "gpt-4o-2024-08-06"),
            int("gen_ai.usage.input_tokens", 17),
            int("gen_ai.usage.output_tokens", 3),
            text("server.address", "api.openai.com"),
        ];
        let older = vec![
            text("gen_ai.system", "openai"),
            text("gen_ai.request.model", "gpt-4o"),
            text("gen_ai.response.model", "gpt-4o-2024-08-06"),
            int("gen_ai.usage.prompt_tokens", 17),
            int("gen_ai.usage.completion_tokens", 3),
        ];
        let openinference = vec![
            text("llm.provider", "openai"),
            text("llm.model_name", "gpt-4o-2024-08-06"),
            text("llm.invocation_parameters", "{\"model\": \"gpt-4o\"}"),
            int("llm.token_count.prompt", 17),
            int("llm.token_count.completion", 3),
        ];
        for attributes in [current, older, openinference] {
            // Through the wire bytes, as the receiver gets them.
            let bytes = request(attributes).encode_to_vec();
            let decoded = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
            let got = extract(&decoded);
            assert_eq!((got.seen, got.malformed, got.spans.len()), (2, 0, 1));
            crate::traffic::spans::tests::assert_is_the_sample_call(&got.spans[0]);
            assert_eq!(got.spans[0].trace_id, "5b".repeat(16));
        }
    }

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const HIDDEN: &str = r#"{"model_id": "9f3c", "api_base": "https://api.openai.com/v1", "litellm_model_name": "gpt-4o-mini-2024-07-18"}"#;

    #[test]
    fn protobuf_and_json_give_the_same_span() {
        let attributes = vec![
            text("gen_ai.system", "openai"),
            text("gen_ai.request.model", "gpt-4o"),
            text("gen_ai.response.model", "gpt-4o-mini"),
            int("gen_ai.usage.input_tokens", 5),
            text("modelpin.probe.digest", DIGEST),
            text("hidden_params", HIDDEN),
        ];
        let json = serde_json::json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "support"}}]},
            "scopeSpans": [{"spans": [{"traceId": "5b".repeat(16), "spanId": "eee19b7ec3c1b174",
                "attributes": [
                    {"key": "gen_ai.system", "value": {"stringValue": "openai"}},
                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                    {"key": "gen_ai.response.model", "value": {"stringValue": "gpt-4o-mini"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "5"}},
                    {"key": "modelpin.probe.digest", "value": {"stringValue": DIGEST}},
                    {"key": "hidden_params", "value": {"stringValue": HIDDEN}}
                ]}]}]
        }]});
        let from_json = crate::traffic::spans::extract(&json).spans;
        let from_proto = extract(&request(attributes)).spans;
        assert_eq!(from_json, from_proto);
        assert_eq!(from_proto[0].probe_digest.as_deref(), Some(DIGEST));
        let deployment = from_proto[0].deployment.as_ref().unwrap();
        assert_eq!(deployment.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
        assert_eq!(
            deployment.api_base.as_deref(),
            Some("https://api.openai.com/v1")
        );
    }

    #[test]
    fn wrong_types_and_hostile_values_are_bounded() {
        let attributes = vec![
            int("gen_ai.request.model", 7),
            text("gen_ai.response.model", &"\u{1b}]0;x\u{7}m".repeat(500)),
            int("gen_ai.usage.input_tokens", -5),
            text("gen_ai.usage.output_tokens", "12"),
            text("gen_ai.request.model", "gpt-4o"),
        ];
        let got = extract(&request(attributes));
        let s = &got.spans[0];
        // The first value of a key wins, and an integer is not a model ID.
        assert_eq!(s.requested, None);
        let served = s.served.as_deref().unwrap();
        assert!(served.chars().count() <= 256 && !served.contains('\u{1b}'));
        assert_eq!((s.input_tokens, s.output_tokens), (None, None));
    }
}
