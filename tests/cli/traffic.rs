//! `modelpin traffic FILE`: exported GenAI spans judged like probe calls, no provider called.

use modelpin::provider::ProviderKind;
use serde_json::{Value, json};

use crate::harness::{ARITH, Test, one_pin_with};

const ID: &str = "acme-large-2024-08-06";

fn span(i: usize, requested: &str, served: &str) -> Value {
    let kv = |k: &str, v: Value| json!({"key": k, "value": v});
    json!({
        "traceId": format!("{i:032x}"), "spanId": format!("{i:016x}"), "name": format!("chat {requested}"),
        "attributes": [
            kv("gen_ai.provider.name", json!({"stringValue": "openai"})),
            kv("gen_ai.request.model", json!({"stringValue": requested})),
            kv("gen_ai.response.model", json!({"stringValue": served})),
            kv("gen_ai.usage.input_tokens", json!({"intValue": "20"})),
            kv("gen_ai.usage.output_tokens", json!({"intValue": "4"})),
        ]
    })
}

fn export(spans: &[Value]) -> String {
    json!({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]})
        .to_string()
}

fn project() -> Test {
    Test::new()
        .pins(&one_pin_with(
            "",
            ProviderKind::OpenAi,
            "https://api.example.com/v1",
            ID,
            "",
        ))
        .file("probes/arith.toml", ARITH)
}

#[test]
fn traffic_served_by_the_pinned_model_is_ok() {
    let test = project().file(
        "spans.json",
        &export(&(0..5).map(|i| span(i, ID, ID)).collect::<Vec<_>>()),
    );
    let run = test.run(&["traffic", "spans.json", "--format", "json"]);
    run.code(0);
    let report = run.json();
    assert_eq!(report.pin("pin").served_models.get(ID), Some(&5));
    assert!(run.stderr.contains("5 spans"), "{}", run.stderr);
}

#[test]
fn traffic_answered_by_another_model_is_a_mismatch_with_the_spans_named() {
    let mut spans: Vec<Value> = (0..3).map(|i| span(i, ID, ID)).collect();
    spans.extend((3..10).map(|i| span(i, ID, "acme-small-2025-01-01")));
    spans.push(span(10, "unrelated-model", "unrelated-model"));
    // The Collector's file exporter writes one request per line.
    let lines = format!("{}\n{}\n", export(&spans[..5]), export(&spans[5..]));
    let test = project().file("spans.jsonl", &lines);
    let run = test.run(&["traffic", "spans.jsonl", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("served_model_mismatch");
    assert_eq!(finding.evidence["unexpected"]["acme-small-2025-01-01"], 7);
    let example = finding.evidence["examples"][0].as_str().unwrap();
    assert!(
        example.starts_with("trace ") && example.contains(" span "),
        "{example}"
    );
    assert!(run.stderr.contains("1 matching no pin"), "{}", run.stderr);
}

#[test]
fn traffic_with_nothing_matching_is_no_all_clear() {
    let test = project().file("spans.json", &export(&[span(0, "other", "other")]));
    test.run(&["traffic", "spans.json"]).code(3);
    let test = project().file("broken.json", "{ not json\n");
    let run = test.run(&["traffic", "broken.json"]);
    run.code(2);
    assert!(
        run.stderr.contains("broken.json:1: not OTLP/JSON"),
        "{}",
        run.stderr
    );
}
