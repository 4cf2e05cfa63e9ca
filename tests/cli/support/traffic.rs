//! The project the traffic receiver's tests share: one OpenAI-kind pin on the simulator, its
//! probes run once at start and then once a year, so every later verdict comes from traffic.

use modelpin::provider::ProviderKind;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

use crate::harness::Sim;
use crate::support::pins::Pins;

pub const ID: &str = "acme-pro-001";

/// Probes once a year (and once at start).
pub const YEARLY: &str = "0 0 0 1 1 *";

/// A daemon's pins.toml for traffic tests; add `[traffic]` keys with [`Pins::traffic`].
pub fn pins(sim: &Sim) -> Pins {
    Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .setting("timeout", "5s")
        .daemon()
        .setting("schedule", YEARLY)
        .each_pin("samples", 2)
}

pub fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

pub fn text(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.to_owned()))
}

/// A GenAI span as the OpenAI instrumentation writes it.
pub fn span(i: u64, requested: &str, served: &str) -> Span {
    Span {
        trace_id: [i.to_be_bytes(), i.to_be_bytes()].concat(),
        span_id: i.to_be_bytes().to_vec(),
        name: format!("chat {requested}"),
        attributes: vec![
            text("gen_ai.provider.name", "openai"),
            text("gen_ai.operation.name", "chat"),
            text("gen_ai.request.model", requested),
            text("gen_ai.response.model", served),
            kv("gen_ai.usage.input_tokens", any_value::Value::IntValue(20)),
            kv("gen_ai.usage.output_tokens", any_value::Value::IntValue(4)),
            text("server.address", "127.0.0.1"),
        ],
        ..Span::default()
    }
}

pub fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "support")],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
}
