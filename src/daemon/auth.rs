//! Who may read the daemon's API and pages and who may send it spans: one bearer-token rule for
//! `/api/*`, the status pages and `/v1/traces`, so the three handlers cannot drift apart on how a
//! token is compared or refused.
//!
//! A token is compared in constant time, so the time of a refusal says nothing about how much of
//! a guess was right; no token configured means open (the listener is loopback unless the
//! operator opted out).

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::provider::Secret;

/// Whether the request may pass: always when no token is configured, else only with
/// `Authorization: Bearer <token>`.
#[must_use]
pub fn authorized(token: Option<&Secret>, headers: &HeaderMap) -> bool {
    token.is_none_or(|token| bearer_matches(headers, token))
}

/// Whether `Authorization: Bearer <token>` carries `token`, compared in constant time.
#[must_use]
pub fn bearer_matches(headers: &HeaderMap, token: &Secret) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    constant_time_eq(given.as_bytes(), token.expose().as_bytes())
}

/// 401 with the scheme to use.
#[must_use]
pub fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "a bearer token is required\n",
    )
        .into_response()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};

    use super::{authorized, constant_time_eq};
    use crate::provider::Secret;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret-longer"));
    }

    #[test]
    fn no_token_is_open_and_a_token_needs_its_bearer_header() {
        let token = Secret::new("t0k".to_owned());
        let mut headers = HeaderMap::new();
        assert!(authorized(None, &headers));
        assert!(!authorized(Some(&token), &headers));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("t0k"));
        assert!(
            !authorized(Some(&token), &headers),
            "the scheme is required"
        );
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer t0k"),
        );
        assert!(authorized(Some(&token), &headers));
    }
}
