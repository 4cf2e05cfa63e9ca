//! The provider-independent steps of reading a response.
//!
//! Every adapter faces the same questions in the same order: is the body JSON at all, is it an
//! error (even inside a 2xx, as OpenRouter sends them), is it a success shape, and what do the
//! headers add. Answering them here once keeps the "never panic, always say why" rule in one
//! place; adapters only supply the two readers for their own shapes.

use serde_json::Value;

use crate::provider::headers;
use crate::provider::refusal::{self, ProviderError};
use crate::provider::{Parsed, RawResponse, Reply};

/// Reads `response` with an adapter's error reader and success reader.
///
/// `read_error` must return `Some` only when the body carries an error (a `"error": null` on a
/// success is not one); `read_reply` says in its `Err` what the 2xx body lacked.
pub(crate) fn interpret(
    response: &RawResponse,
    read_error: impl Fn(&Value) -> Option<ProviderError>,
    read_reply: impl Fn(&Value) -> Result<Reply, String>,
) -> Parsed {
    let success = refusal::is_success(response.status);
    let body = match decode(&response.body) {
        Ok(body) => body,
        Err(reason) if success => return unparseable(response, reason),
        Err(_) => return Parsed::Rejected(refusal::status_only(response)),
    };
    if let Some(error) = read_error(&body) {
        return Parsed::Rejected(refusal::reject(response, error));
    }
    if !success {
        return Parsed::Rejected(refusal::status_only(response));
    }
    match read_reply(&body) {
        Ok(reply) => Parsed::Reply(add_headers(reply, response)),
        Err(reason) => unparseable(response, reason),
    }
}

/// The body as a JSON object, or why it is not one.
fn decode(bytes: &[u8]) -> Result<Value, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("empty body".to_owned());
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("body is not valid JSON: {e}"))?;
    match value {
        Value::Object(_) => Ok(value),
        other => Err(format!(
            "body is a JSON {}, not an object",
            json_kind(&other)
        )),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Header facts outrank body facts for the request id (the header is what support asks for);
/// lifecycle hints from both are kept, headers first.
fn add_headers(mut reply: Reply, response: &RawResponse) -> Reply {
    reply.request_id = headers::request_id(response).or(reply.request_id);
    let mut lifecycle = headers::lifecycle_hints(response);
    lifecycle.append(&mut reply.lifecycle);
    reply.lifecycle = lifecycle;
    reply
}

fn unparseable(response: &RawResponse, reason: String) -> Parsed {
    Parsed::Unparseable {
        status: response.status,
        reason,
    }
}
