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
        assert_is_the_sample_call(&got.spans[0]);
    }
}

/// The one GenAI call every encoding of the sample request describes, whichever convention
/// names its attributes.
pub(crate) fn assert_is_the_sample_call(s: &GenAiSpan) {
    assert_eq!(s.provider.as_deref(), Some("openai"));
    assert_eq!(s.requested.as_deref(), Some("gpt-4o"));
    assert_eq!(s.served.as_deref(), Some("gpt-4o-2024-08-06"));
    assert_eq!((s.input_tokens, s.output_tokens), (Some(17), Some(3)));
    assert_eq!(s.service.as_deref(), Some("support"));
    assert_eq!(s.span_id, "eee19b7ec3c1b174");
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

const DIGEST: &str = "sha256:4f1c1c5b2d7e0a9b8c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b";

fn with_model(extra: &[Value]) -> Value {
    let mut attributes = vec![
        kv("gen_ai.system", json!({"stringValue": "openai"})),
        kv("gen_ai.request.model", json!({"stringValue": "gpt-4o"})),
    ];
    attributes.extend_from_slice(extra);
    export(&attributes)
}

fn one(doc: &Value) -> GenAiSpan {
    extract(doc).spans.remove(0)
}

#[test]
fn a_probe_digest_is_read_only_in_the_form_the_lock_writes() {
    let long = format!("{DIGEST}{}", "0".repeat(100_000));
    let upper = DIGEST.to_ascii_uppercase().replace("SHA256", "sha256");
    let rows: [(Value, Option<&str>); 6] = [
        (json!({"stringValue": DIGEST}), Some(DIGEST)),
        (json!({"stringValue": &DIGEST[7..]}), None),
        (json!({"stringValue": upper}), None),
        (json!({"stringValue": &DIGEST[..70]}), None),
        (json!({"stringValue": long}), None),
        (json!({"intValue": "7"}), None),
    ];
    for (value, want) in rows {
        let span = one(&with_model(&[kv("modelpin.probe.digest", value.clone())]));
        assert_eq!(span.probe_digest.as_deref(), want, "{value}");
    }
    assert_eq!(one(&with_model(&[])).probe_digest, None);
}

#[test]
fn litellm_hidden_params_name_the_deployment_and_its_api_base() {
    // As `litellm/integrations/opentelemetry.py` writes it: `safe_dumps(hidden_params)`.
    let hidden = |params: Value| kv("hidden_params", json!({"stringValue": params.to_string()}));
    let deployment = |model: Option<&str>, id: Option<&str>, base: Option<&str>| {
        Some(Deployment {
            model: model.map(str::to_owned),
            id: id.map(str::to_owned),
            api_base: base.map(str::to_owned),
        })
    };
    let rows: [(Value, Option<Deployment>); 9] = [
        (
            json!({"model_id": "9f3c", "cache_key": null, "api_base": "https://api.openai.com/v1",
                   "response_cost": 1.2e-5, "litellm_model_name": "gpt-4o-mini-2024-07-18",
                   "additional_headers": {"x_ratelimit_remaining_requests": 9}}),
            deployment(
                Some("gpt-4o-mini-2024-07-18"),
                Some("9f3c"),
                Some("https://api.openai.com/v1"),
            ),
        ),
        // Older LiteLLM releases had no `litellm_model_name`: the id still names the deployment.
        (
            json!({"model_id": "9f3c", "api_base": "https://x.openai.azure.com"}),
            deployment(None, Some("9f3c"), Some("https://x.openai.azure.com")),
        ),
        (
            json!({"litellm_model_name": "gpt-4o", "api_base": "https://u:p@h.example/v1?key=s#f"}),
            deployment(Some("gpt-4o"), None, Some("https://h.example/v1")),
        ),
        (
            json!({"litellm_model_name": "m", "api_base": "https://user:p#ss@h.example/v1"}),
            deployment(Some("m"), None, Some("https://h.example/v1")),
        ),
        (
            json!({"litellm_model_name": "m", "api_base": "https://u:pa/ss@h.example"}),
            deployment(Some("m"), None, Some("https://h.example")),
        ),
        (json!({"api_base": "https://api.openai.com"}), None),
        (json!({"litellm_model_name": 7, "model_id": ["x"]}), None),
        (json!({"litellm_model_name": "  "}), None),
        (json!("not an object"), None),
    ];
    for (params, want) in rows {
        let span = one(&with_model(&[hidden(params.clone())]));
        assert_eq!(span.deployment, want, "{params}");
    }
    // LiteLLM's newer engine: the model group is requested, the deployment named apart.
    let newer = one(&with_model(&[kv(
        "litellm.provider.model",
        json!({"stringValue": "azure/my-deployment"}),
    )]));
    assert_eq!(
        newer.deployment,
        deployment(Some("azure/my-deployment"), None, None)
    );
    let broken = kv(
        "hidden_params",
        json!({"stringValue": "{\"litellm_model_name\": "}),
    );
    assert_eq!(one(&with_model(&[broken])).deployment, None);
    let huge = json!({"litellm_model_name": "m", "pad": "x".repeat(MAX_HIDDEN_PARAMS)});
    assert_eq!(one(&with_model(&[hidden(huge)])).deployment, None);
    let hostile = json!({"litellm_model_name": format!("\u{1b}[31m{}", "m".repeat(1000))});
    let model = one(&with_model(&[hidden(hostile)]))
        .deployment
        .unwrap()
        .model
        .unwrap();
    assert!(model.chars().count() <= MAX_VALUE && !model.contains('\u{1b}'));
}

#[test]
fn openinference_invocation_parameters_are_read_whole_however_long() {
    let tools = "x".repeat(4000);
    let params = json!({"model": "gpt-4o", "temperature": 0.2, "tools": [tools]}).to_string();
    let doc = export(&[
        kv("llm.model_name", json!({"stringValue": "gpt-4o-mini"})),
        kv("llm.invocation_parameters", json!({"stringValue": params})),
    ]);
    let s = one(&doc);
    assert_eq!(
        s.requested.as_deref(),
        Some("gpt-4o"),
        "the model asked for"
    );
    assert_eq!(
        s.served.as_deref(),
        Some("gpt-4o-mini"),
        "the model that answered"
    );
}
