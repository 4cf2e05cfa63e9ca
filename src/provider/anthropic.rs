//! The Anthropic Messages wire format.
//!
//! Anthropic resolves aliases to dated snapshots in `$.model`, but from the 4.6 generation on it
//! echoes undated IDs, and its server-side fallback can let another model write the answer while
//! `$.model` still names the requested one. The only in-band witness is a `fallback_message`
//! entry in `usage.iterations`, so this adapter reads it out explicitly.

use serde_json::{Value, json};

use crate::provider::envelope;
use crate::provider::json;
use crate::provider::refusal::ProviderError;
use crate::provider::{
    Endpoint, ErrorClass, HttpRequest, Parsed, ProbeCall, RawResponse, Reply, Usage,
    normalize_model_id,
};

/// The API version every current model accepts; pinned so a new default cannot change replies.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Builds a non-streaming Messages call. `max_tokens` is Anthropic's only (and required) name.
pub(crate) fn request(endpoint: &Endpoint, base: &str, call: &ProbeCall<'_>) -> HttpRequest {
    let mut body = json!({
        "model": call.model,
        "max_tokens": call.max_tokens,
        "messages": [{"role": "user", "content": call.prompt}],
        "temperature": call.temperature,
    });
    if let Some(system) = call.system {
        body["system"] = json!(system);
    }
    let mut headers: Vec<(String, String)> = endpoint
        .api_key
        .iter()
        .map(|key| ("x-api-key".to_owned(), key.expose().to_owned()))
        .collect();
    headers.push(("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned()));
    HttpRequest {
        url: format!("{base}/v1/messages"),
        headers,
        body,
    }
}

pub(crate) fn parse(response: &RawResponse) -> Parsed {
    envelope::interpret(response, read_error, read_reply)
}

fn read_reply(body: &Value) -> Result<Reply, String> {
    let Some(content) = body.get("content").and_then(Value::as_array) else {
        return Err("2xx body has no `content` array".to_owned());
    };
    Ok(Reply {
        served_model: json::text(body, &["model"]).map(normalize_model_id),
        fallback_model: fallback_model(body),
        usage: usage(body),
        text: json::joined_text(content, |block| {
            block.get("type").and_then(Value::as_str) == Some("text")
        }),
        ..Reply::default()
    })
}

/// Anthropic's `input_tokens` excludes cache reads; both are reported as sent.
fn usage(body: &Value) -> Usage {
    let Some(u) = body.get("usage") else {
        return Usage::default();
    };
    Usage {
        input: json::count(u, &["input_tokens"]),
        output: json::count(u, &["output_tokens"]),
        cached_input: json::count(u, &["cache_read_input_tokens"]),
        reasoning: json::count(u, &["output_tokens_details", "thinking_tokens"]),
        implausible: json::implausible(
            u,
            &[
                ("input_tokens", &["input_tokens"]),
                ("output_tokens", &["output_tokens"]),
                ("cache_read_input_tokens", &["cache_read_input_tokens"]),
            ],
        ),
    }
}

/// The model of a `fallback_message` iteration. Other iteration types (`advisor_message`)
/// also name models, but those helped; they did not replace the pinned model's answer.
fn fallback_model(body: &Value) -> Option<String> {
    json::items(body, &["usage", "iterations"])
        .iter()
        .filter(|it| it.get("type").and_then(Value::as_str) == Some("fallback_message"))
        .find_map(|it| json::text(it, &["model"]))
        .map(normalize_model_id)
}

/// `{"type": "error", "error": {"type", "message"}, "request_id"}`.
fn read_error(body: &Value) -> Option<ProviderError> {
    let error = body.get("error").filter(|e| e.is_object())?;
    let error_type = json::owned_text(error, &["type"]);
    let message = json::owned_text(error, &["message"]).unwrap_or_default();
    Some(ProviderError {
        signal: signal(error_type.as_deref(), &message),
        code: None,
        error_type,
        message,
        request_id: json::owned_text(body, &["request_id"]),
        in_band_status: None,
    })
}

fn signal(error_type: Option<&str>, message: &str) -> Option<ErrorClass> {
    match error_type {
        Some("not_found_error") => Some(ErrorClass::NotFound),
        Some("authentication_error" | "permission_error") => Some(ErrorClass::Auth),
        Some("billing_error") => Some(ErrorClass::Quota),
        Some("rate_limit_error") => Some(ErrorClass::RateLimited),
        Some("overloaded_error") => Some(ErrorClass::Overloaded),
        // An exhausted prepaid balance arrives as a plain 400 invalid_request_error.
        _ if message.contains("credit balance is too low") => Some(ErrorClass::Quota),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::provider::tests::{KEY, call, endpoint, header, response};
    use crate::provider::{ErrorClass, Parsed, ProviderKind, build_request, parse_reply};

    fn parse(status: u16, body: &serde_json::Value) -> Parsed {
        parse_reply(
            ProviderKind::Anthropic,
            &response(status, body.to_string().as_bytes()),
        )
    }

    #[test]
    fn request_shape() {
        // The Messages API has no seed: one on the call is not sent (the body is compared whole).
        let mut probe = call();
        probe.seed = Some(7);
        let request = build_request(
            &endpoint(ProviderKind::Anthropic, "https://api.anthropic.com/"),
            &probe,
        );
        assert_eq!(request.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(header(&request.headers, "x-api-key"), Some(KEY));
        assert_eq!(
            header(&request.headers, "anthropic-version"),
            Some("2023-06-01")
        );
        assert_eq!(
            request.body,
            json!({
                "model": "m-1",
                "max_tokens": 8,
                "system": "Be brief.",
                "messages": [{"role": "user", "content": "What is 17 * 23?"}],
                "temperature": 1.0,
            })
        );
    }

    /// Shape from the SDK's server-side fallback types (`sdk-fixture-server-side-fallback.sse`
    /// is the streaming form): `$.model` keeps the requested model.
    #[test]
    fn fallback_message_iteration_names_the_model_that_answered() {
        let body = json!({"type": "message", "model": "claude-opus-4-7",
            "content": [{"type": "fallback", "from": {"model": "claude-opus-4-7"}, "to": {"model": "claude-sonnet-4-5"}},
                        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Hello "}, {"type": "text", "text": "there!"}],
            "usage": {"input_tokens": 25, "output_tokens": 8, "iterations": [
                {"type": "message", "input_tokens": 25, "output_tokens": 0},
                {"type": "advisor_message", "model": "claude-opus-4-8"},
                {"type": "fallback_message", "model": "claude-sonnet-4-5", "input_tokens": 25, "output_tokens": 8}]}});
        let Parsed::Reply(reply) = parse(200, &body) else {
            panic!()
        };
        assert_eq!(reply.served_model.as_deref(), Some("claude-opus-4-7"));
        assert_eq!(reply.fallback_model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(reply.text, "Hello there!");
    }

    #[test]
    fn error_types_and_billing() {
        let cases = [
            (
                200,
                "overloaded_error",
                "Overloaded",
                ErrorClass::Overloaded,
            ),
            (
                400,
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API.",
                ErrorClass::Quota,
            ),
            (402, "billing_error", "billing", ErrorClass::Quota),
            (403, "permission_error", "no", ErrorClass::Auth),
            (
                500,
                "api_error",
                "Internal server error",
                ErrorClass::Server,
            ),
            (
                413,
                "request_too_large",
                "too big",
                ErrorClass::InvalidRequest,
            ),
        ];
        for (status, kind, message, class) in cases {
            let body = json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"});
            let Parsed::Rejected(r) = parse(status, &body) else {
                panic!("{kind}")
            };
            assert_eq!(
                (r.class, r.error_type.as_deref(), r.request_id.as_deref()),
                (class, Some(kind), Some("req_1"))
            );
        }
    }

    #[test]
    fn content_of_the_wrong_type_is_unparseable() {
        let body = json!({"type": "message", "model": "claude-x", "content": "text"});
        let Parsed::Unparseable { reason, .. } = parse(200, &body) else {
            panic!()
        };
        assert!(reason.contains("`content`"), "{reason}");
    }
}
