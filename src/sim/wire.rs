//! The simulator's side of each wire format: read a request, write a success or an error body
//! shaped like the real provider's (the shapes follow `tests/fixtures/real/`).

use serde_json::{Value, json};

use crate::sim::scenario::SimError;

/// Which provider a request path belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    OpenAi,
    OpenRouter,
    Azure,
    Anthropic,
    Gemini,
}

/// What the simulator needs from a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub flavour: Flavour,
    /// Requested model ID, or Azure deployment name.
    pub model: String,
    pub system: String,
    pub prompt: String,
    pub max_tokens: u64,
    /// `top_logprobs` when the request turned `logprobs` on (chat completions only).
    pub top_logprobs: Option<u64>,
}

/// Routes a path to a flavour and the model named in the URL, if any.
#[must_use]
pub fn route_path(path: &str) -> Option<(Flavour, Option<String>)> {
    if let Some(rest) = path.split("/openai/deployments/").nth(1) {
        let deployment = rest.strip_suffix("/chat/completions")?;
        return Some((Flavour::Azure, Some(deployment.to_owned())));
    }
    if path.ends_with("/chat/completions") {
        let flavour = if path.starts_with("/openrouter/") {
            Flavour::OpenRouter
        } else {
            Flavour::OpenAi
        };
        return Some((flavour, None));
    }
    if path.ends_with("/v1/messages") {
        return Some((Flavour::Anthropic, None));
    }
    let rest = path.split("/v1beta/models/").nth(1)?;
    let model = rest.strip_suffix(":generateContent")?;
    Some((Flavour::Gemini, Some(model.to_owned())))
}

/// Reads the request body; `None` when it is not a request this flavour understands.
#[must_use]
pub fn read_ask(flavour: Flavour, url_model: Option<String>, body: &Value) -> Option<Ask> {
    let max_tokens = ["max_completion_tokens", "max_tokens"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_u64))
        .or_else(|| body.pointer("/generationConfig/maxOutputTokens")?.as_u64())
        .unwrap_or(256);
    let (system, prompt) = match flavour {
        Flavour::Gemini => (
            texts(body.pointer("/systemInstruction/parts")),
            texts(body.pointer("/contents/0/parts")),
        ),
        Flavour::Anthropic => (
            body.get("system")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            message_text(body, "user"),
        ),
        _ => (message_text(body, "system"), message_text(body, "user")),
    };
    let model = match url_model {
        Some(m) => m,
        None => body.get("model")?.as_str()?.to_owned(),
    };
    let top_logprobs = (body.get("logprobs").and_then(Value::as_bool) == Some(true)).then(|| {
        body.get("top_logprobs")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    });
    Some(Ask {
        flavour,
        model,
        system,
        prompt,
        max_tokens,
        top_logprobs,
    })
}

fn texts(parts: Option<&Value>) -> String {
    parts
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<String>()
        })
        .unwrap_or_default()
}

fn message_text(body: &Value, role: &str) -> String {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some(role))
        .filter_map(|m| match m.get("content") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(parts @ Value::Array(_)) => Some(texts(Some(parts))),
            _ => None,
        })
        .collect()
}

/// One answer, ready to be written in a flavour's shape.
#[derive(Debug, Clone)]
pub struct Answer<'a> {
    pub reported_model: &'a str,
    pub text: &'a str,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub fingerprint: Option<&'a str>,
    pub upstream: Option<&'a str>,
    pub serial: u64,
    /// The first token's top alternatives with their logprobs, when they were asked for.
    pub top_logprobs: Option<Vec<(String, f64)>>,
}

#[must_use]
pub fn success_body(flavour: Flavour, a: &Answer<'_>) -> Value {
    let total = a.prompt_tokens + a.completion_tokens;
    match flavour {
        Flavour::Anthropic => json!({
            "id": format!("msg_sim{:08}", a.serial),
            "type": "message",
            "role": "assistant",
            "model": a.reported_model,
            "content": [{"type": "text", "text": a.text}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": a.prompt_tokens, "output_tokens": a.completion_tokens}
        }),
        Flavour::Gemini => json!({
            "candidates": [{
                "content": {"parts": [{"text": a.text}], "role": "model"},
                "finishReason": "STOP",
                "index": 0
            }],
            "usageMetadata": {
                "promptTokenCount": a.prompt_tokens,
                "candidatesTokenCount": a.completion_tokens,
                "totalTokenCount": total
            },
            "modelVersion": a.reported_model,
            "responseId": format!("sim{:08}", a.serial)
        }),
        Flavour::OpenAi | Flavour::OpenRouter | Flavour::Azure => openai_body(flavour, a, total),
    }
}

fn openai_body(flavour: Flavour, a: &Answer<'_>, total: u64) -> Value {
    let mut body = json!({
        "id": format!("chatcmpl-sim{:08}", a.serial),
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": a.reported_model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": a.text},
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": a.prompt_tokens,
            "completion_tokens": a.completion_tokens,
            "total_tokens": total
        },
        "system_fingerprint": a.fingerprint
    });
    if let Some(top) = &a.top_logprobs {
        let entry = |token: &str, logprob: f64| json!({"token": token, "logprob": logprob, "bytes": token.as_bytes()});
        let sampled = top
            .iter()
            .find(|(t, _)| t == a.text)
            .map_or(-30.0, |(_, lp)| *lp);
        let mut first = entry(a.text, sampled);
        first["top_logprobs"] = top.iter().map(|(t, lp)| entry(t, *lp)).collect();
        body["choices"][0]["logprobs"] = json!({"content": [first]});
    }
    if flavour == Flavour::OpenRouter {
        body["id"] = json!(format!("gen-sim{:08}", a.serial));
        body["provider"] = json!(a.upstream.unwrap_or("Simulated"));
        body["usage"]["cost"] = json!(a.cost_usd);
    }
    body
}

/// The status and body each provider sends for an error class.
#[must_use]
pub fn error_body(flavour: Flavour, class: SimError, model: &str) -> (u16, Value) {
    match flavour {
        Flavour::OpenAi | Flavour::Azure => openai_error(flavour, class, model),
        Flavour::OpenRouter => openrouter_error(class, model),
        Flavour::Anthropic => anthropic_error(class, model),
        Flavour::Gemini => gemini_error(class, model),
    }
}

fn openai_error(flavour: Flavour, class: SimError, model: &str) -> (u16, Value) {
    if flavour == Flavour::Azure && class == SimError::NotFound {
        return (
            404,
            json!({"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}),
        );
    }
    let (status, kind, code, message) = match class {
        SimError::NotFound => (
            404,
            "invalid_request_error",
            "model_not_found",
            format!("The model `{model}` does not exist or you do not have access to it."),
        ),
        SimError::Auth => (
            401,
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided.".to_owned(),
        ),
        SimError::Quota => (
            429,
            "insufficient_quota",
            "insufficient_quota",
            "You exceeded your current quota, please check your plan and billing details."
                .to_owned(),
        ),
        SimError::RateLimited => (
            429,
            "tokens",
            "rate_limit_exceeded",
            format!(
                "Rate limit reached for {model} on tokens per min (TPM). Please try again in 1s."
            ),
        ),
        SimError::Overloaded => (
            503,
            "server_error",
            "overloaded",
            "The engine is currently overloaded, please try again later".to_owned(),
        ),
        SimError::Server => (
            500,
            "server_error",
            "server_error",
            "The server had an error while processing your request.".to_owned(),
        ),
        SimError::InvalidRequest => (
            400,
            "invalid_request_error",
            "invalid_value",
            "Invalid request.".to_owned(),
        ),
    };
    (
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

fn openrouter_error(class: SimError, model: &str) -> (u16, Value) {
    let (status, message) = match class {
        SimError::NotFound => (400, format!("{model} is not a valid model ID")),
        SimError::Auth => (401, "No auth credentials found".to_owned()),
        SimError::Quota => (
            402,
            "Insufficient credits. Add more using https://openrouter.ai/credits".to_owned(),
        ),
        SimError::RateLimited => (429, "Provider returned error".to_owned()),
        SimError::Overloaded => (503, "No endpoints available".to_owned()),
        SimError::Server => (500, "Internal Server Error".to_owned()),
        SimError::InvalidRequest => (400, "Invalid request".to_owned()),
    };
    (
        status,
        json!({"error": {"code": status, "message": message}, "user_id": "user_sim"}),
    )
}

fn anthropic_error(class: SimError, model: &str) -> (u16, Value) {
    let (status, kind, message) = match class {
        SimError::NotFound => (404, "not_found_error", format!("model: {model}")),
        SimError::Auth => (401, "authentication_error", "invalid x-api-key".to_owned()),
        SimError::Quota => (
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API.".to_owned(),
        ),
        SimError::RateLimited => (
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit".to_owned(),
        ),
        SimError::Overloaded => (529, "overloaded_error", "Overloaded".to_owned()),
        SimError::Server => (500, "api_error", "Internal server error".to_owned()),
        SimError::InvalidRequest => (400, "invalid_request_error", "Invalid request".to_owned()),
    };
    (
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_sim"}),
    )
}

fn gemini_error(class: SimError, model: &str) -> (u16, Value) {
    let (status, code, message) = match class {
        SimError::NotFound => (404, "NOT_FOUND", format!("models/{model} is not found for API version v1beta, or is not supported for generateContent. Call ModelService.ListModels to see the list of available models and their supported methods.")),
        SimError::Auth => (403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.".to_owned()),
        SimError::Quota => (429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.".to_owned()),
        SimError::RateLimited => (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).".to_owned()),
        SimError::Overloaded => (503, "UNAVAILABLE", "The model is overloaded. Please try again later.".to_owned()),
        SimError::Server => (500, "INTERNAL", "An internal error has occurred.".to_owned()),
        SimError::InvalidRequest => (400, "INVALID_ARGUMENT", "Invalid argument.".to_owned()),
    };
    let mut error = json!({"code": status, "message": message, "status": code});
    if class == SimError::Quota {
        error["details"] = json!([{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}]}]);
    }
    (status, json!({ "error": error }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_to_flavours() {
        let cases = [
            ("/openai/v1/chat/completions", Some((Flavour::OpenAi, None))),
            (
                "/openrouter/api/v1/chat/completions",
                Some((Flavour::OpenRouter, None)),
            ),
            ("/anthropic/v1/messages", Some((Flavour::Anthropic, None))),
            (
                "/gemini/v1beta/models/gemini-2.5-pro:generateContent",
                Some((Flavour::Gemini, Some("gemini-2.5-pro".to_owned()))),
            ),
            (
                "/azure/openai/deployments/prod-4o/chat/completions",
                Some((Flavour::Azure, Some("prod-4o".to_owned()))),
            ),
            ("/gemini/v1beta/models/x:streamGenerateContent", None),
            ("/nothing", None),
        ];
        for (path, want) in cases {
            assert_eq!(route_path(path), want, "{path}");
        }
    }

    #[test]
    fn reads_each_request_shape() {
        let openai = json!({"model": "m", "max_completion_tokens": 8,
            "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "P"}]});
        let ask = read_ask(Flavour::OpenAi, None, &openai).unwrap();
        assert_eq!(
            (
                ask.model.as_str(),
                ask.system.as_str(),
                ask.prompt.as_str(),
                ask.max_tokens
            ),
            ("m", "S", "P", 8)
        );
        let gemini = json!({"contents": [{"role": "user", "parts": [{"text": "P"}]}],
            "systemInstruction": {"parts": [{"text": "S"}]}, "generationConfig": {"maxOutputTokens": 4}});
        let ask = read_ask(Flavour::Gemini, Some("g".into()), &gemini).unwrap();
        assert_eq!(
            (
                ask.model.as_str(),
                ask.system.as_str(),
                ask.prompt.as_str(),
                ask.max_tokens
            ),
            ("g", "S", "P", 4)
        );
        let anthropic = json!({"model": "c", "system": "S", "max_tokens": 2, "messages": [{"role": "user", "content": "P"}]});
        let ask = read_ask(Flavour::Anthropic, None, &anthropic).unwrap();
        assert_eq!(
            (
                ask.model.as_str(),
                ask.system.as_str(),
                ask.prompt.as_str(),
                ask.max_tokens
            ),
            ("c", "S", "P", 2)
        );
        assert!(read_ask(Flavour::OpenAi, None, &json!({"messages": []})).is_none());
    }
}
