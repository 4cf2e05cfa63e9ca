//! The OpenAI wire format and its many dialects.
//!
//! OpenAI's chat completions shape is the lingua franca: OpenAI, Azure, OpenRouter and every
//! "OpenAI-compatible" server (Groq, Mistral, DeepSeek, Together, Ollama, vLLM) speak it, each
//! with its own extras and its own way of saying "no such model". Replies may also come in the
//! Responses API shape (Azure's v1 endpoint, OpenAI proxies), so both are read here. Keeping the
//! dialects together makes their differences visible side by side.

use serde_json::{Value, json};

use crate::provider::envelope;
use crate::provider::gateway;
use crate::provider::json;
use crate::provider::refusal::ProviderError;
use crate::provider::{
    Endpoint, ErrorClass, FirstToken, Flaw, HttpRequest, LOGPROB_ROUNDING, LifecycleHint,
    MAX_TOP_LOGPROBS, Parsed, ProbeCall, ProviderKind, RawResponse, Reply, Usage,
    normalize_model_id, path_segment,
};

/// Used when a pin names no Azure `api_version`: the GA version that first took
/// `max_completion_tokens`, so reasoning-model deployments work out of the box.
pub(crate) const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";

/// Builds a non-streaming chat completions call.
pub(crate) fn request(endpoint: &Endpoint, base: &str, call: &ProbeCall<'_>) -> HttpRequest {
    let mut body = json!({
        "model": call.model,
        "messages": messages(call),
        "temperature": call.temperature,
    });
    body[max_tokens_field(endpoint)] = json!(call.max_tokens);
    if let Some(n) = call.top_logprobs {
        // Chat completions: `logprobs` turns them on, `top_logprobs` (0–20) is how many
        // alternatives each position lists (OpenAI API reference, "Create chat completion").
        body["logprobs"] = json!(true);
        body["top_logprobs"] = json!(n);
    }
    if let Some(seed) = call.seed {
        // The request's own seed (OpenAI API reference, "Create chat completion": `seed`,
        // best-effort determinism for repeated requests with the same seed).
        body["seed"] = json!(seed);
    }
    if endpoint.kind == ProviderKind::OpenRouter {
        // Without this OpenRouter omits `usage.cost`, the only provider-reported price we get.
        body["usage"] = json!({"include": true});
    }
    HttpRequest {
        url: url(endpoint, base, call.model),
        headers: auth_headers(endpoint),
        body,
    }
}

fn url(endpoint: &Endpoint, base: &str, model: &str) -> String {
    if endpoint.kind != ProviderKind::Azure {
        return format!("{base}/chat/completions");
    }
    format!(
        "{base}/openai/deployments/{}/chat/completions?api-version={}",
        path_segment(model),
        path_segment(azure_api_version(endpoint)),
    )
}

fn azure_api_version(endpoint: &Endpoint) -> &str {
    endpoint
        .api_version
        .as_deref()
        .unwrap_or(AZURE_DEFAULT_API_VERSION)
}

fn auth_headers(endpoint: &Endpoint) -> Vec<(String, String)> {
    let Some(key) = &endpoint.api_key else {
        return Vec::new();
    };
    match endpoint.kind {
        ProviderKind::Azure => vec![("api-key".to_owned(), key.expose().to_owned())],
        _ => vec![(
            "authorization".to_owned(),
            format!("Bearer {}", key.expose()),
        )],
    }
}

fn messages(call: &ProbeCall<'_>) -> Value {
    let system = call.system.map(|s| json!({"role": "system", "content": s}));
    let user = json!({"role": "user", "content": call.prompt});
    Value::Array(system.into_iter().chain([user]).collect())
}

/// OpenAI has deprecated `max_tokens` on chat completions and its reasoning models (o1, o3,
/// gpt-5) reject it, so OpenAI gets `max_completion_tokens`; so does Azure from api-version
/// 2024-09-01-preview on (older versions reject the newer name). OpenRouter documents only
/// `max_tokens`, and compatible servers (vLLM, Ollama, DeepSeek, Together) know only
/// `max_tokens` — Mistral even rejects unknown fields — so they get the older name.
fn max_tokens_field(endpoint: &Endpoint) -> &'static str {
    let newer = match endpoint.kind {
        ProviderKind::OpenAi => true,
        ProviderKind::Azure => azure_takes_max_completion_tokens(azure_api_version(endpoint)),
        _ => false,
    };
    if newer {
        "max_completion_tokens"
    } else {
        "max_tokens"
    }
}

/// Dated api-versions sort as strings; undated ones (`v1`, `preview`, `latest`) are the newest.
fn azure_takes_max_completion_tokens(api_version: &str) -> bool {
    !api_version.starts_with("20") || api_version >= "2024-09-01"
}

/// Reads a chat completions or Responses reply, or any of the dialects' error shapes.
/// Compatible endpoints are where gateways sit: their headers say what the body may not.
pub(crate) fn parse(kind: ProviderKind, response: &RawResponse) -> Parsed {
    match envelope::interpret(response, read_error, |body| read_reply(kind, body)) {
        Parsed::Reply(reply) if kind == ProviderKind::OpenAiCompatible => {
            match gateway::read(response) {
                Some(seen) => Parsed::Reply(gateway::apply(reply, seen)),
                None => Parsed::Reply(reply),
            }
        }
        other => other,
    }
}

fn read_reply(kind: ProviderKind, body: &Value) -> Result<Reply, String> {
    let text = answer_text(body)?;
    let openrouter = kind == ProviderKind::OpenRouter;
    Ok(Reply {
        served_model: json::text(body, &["model"]).map(normalize_model_id),
        upstream: json::owned_text(body, &["provider"]).filter(|_| openrouter),
        fallback_model: None,
        usage: usage(body),
        reported_cost_usd: reported_cost(body).filter(|_| openrouter),
        system_fingerprint: json::owned_text(body, &["system_fingerprint"]),
        text,
        request_id: json::owned_text(body, &["x_groq", "id"]),
        lifecycle: body_warning(body).into_iter().collect(),
        gateway: None,
        first_token: first_token(body).map(Box::new),
    })
}

/// `choices[0].logprobs.content[0]`: the first output token and its `top_logprobs`, in the chat
/// completions shape OpenAI, vLLM, llama.cpp and Together share. Entries that are no
/// probability (no number, above 0) or repeat a token are kept out of `top` and named as the
/// call's `flaw`; logprobs a rounding above 0 read as 0. `None` when the reply has no logprobs
/// or its first position names no token.
fn first_token(body: &Value) -> Option<FirstToken> {
    let first = json::at(body, &["choices"])?
        .as_array()?
        .first()?
        .get("logprobs")?
        .get("content")?
        .as_array()?
        .first()?;
    let sampled = json::owned_text(first, &["token"])?;
    let mut flaw = None;
    let mut note = |f: Flaw| flaw = Some(flaw.map_or(f, |g: Flaw| g.min(f)));
    let mut probability = |value: Option<&Value>| -> Option<f64> {
        match value.and_then(Value::as_f64) {
            None => {
                note(Flaw::NotANumber);
                None
            }
            Some(lp) if lp > LOGPROB_ROUNDING => {
                note(Flaw::AboveZero);
                None
            }
            Some(lp) => Some(lp.min(0.0)),
        }
    };
    let sampled_logprob = first.get("logprob").and_then(|v| probability(Some(v)));
    let mut top: Vec<(String, f64)> = Vec::new();
    let mut listed = 0;
    let mut repeated = false;
    for entry in json::items(first, &["top_logprobs"]) {
        listed += 1;
        let Some(token) = json::owned_text(entry, &["token"]) else {
            continue;
        };
        let Some(lp) = probability(entry.get("logprob")) else {
            continue;
        };
        if top.iter().any(|(t, _)| *t == token) {
            repeated = true;
        } else if top.len() < MAX_TOP_LOGPROBS + 1 {
            top.push((token, lp));
        }
    }
    if repeated {
        note(Flaw::Repeated);
    }
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    top.truncate(MAX_TOP_LOGPROBS);
    Some(FirstToken {
        sampled,
        sampled_logprob,
        top,
        listed,
        flaw,
    })
}

fn answer_text(body: &Value) -> Result<String, String> {
    if let Some(choices) = body.get("choices").and_then(Value::as_array) {
        return Ok(choices.first().map(chat_text).unwrap_or_default());
    }
    if let Some(output) = body.get("output").and_then(Value::as_array) {
        return Ok(output.iter().map(responses_text).collect());
    }
    Err("2xx body has neither a `choices` array (chat) nor an `output` array (Responses)".into())
}

/// `message.content` is a string in OpenAI's own replies; some compatible servers send a list
/// of typed parts instead.
fn chat_text(choice: &Value) -> String {
    match json::at(choice, &["message", "content"]) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            json::joined_text(parts, |p| p.get("type").is_none_or(|t| t == "text"))
        }
        _ => String::new(),
    }
}

/// Only `output_text` parts of `message` items: reasoning summaries are not the answer.
fn responses_text(item: &Value) -> String {
    if item.get("type").and_then(Value::as_str) != Some("message") {
        return String::new();
    }
    json::joined_text(json::items(item, &["content"]), |p| {
        p.get("type").and_then(Value::as_str) == Some("output_text")
    })
}

/// Chat names (`prompt_tokens`...) first, Responses names (`input_tokens`...) second; cached
/// input falls back to DeepSeek's `prompt_cache_hit_tokens` and Together's `cached_tokens`.
fn usage(body: &Value) -> Usage {
    let Some(u) = body.get("usage") else {
        return Usage::default();
    };
    let first = |paths: &[&[&str]]| paths.iter().find_map(|p| json::count(u, p));
    Usage {
        input: first(&[&["prompt_tokens"], &["input_tokens"]]),
        output: first(&[&["completion_tokens"], &["output_tokens"]]),
        cached_input: first(&[
            &["prompt_tokens_details", "cached_tokens"],
            &["input_tokens_details", "cached_tokens"],
            &["prompt_cache_hit_tokens"],
            &["cached_tokens"],
        ]),
        reasoning: first(&[
            &["completion_tokens_details", "reasoning_tokens"],
            &["output_tokens_details", "reasoning_tokens"],
        ]),
        implausible: json::implausible(
            u,
            &[
                ("prompt_tokens", &["prompt_tokens"]),
                ("input_tokens", &["input_tokens"]),
                ("completion_tokens", &["completion_tokens"]),
                ("output_tokens", &["output_tokens"]),
                ("total_tokens", &["total_tokens"]),
                ("cached_tokens", &["prompt_tokens_details", "cached_tokens"]),
                (
                    "reasoning_tokens",
                    &["completion_tokens_details", "reasoning_tokens"],
                ),
            ],
        ),
    }
}

/// OpenRouter's `usage.cost`, in USD; a negative or non-finite cost is no cost at all.
fn reported_cost(body: &Value) -> Option<f64> {
    json::at(body, &["usage", "cost"])?
        .as_f64()
        .filter(|c| c.is_finite() && *c >= 0.0)
}

/// OpenAI's legacy top-level `warning` ("This model version is deprecated...").
fn body_warning(body: &Value) -> Option<LifecycleHint> {
    json::owned_text(body, &["warning"]).map(LifecycleHint::BodyWarning)
}

/// The dialects' error shapes: `{"error": {...}}` (OpenAI, Azure, OpenRouter, Groq, DeepSeek,
/// Ollama /v1), `{"error": "..."}` (Ollama's native API) and a bare `{"object": "error", ...}`
/// (Mistral).
fn read_error(body: &Value) -> Option<ProviderError> {
    match body.get("error") {
        Some(error @ Value::Object(_)) => Some(error_fields(error, body)),
        Some(Value::String(message)) if !message.is_empty() => Some(ProviderError {
            signal: signal(None, None, message),
            message: message.clone(),
            ..ProviderError::default()
        }),
        _ if json::text(body, &["object"]) == Some("error") => Some(error_fields(body, body)),
        _ => None,
    }
}

fn error_fields(error: &Value, root: &Value) -> ProviderError {
    let code = json::code(error, &["code"]);
    let error_type = json::owned_text(error, &["type"]);
    let message = json::owned_text(error, &["message"]).unwrap_or_default();
    ProviderError {
        signal: signal(code.as_deref(), error_type.as_deref(), &message),
        in_band_status: json::error_status(error, &["code"]),
        request_id: json::owned_text(root, &["request_id"]),
        code,
        error_type,
        message,
    }
}

/// What each dialect's own words say, whatever status came with them.
fn signal(code: Option<&str>, error_type: Option<&str>, message: &str) -> Option<ErrorClass> {
    let said = |word: &str| code == Some(word) || error_type == Some(word);
    if ["model_not_found", "DeploymentNotFound", "invalid_model"]
        .into_iter()
        .any(said)
        || names_missing_model(message)
    {
        Some(ErrorClass::NotFound)
    } else if said("insufficient_quota") {
        Some(ErrorClass::Quota)
    } else if [
        "invalid_api_key",
        "authentication_error",
        "permission_error",
    ]
    .into_iter()
    .any(said)
    {
        Some(ErrorClass::Auth)
    } else if said("rate_limit_exceeded") {
        Some(ErrorClass::RateLimited)
    } else {
        None
    }
}

/// OpenRouter ("x is not a valid model ID"), the LiteLLM proxy and Ollama ("model \"x\" not found, try pulling it
/// first") say it only in prose.
fn names_missing_model(message: &str) -> bool {
    message.contains("is not a valid model ID")
        // The LiteLLM proxy for a public name it does not (or no longer) serve, HTTP 400.
        || message.contains("Invalid model name passed in model=")
        || (message.starts_with("model \"") && message.contains("\" not found"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::provider::tests::{KEY, call, endpoint, header, response};
    use crate::provider::{
        ErrorClass, LifecycleHint, Parsed, ProviderKind, Rejected, Reply, build_request,
        parse_reply,
    };

    fn reply(kind: ProviderKind, body: &serde_json::Value) -> Reply {
        match parse_reply(kind, &response(200, body.to_string().as_bytes())) {
            Parsed::Reply(reply) => reply,
            other => panic!("{other:?}"),
        }
    }

    fn rejected(kind: ProviderKind, status: u16, body: &serde_json::Value) -> Rejected {
        match parse_reply(kind, &response(status, body.to_string().as_bytes())) {
            Parsed::Rejected(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn openai_request_uses_max_completion_tokens_and_bearer_auth() {
        let request = build_request(
            &endpoint(ProviderKind::OpenAi, "https://api.openai.com/v1"),
            &call(),
        );
        assert_eq!(request.url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(
            header(&request.headers, "authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(
            request.body,
            json!({
                "model": "m-1",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "What is 17 * 23?"},
                ],
                "temperature": 1.0,
                "max_completion_tokens": 8,
            })
        );
    }

    #[test]
    fn compatible_servers_get_max_tokens_and_may_go_without_a_key() {
        let mut ep = endpoint(ProviderKind::OpenAiCompatible, "http://127.0.0.1:11434/v1/");
        ep.api_key = None;
        let mut probe = call();
        probe.system = None;
        let request = build_request(&ep, &probe);
        assert_eq!(request.url, "http://127.0.0.1:11434/v1/chat/completions");
        assert_eq!(header(&request.headers, "authorization"), None);
        assert_eq!(request.body["max_tokens"], 8);
        assert!(request.body.get("max_completion_tokens").is_none());
        assert_eq!(
            request.body["messages"],
            json!([{"role": "user", "content": "What is 17 * 23?"}])
        );
    }

    #[test]
    fn a_call_with_a_seed_sends_it_and_one_without_sends_none() {
        let ep = endpoint(ProviderKind::OpenAiCompatible, "http://127.0.0.1:8000/v1");
        let mut probe = call();
        probe.seed = Some(2_147_483_647);
        assert_eq!(build_request(&ep, &probe).body["seed"], 2_147_483_647);
        probe.seed = None;
        assert!(build_request(&ep, &probe).body.get("seed").is_none());
    }

    #[test]
    fn fresh_seeds_fit_every_servers_integer_and_differ() {
        let seeds: std::collections::BTreeSet<u32> =
            (0..1000).map(|_| crate::provider::fresh_seed()).collect();
        assert!(seeds.iter().all(|&s| s < 1 << 31));
        // 1,000 draws from 2³¹ values: a repeat has probability about 2.3e-4.
        assert!(seeds.len() >= 999, "{} distinct of 1000", seeds.len());
    }

    #[test]
    fn openrouter_request_asks_for_cost() {
        let request = build_request(
            &endpoint(ProviderKind::OpenRouter, "https://openrouter.ai/api/v1"),
            &call(),
        );
        assert_eq!(request.url, "https://openrouter.ai/api/v1/chat/completions");
        assert_eq!(request.body["usage"], json!({"include": true}));
        assert_eq!(request.body["max_tokens"], 8);
        assert!(header(&request.headers, "authorization").is_some());
    }

    #[test]
    fn azure_request_names_the_deployment_and_api_version() {
        let mut ep = endpoint(ProviderKind::Azure, "https://res.openai.azure.com/");
        ep.api_version = Some("2024-12-01-preview".to_owned());
        let mut probe = call();
        probe.model = "prod gpt-4o";
        let request = build_request(&ep, &probe);
        assert_eq!(
            request.url,
            "https://res.openai.azure.com/openai/deployments/prod%20gpt-4o/chat/completions?api-version=2024-12-01-preview"
        );
        assert_eq!(header(&request.headers, "api-key"), Some(KEY));
        assert_eq!(header(&request.headers, "authorization"), None);
        assert_eq!(request.body["max_completion_tokens"], 8);
    }

    #[test]
    fn azure_max_tokens_field_follows_the_api_version() {
        let field = |version: Option<&str>| {
            let mut ep = endpoint(ProviderKind::Azure, "https://r.openai.azure.com");
            ep.api_version = version.map(str::to_owned);
            let body = build_request(&ep, &call()).body;
            ["max_tokens", "max_completion_tokens"]
                .into_iter()
                .find(|f| body.get(*f).is_some())
        };
        assert_eq!(field(Some("2024-02-15-preview")), Some("max_tokens"));
        assert_eq!(
            field(Some("2024-09-01-preview")),
            Some("max_completion_tokens")
        );
        assert_eq!(field(Some("preview")), Some("max_completion_tokens"));
        assert_eq!(field(None), Some("max_completion_tokens"));
        let url = build_request(&endpoint(ProviderKind::Azure, "https://r"), &call()).url;
        assert!(url.ends_with("?api-version=2024-10-21"), "{url}");
    }

    #[test]
    fn chat_text_accepts_typed_parts_and_null_content() {
        let parts = json!({"choices": [{"message": {"content": [
            {"type": "text", "text": "39"}, {"type": "image_url"}, {"type": "text", "text": "1"}]}}]});
        assert_eq!(reply(ProviderKind::OpenAiCompatible, &parts).text, "391");
        let refusal = json!({"choices": [{"message": {"content": null, "refusal": "no"}}]});
        assert_eq!(reply(ProviderKind::OpenAi, &refusal).text, "");
        assert_eq!(
            reply(ProviderKind::OpenAi, &json!({"choices": []})).text,
            ""
        );
    }

    #[test]
    fn responses_text_skips_reasoning_items() {
        let body = json!({"object": "response", "error": null, "model": "o3-mini-2025-01-31", "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
            {"type": "message", "content": [{"type": "output_text", "text": "Par"}, {"type": "refusal", "text": "x"}]},
            {"type": "message", "content": [{"type": "output_text", "text": "is"}]},
        ]});
        let reply = reply(ProviderKind::OpenAi, &body);
        assert_eq!(
            (reply.text.as_str(), reply.served_model.as_deref()),
            ("Paris", Some("o3-mini-2025-01-31"))
        );
    }

    #[test]
    fn legacy_body_warning_is_a_lifecycle_hint() {
        // The fixture fragment `deprecation-warning-in-body.fragment.txt`, completed into a body.
        let warning = "This model version is deprecated. Migrate before January 4, 2024 to avoid disruption of service. Learn more https://platform.openai.com/docs/deprecations";
        let body =
            json!({"warning": warning, "model": "text-davinci-003", "choices": [{"text": "hi"}]});
        assert_eq!(
            reply(ProviderKind::OpenAi, &body).lifecycle,
            vec![LifecycleHint::BodyWarning(warning.to_owned())]
        );
    }

    #[test]
    fn upstream_and_cost_are_read_for_openrouter_only() {
        let body = json!({"choices": [], "provider": "Anthropic", "usage": {"cost": 0.5}});
        let openrouter = reply(ProviderKind::OpenRouter, &body);
        assert_eq!(
            (openrouter.upstream.as_deref(), openrouter.reported_cost_usd),
            (Some("Anthropic"), Some(0.5))
        );
        let plain = reply(ProviderKind::OpenAiCompatible, &body);
        assert_eq!((plain.upstream, plain.reported_cost_usd), (None, None));
    }

    #[test]
    fn wrong_types_and_impossible_numbers_are_absent() {
        let body = json!({"choices": [{"message": {"content": "ok"}}], "model": 7, "system_fingerprint": false,
            "usage": {"prompt_tokens": -1, "completion_tokens": 1e40, "cost": -0.01,
                      "prompt_tokens_details": {"cached_tokens": "3"}, "completion_tokens_details": null}});
        let reply = reply(ProviderKind::OpenRouter, &body);
        assert_eq!(reply.served_model, None);
        assert_eq!(reply.system_fingerprint, None);
        let implausible = reply
            .usage
            .implausible
            .expect("1e40 completion tokens is noticed");
        assert_eq!(
            (implausible.field, implausible.value),
            ("completion_tokens", 1e40)
        );
        assert_eq!(
            crate::provider::Usage {
                implausible: None,
                ..reply.usage
            },
            crate::provider::Usage::default()
        );
        assert_eq!(reply.reported_cost_usd, None);
        assert_eq!(reply.text, "ok");
    }

    #[test]
    fn openrouter_error_inside_a_200_is_a_refusal_classed_by_its_code() {
        let body =
            json!({"error": {"code": 429, "message": "Provider returned error"}, "user_id": "u"});
        let r = rejected(ProviderKind::OpenRouter, 200, &body);
        assert_eq!(
            (r.status, r.class, r.code.as_deref()),
            (200, ErrorClass::RateLimited, Some("429"))
        );
        let no_code = json!({"error": {"message": "upstream died"}, "choices": []});
        assert_eq!(
            rejected(ProviderKind::OpenRouter, 200, &no_code).class,
            ErrorClass::Server
        );
    }

    #[test]
    fn a_failed_responses_object_is_a_refusal() {
        let body = json!({"object": "response", "status": "failed", "output": [],
            "error": {"code": "rate_limit_exceeded", "message": "slow down"}});
        assert_eq!(
            rejected(ProviderKind::OpenAi, 200, &body).class,
            ErrorClass::RateLimited
        );
    }

    #[test]
    fn model_not_found_shapes_win_over_the_status() {
        let cases = [
            json!({"error": {"message": "model \"qwen9\" not found, try pulling it first", "type": "api_error", "code": null}}),
            json!({"error": "model \"qwen9\" not found, try pulling it first"}),
            json!({"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist."}}),
            json!({"object": "error", "message": "Invalid model: x", "type": "invalid_model", "param": null, "code": "1500"}),
            json!({"error": {"message": "a/b:free is not a valid model ID", "code": 400}}),
            json!({"error": {"message": "The requested model 'x' does not exist.", "code": "model_not_found"}}),
        ];
        for body in &cases {
            assert_eq!(
                rejected(ProviderKind::OpenAiCompatible, 400, body).class,
                ErrorClass::NotFound,
                "{body}"
            );
        }
    }

    #[test]
    fn quota_and_auth_codes() {
        let quota = json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}});
        assert_eq!(
            rejected(ProviderKind::OpenAi, 429, &quota).class,
            ErrorClass::Quota
        );
        let key = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}});
        assert_eq!(
            rejected(ProviderKind::OpenAi, 400, &key).class,
            ErrorClass::Auth
        );
    }
}
