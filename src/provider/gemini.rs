//! The Gemini `generateContent` wire format (Gemini API and Vertex AI).
//!
//! Google names the model in the URL, not the body, and reports what served it in
//! `$.modelVersion` — sometimes with a `models/` prefix, which is why retired previews answering
//! as the GA model (`gemini-2.5-pro-preview-03-25` → `models/gemini-2.5-pro`) need normalising
//! before comparison. Errors are `google.rpc.Status` objects whose `status` name, not the HTTP
//! code, tells a quota from a per-minute limit. Vertex bodies have the same shape.

use serde_json::{Value, json};

use crate::provider::envelope;
use crate::provider::json;
use crate::provider::refusal::ProviderError;
use crate::provider::{
    Endpoint, ErrorClass, HttpRequest, Parsed, ProbeCall, RawResponse, Reply, Usage,
    normalize_model_id, path_segment,
};

/// Builds a non-streaming generateContent call; `maxOutputTokens` is Gemini's only name.
pub(crate) fn request(endpoint: &Endpoint, base: &str, call: &ProbeCall<'_>) -> HttpRequest {
    let mut body = json!({
        "contents": [{"role": "user", "parts": [{"text": call.prompt}]}],
        "generationConfig": {
            "maxOutputTokens": call.max_tokens,
            "temperature": call.temperature,
        },
    });
    if let Some(system) = call.system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    // A pin may spell the model `models/x`; the path already says `models/`.
    let model = path_segment(&normalize_model_id(call.model));
    HttpRequest {
        url: format!("{base}/v1beta/models/{model}:generateContent"),
        headers: endpoint
            .api_key
            .iter()
            .map(|key| ("x-goog-api-key".to_owned(), key.expose().to_owned()))
            .collect(),
        body,
    }
}

pub(crate) fn parse(response: &RawResponse) -> Parsed {
    envelope::interpret(response, read_error, read_reply)
}

/// A blocked prompt has no `candidates` but still a `promptFeedback`, a model and usage.
fn read_reply(body: &Value) -> Result<Reply, String> {
    let candidates = body.get("candidates").and_then(Value::as_array);
    if candidates.is_none() && !body.get("promptFeedback").is_some_and(Value::is_object) {
        return Err("2xx body has neither a `candidates` array nor a `promptFeedback`".to_owned());
    }
    let first = candidates.and_then(|c| c.first());
    Ok(Reply {
        served_model: json::text(body, &["modelVersion"]).map(normalize_model_id),
        usage: usage(body),
        text: first.map(answer_text).unwrap_or_default(),
        request_id: json::owned_text(body, &["responseId"]),
        ..Reply::default()
    })
}

/// Thought parts (`"thought": true`) are the model thinking aloud, not its answer.
fn answer_text(candidate: &Value) -> String {
    json::joined_text(json::items(candidate, &["content", "parts"]), |part| {
        part.get("thought").and_then(Value::as_bool) != Some(true)
    })
}

fn usage(body: &Value) -> Usage {
    let Some(u) = body.get("usageMetadata") else {
        return Usage::default();
    };
    Usage {
        input: json::count(u, &["promptTokenCount"]),
        output: json::count(u, &["candidatesTokenCount"]),
        cached_input: json::count(u, &["cachedContentTokenCount"]),
        reasoning: json::count(u, &["thoughtsTokenCount"]),
        implausible: json::implausible(
            u,
            &[
                ("promptTokenCount", &["promptTokenCount"]),
                ("candidatesTokenCount", &["candidatesTokenCount"]),
                ("totalTokenCount", &["totalTokenCount"]),
            ],
        ),
    }
}

/// `{"error": {"code": 404, "message", "status": "NOT_FOUND", "details": [...]}}`. The status
/// name is kept as the code: it is what Google's docs and support use.
fn read_error(body: &Value) -> Option<ProviderError> {
    let error = body.get("error").filter(|e| e.is_object())?;
    let message = json::owned_text(error, &["message"]).unwrap_or_default();
    let status = json::owned_text(error, &["status"]);
    Some(ProviderError {
        signal: signal(status.as_deref(), error, &message),
        code: status.or_else(|| json::code(error, &["code"])),
        error_type: None,
        message,
        request_id: None,
        in_band_status: json::error_status(error, &["code"]),
    })
}

fn signal(status: Option<&str>, error: &Value, message: &str) -> Option<ErrorClass> {
    match status {
        Some("NOT_FOUND") => Some(ErrorClass::NotFound),
        Some("PERMISSION_DENIED" | "UNAUTHENTICATED") => Some(ErrorClass::Auth),
        Some("RESOURCE_EXHAUSTED") if is_quota(error, message) => Some(ErrorClass::Quota),
        // A bad key is a 400 INVALID_ARGUMENT; only the ErrorInfo reason says so.
        _ if has_detail(error, |d| {
            json::text(d, &["reason"]) == Some("API_KEY_INVALID")
        }) =>
        {
            Some(ErrorClass::Auth)
        }
        _ => None,
    }
}

/// RESOURCE_EXHAUSTED covers both a per-minute limit (retry soon) and a spent quota or bill
/// (retrying cannot help). Google's own words decide: "check your plan and billing", or a
/// `QuotaFailure` whose quota is per day. A bare "Resource has been exhausted (e.g. check
/// quota)" or a `RetryInfo` delay is the per-minute kind.
fn is_quota(error: &Value, message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    if lower.contains("billing") || lower.contains("exceeded your current quota") {
        return true;
    }
    has_detail(error, |d| {
        json::text(d, &["@type"]).is_some_and(|t| t.ends_with("google.rpc.QuotaFailure"))
            && json::items(d, &["violations"]).iter().any(|v| {
                ["quotaId", "quotaMetric"].iter().any(|k| {
                    json::text(v, &[k]).is_some_and(|q| q.to_ascii_lowercase().contains("perday"))
                })
            })
    })
}

fn has_detail(error: &Value, test: impl Fn(&Value) -> bool) -> bool {
    json::items(error, &["details"]).iter().any(test)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::provider::tests::{KEY, call, endpoint, header, response};
    use crate::provider::{ErrorClass, Parsed, ProviderKind, build_request, parse_reply};

    fn parse(status: u16, body: &serde_json::Value) -> Parsed {
        parse_reply(
            ProviderKind::Gemini,
            &response(status, body.to_string().as_bytes()),
        )
    }

    fn class(status: u16, body: &serde_json::Value) -> ErrorClass {
        match parse(status, body) {
            Parsed::Rejected(r) => r.class,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn request_shape() {
        let mut probe = call();
        probe.model = "models/gemini-2.5-flash";
        // Gemini draws its own seed: a seed on the call is not sent (the body is compared whole).
        probe.seed = Some(7);
        let request = build_request(
            &endpoint(
                ProviderKind::Gemini,
                "https://generativelanguage.googleapis.com/",
            ),
            &probe,
        );
        assert_eq!(
            request.url,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(header(&request.headers, "x-goog-api-key"), Some(KEY));
        assert_eq!(
            request.body,
            json!({
                "contents": [{"role": "user", "parts": [{"text": "What is 17 * 23?"}]}],
                "systemInstruction": {"parts": [{"text": "Be brief."}]},
                "generationConfig": {"maxOutputTokens": 8, "temperature": 1.0},
            })
        );
        probe.system = None;
        let body = build_request(&endpoint(ProviderKind::Gemini, "https://g"), &probe).body;
        assert!(body.get("systemInstruction").is_none());
    }

    #[test]
    fn thoughts_are_not_the_answer_and_blocked_prompts_still_name_the_model() {
        let body = json!({"modelVersion": "models/gemini-2.5-pro", "candidates": [{"content": {"parts": [
            {"text": "let me think", "thought": true}, {"text": "39"}, {"text": "1"}]}}]});
        let Parsed::Reply(reply) = parse(200, &body) else {
            panic!()
        };
        assert_eq!(
            (reply.text.as_str(), reply.served_model.as_deref()),
            ("391", Some("gemini-2.5-pro"))
        );
        let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "gemini-2.0-flash",
            "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}});
        let Parsed::Reply(reply) = parse(200, &blocked) else {
            panic!()
        };
        assert_eq!((reply.text.as_str(), reply.usage.input), ("", Some(9)));
    }

    #[test]
    fn resource_exhausted_is_quota_only_when_it_says_so() {
        let per_minute = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
            "message": "Resource has been exhausted (e.g. check rate limits)."}});
        assert_eq!(class(429, &per_minute), ErrorClass::RateLimited);
        let says_quota = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
            "message": "Resource has been exhausted (e.g. check quota)."}});
        assert_eq!(
            class(429, &says_quota),
            ErrorClass::RateLimited,
            "Google's per-minute wording"
        );
        let per_minute_failure = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Too many.",
            "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}});
        assert_eq!(class(429, &per_minute_failure), ErrorClass::RateLimited);
        let per_day = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Too many.",
            "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}});
        assert_eq!(class(429, &per_day), ErrorClass::Quota);
        let billing = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
            "message": "You exceeded your current quota, please check your plan and billing details."}});
        assert_eq!(class(429, &billing), ErrorClass::Quota);
    }

    #[test]
    fn auth_shapes() {
        let bad_key = json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "API key not valid. Please pass a valid API key.",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}});
        assert_eq!(class(400, &bad_key), ErrorClass::Auth);
        let denied =
            json!({"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "no"}});
        assert_eq!(class(403, &denied), ErrorClass::Auth);
    }

    #[test]
    fn code_is_the_status_name_or_else_the_number() {
        let Parsed::Rejected(r) = parse(500, &json!({"error": {"code": 500, "message": "boom"}}))
        else {
            panic!()
        };
        assert_eq!(
            (r.code.as_deref(), r.class),
            (Some("500"), ErrorClass::Server)
        );
    }
}
