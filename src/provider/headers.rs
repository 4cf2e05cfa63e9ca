//! What response headers say, whichever provider sent them.
//!
//! Request ids and lifecycle warnings travel in headers whose names differ by provider but never
//! collide, so one reader serves every adapter: a report can quote the id a provider's support
//! desk asks for, and a `Sunset` header is noticed even on a provider that never sent one before.

use crate::provider::{LifecycleHint, RawResponse};

/// Request-id headers in the order they are trusted: OpenAI/Groq, Anthropic, Azure, Mistral.
const REQUEST_ID_HEADERS: [&str; 4] = [
    "x-request-id",
    "request-id",
    "apim-request-id",
    "mistral-correlation-id",
];

/// The provider's request id from the headers, if any of the known names carries one.
pub(crate) fn request_id(response: &RawResponse) -> Option<String> {
    REQUEST_ID_HEADERS
        .iter()
        .filter_map(|name| response.header(name))
        .map(str::trim)
        .find(|value| !value.is_empty())
        .map(str::to_owned)
}

/// Every lifecycle hint in the headers, in the order they arrived.
pub(crate) fn lifecycle_hints(response: &RawResponse) -> Vec<LifecycleHint> {
    response
        .headers
        .iter()
        .filter_map(|(name, value)| hint(name, value.trim()))
        .collect()
}

fn hint(name: &str, value: &str) -> Option<LifecycleHint> {
    if value.is_empty() {
        return None;
    }
    let value = value.to_owned();
    match name.to_ascii_lowercase().as_str() {
        "sunset" => Some(LifecycleHint::Sunset(value)),
        "deprecation" => Some(LifecycleHint::Deprecation(value)),
        "x-model-deprecation-timestamp" => Some(LifecycleHint::ModelDeprecationTimestamp(value)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{lifecycle_hints, request_id};
    use crate::provider::{LifecycleHint, RawResponse};

    #[test]
    fn request_id_prefers_x_request_id_and_skips_blank_values() {
        let r = RawResponse::with_headers(&[("request-id", "req_b"), ("x-request-id", "req_a")]);
        assert_eq!(request_id(&r).as_deref(), Some("req_a"));
        let r = RawResponse::with_headers(&[("x-request-id", "  "), ("apim-request-id", "az")]);
        assert_eq!(request_id(&r).as_deref(), Some("az"));
        assert_eq!(
            request_id(&RawResponse::with_headers(&[("traceparent", "00-x")])),
            None
        );
    }

    #[test]
    fn lifecycle_headers_are_kept_raw_in_arrival_order() {
        let r = RawResponse::with_headers(&[
            ("Deprecation", "@1688169599"),
            ("sunset", "Wed, 11 Nov 2026 23:59:59 GMT"),
            ("x-model-deprecation-timestamp", "2026-01-31T12:00:00Z"),
            ("deprecation", ""),
        ]);
        assert_eq!(
            lifecycle_hints(&r),
            vec![
                LifecycleHint::Deprecation("@1688169599".to_owned()),
                LifecycleHint::Sunset("Wed, 11 Nov 2026 23:59:59 GMT".to_owned()),
                LifecycleHint::ModelDeprecationTimestamp("2026-01-31T12:00:00Z".to_owned()),
            ]
        );
    }
}
