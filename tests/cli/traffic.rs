//! `modelpin traffic FILE`: exported GenAI spans judged like probe calls, no provider called.

use modelpin::provider::ProviderKind;
use serde_json::{Value, json};

use crate::harness::{Sim, Test};
use crate::support::pins::Pins;
use crate::world::{model, single};

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
    Pins::one(ProviderKind::OpenAi, "https://api.example.com/v1", ID).project()
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

/// A project locked on the simulator: the lock records the probe's digest and prompt tokens.
fn locked(sim: &Sim) -> (Test, String, u64) {
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .setting("timeout", "5s")
        .each_pin("samples", 2)
        .locked();
    let lock: Value = serde_json::from_str(&test.read("modelpin.lock")).unwrap();
    let probe = &lock["pins"]["pin"]["probes"]["arith"];
    let digest = probe["digest"].as_str().unwrap().to_owned();
    (test, digest, probe["prompt_tokens"][0].as_u64().unwrap())
}

fn fingerprinted(i: usize, digest: &str, input_tokens: u64) -> Value {
    let mut s = span(i, ID, ID);
    let attributes = s["attributes"].as_array_mut().unwrap();
    attributes.retain(|kv| kv["key"] != "gen_ai.usage.input_tokens");
    attributes.push(json!({"key": "gen_ai.usage.input_tokens", "value": {"intValue": input_tokens.to_string()}}));
    attributes.push(json!({"key": "modelpin.probe.digest", "value": {"stringValue": digest}}));
    s
}

#[test]
fn traffic_fingerprinted_prompts_whose_token_count_moved_are_a_tokenizer_change() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let (test, digest, tokens) = locked(&sim);
    // Spans without the fingerprint may have any count; those with it must match the lock.
    let mut spans = vec![span(0, ID, ID), fingerprinted(1, &digest, tokens)];
    let test = test.file("same.json", &export(&spans));
    test.run(&["traffic", "same.json"]).code(0);
    spans.push(fingerprinted(2, &digest, tokens + 7));
    let test = test.file("moved.json", &export(&spans));
    let run = test.run(&["traffic", "moved.json", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("tokenizer_changed");
    let counts = &finding.evidence["probes"][0];
    assert_eq!(counts["probe"], "arith");
    assert_eq!(counts["locked"], json!([tokens]));
    assert_eq!(counts["now"], json!([tokens, tokens + 7]));
    assert_eq!(
        counts["examples"],
        json!([format!("trace {:032x} span {:016x}", 2, 2)])
    );
}

/// A span of LiteLLM's OpenTelemetry callback (`litellm/integrations/opentelemetry.py`): the
/// deployment rides in the `hidden_params` JSON string.
fn litellm_callback_span(i: usize, deployment: &str) -> Value {
    let kv = |k: &str, v: Value| json!({"key": k, "value": v});
    let hidden = json!({"model_id": "c0ffee", "cache_key": null, "api_base": "https://api.example.com/v1",
        "response_cost": 1.2e-5, "litellm_model_name": deployment});
    json!({
        "traceId": format!("{i:032x}"), "spanId": format!("{i:016x}"), "name": "litellm_request",
        "attributes": [
            kv("metadata.user_api_key_hash", json!({"stringValue": "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"})),
            kv("hidden_params", json!({"stringValue": hidden.to_string()})),
            kv("gen_ai.request.model", json!({"stringValue": ID})),
            kv("gen_ai.system", json!({"stringValue": "openai"})),
            kv("gen_ai.response.id", json!({"stringValue": format!("chatcmpl-{i}")})),
            kv("gen_ai.response.model", json!({"stringValue": ID})),
            kv("gen_ai.usage.input_tokens", json!({"intValue": "20"})),
            kv("gen_ai.usage.output_tokens", json!({"intValue": "4"})),
        ]
    })
}

/// A span of LiteLLM's newer OpenTelemetry engine (`litellm/integrations/otel/`): the model
/// group is requested and the deployment is `litellm.provider.model`.
fn litellm_engine_span(i: usize, deployment: &str) -> Value {
    let kv = |k: &str, v: Value| json!({"key": k, "value": v});
    json!({
        "traceId": format!("{i:032x}"), "spanId": format!("{i:016x}"), "name": format!("chat {ID}"),
        "attributes": [
            kv("gen_ai.operation.name", json!({"stringValue": "chat"})),
            kv("gen_ai.provider.name", json!({"stringValue": "openai"})),
            kv("gen_ai.request.model", json!({"stringValue": ID})),
            kv("gen_ai.response.model", json!({"stringValue": ID})),
            kv("gen_ai.usage.input_tokens", json!({"intValue": "20"})),
            kv("server.address", json!({"stringValue": "api.example.com"})),
            kv("litellm.provider.model", json!({"stringValue": deployment})),
        ]
    })
}

#[test]
fn traffic_through_litellm_is_judged_by_the_deployment_its_spans_name() {
    let swapped = "openai/acme-small-2025-01-01";
    let spans = [
        litellm_callback_span(0, swapped),
        litellm_callback_span(1, swapped),
        litellm_engine_span(2, swapped),
    ];
    let test = project()
        .file("spans.json", &export(&spans))
        .file("plain.json", &export(&[span(3, ID, ID)]));
    let run = test.run(&["traffic", "spans.json", "--format", "json"]);
    run.code(1);
    let report = run.json();
    let finding = report.pin("pin").finding("served_model_mismatch");
    // The body named the public model; the deployment behind it is what answered.
    assert_eq!(finding.evidence["unexpected"][swapped], 3);
    assert_eq!(finding.evidence["public_names"][ID], 3);
    assert_eq!(finding.evidence["deployment_ids"]["c0ffee"], 2);
    // Spans without a gateway's attributes are judged as before.
    test.run(&["traffic", "plain.json"]).code(0);
}
