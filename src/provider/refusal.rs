//! Turning a provider's refusal into an [`ErrorClass`].
//!
//! Each adapter reads its own error shape into a [`ProviderError`] and says what that shape alone
//! reveals (a model-not-found code, an overload type). This module settles the class from that
//! signal and the HTTP status in one order for every provider, so "404 means gone" and "402 means
//! pay up" are decided once, and a body nobody can read still gets a class from its status.

use crate::provider::headers;
use crate::provider::{ErrorClass, RawResponse, Rejected};

/// How many characters of an unreadable error body are kept as its message.
const PREVIEW_CHARS: usize = 200;

/// An error body as one adapter read it, before classification.
#[derive(Debug, Default)]
pub(crate) struct ProviderError {
    pub code: Option<String>,
    pub error_type: Option<String>,
    pub message: String,
    /// A request id carried in the body (Anthropic's top-level `request_id`).
    pub request_id: Option<String>,
    /// What the provider's own shape says, whatever the status (OpenAI Responses sends
    /// `model_not_found` with a 400).
    pub signal: Option<ErrorClass>,
    /// A status carried in the body, for errors inside a 2xx (OpenRouter's integer `code`).
    pub in_band_status: Option<u16>,
}

/// The refusal for a recognised error body.
pub(crate) fn reject(response: &RawResponse, error: ProviderError) -> Rejected {
    let status = if is_success(response.status) {
        error.in_band_status.unwrap_or(response.status)
    } else {
        response.status
    };
    let message = if error.message.is_empty() {
        preview(&response.body)
    } else {
        error.message
    };
    Rejected {
        status: response.status,
        class: error
            .signal
            .unwrap_or_else(|| class_from_status(status, &message)),
        code: error.code,
        error_type: error.error_type,
        message,
        request_id: headers::request_id(response).or(error.request_id),
    }
}

/// The refusal for a non-2xx whose body is no error shape we know: the status decides.
pub(crate) fn status_only(response: &RawResponse) -> Rejected {
    let message = preview(&response.body);
    Rejected {
        status: response.status,
        class: class_from_status(response.status, &message),
        code: None,
        error_type: None,
        message,
        request_id: headers::request_id(response),
    }
}

pub(crate) fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The class a status implies when the body says nothing more specific.
fn class_from_status(status: u16, message: &str) -> ErrorClass {
    match status {
        404 | 410 => ErrorClass::NotFound,
        401 | 403 => ErrorClass::Auth,
        402 => ErrorClass::Quota,
        429 => ErrorClass::RateLimited,
        529 => ErrorClass::Overloaded,
        503 if mentions_overload(message) => ErrorClass::Overloaded,
        300..=499 => ErrorClass::InvalidRequest,
        // 5xx, and an error inside a 2xx that names no status: the provider failed to answer.
        _ => ErrorClass::Server,
    }
}

/// Google and DeepSeek say "overloaded" / "high demand" on a 503 that otherwise looks like any
/// outage; it is capacity, so it is worth telling apart from a broken server.
fn mentions_overload(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("overloaded") || message.contains("high demand")
}

/// The start of a body as text, for a report line; never fails on bad UTF-8. An HTML page (a
/// proxy's or load balancer's 502) is summarised by its `<title>`, or its first text, rather
/// than pasted as markup.
fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".to_owned();
    }
    if let Some(summary) = html_summary(text) {
        return summary;
    }
    text.chars().take(PREVIEW_CHARS).collect()
}

/// How many characters of an HTML page's title or first text are kept.
const HTML_TEXT_CHARS: usize = 120;

/// "HTML page: 502 Bad Gateway" for a body that is an HTML document; `None` otherwise.
fn html_summary(text: &str) -> Option<String> {
    // ASCII lowering keeps byte offsets, so positions found in `lower` index `text`.
    let lower = text.to_ascii_lowercase();
    let is_html = lower.starts_with("<!doctype html")
        || lower.starts_with("<html")
        || (lower.starts_with('<') && (lower.contains("<body") || lower.contains("<title")));
    if !is_html {
        return None;
    }
    let title = lower.find("<title").and_then(|at| {
        let open = at + lower[at..].find('>')? + 1;
        let close = open + lower[open..].find("</title")?;
        Some(words(&text[open..close]))
    });
    let shown = title.filter(|t| !t.is_empty()).unwrap_or_else(|| {
        let body = lower.find("<body").unwrap_or(0);
        words(&strip_tags(&text[body..]))
    });
    let shown: String = shown.chars().take(HTML_TEXT_CHARS).collect();
    Some(if shown.is_empty() {
        "HTML page with no text".to_owned()
    } else {
        format!("HTML page: {shown}")
    })
}

/// Text outside tags, with `<script>` and `<style>` contents dropped.
fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        out.push(' ');
        let tag = rest[open..].to_ascii_lowercase();
        let skip_to = ["script", "style"]
            .iter()
            .find(|name| tag[1..].starts_with(*name))
            .and_then(|name| tag.find(&format!("</{name}")));
        let from = open + skip_to.unwrap_or(0);
        match rest[from..].find('>') {
            Some(close) => rest = &rest[from + close + 1..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// Whitespace collapsed and the common entities decoded.
fn words(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::{ProviderError, class_from_status, reject, status_only};
    use crate::provider::{ErrorClass, RawResponse};

    fn response(status: u16, body: &[u8]) -> RawResponse {
        RawResponse {
            status,
            headers: Vec::new(),
            body: body.to_vec(),
        }
    }

    #[test]
    fn status_table() {
        let cases = [
            (404, "", ErrorClass::NotFound),
            (410, "", ErrorClass::NotFound),
            (401, "", ErrorClass::Auth),
            (403, "", ErrorClass::Auth),
            (402, "", ErrorClass::Quota),
            (429, "", ErrorClass::RateLimited),
            (529, "", ErrorClass::Overloaded),
            (503, "The model is OVERLOADED", ErrorClass::Overloaded),
            (503, "experiencing high demand", ErrorClass::Overloaded),
            (503, "Service Unavailable", ErrorClass::Server),
            (500, "overloaded", ErrorClass::Server),
            (400, "", ErrorClass::InvalidRequest),
            (422, "", ErrorClass::InvalidRequest),
            (302, "", ErrorClass::InvalidRequest),
            (200, "", ErrorClass::Server),
            (999, "", ErrorClass::Server),
        ];
        for (status, message, class) in cases {
            assert_eq!(
                class_from_status(status, message),
                class,
                "{status} {message}"
            );
        }
    }

    #[test]
    fn unreadable_bodies_keep_200_lossy_characters() {
        let mut body = b"oops\xff\xfe".to_vec();
        body.extend(std::iter::repeat_n(b'x', 500));
        let rejected = status_only(&response(502, &body));
        assert_eq!(rejected.class, ErrorClass::Server);
        assert_eq!(rejected.message.chars().count(), 200);
        assert!(rejected.message.starts_with("oops\u{fffd}\u{fffd}x"));
        assert_eq!(status_only(&response(500, b"  ")).message, "(empty body)");
    }

    #[test]
    fn an_html_error_page_is_summarised_by_its_title_or_first_text_not_pasted() {
        let nginx = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n";
        let cases: [(&[u8], &str); 4] = [
            (nginx, "HTML page: 502 Bad Gateway"),
            (
                b"<!DOCTYPE html><html><head><style>p{color:red}</style><script>var x = '<b>';</script></head><body><p>Upstream   connect error &amp; reset</p></body></html>",
                "HTML page: Upstream connect error & reset",
            ),
            (b"<!doctype html><html><body></body></html>", "HTML page with no text"),
            (b"<html><title>  </title><body>Service\nUnavailable</body>", "HTML page: Service Unavailable"),
        ];
        for (body, want) in cases {
            assert_eq!(status_only(&response(502, body)).message, want);
        }
        let long = format!("<html><title>{}</title></html>", "x".repeat(5000));
        let shown = status_only(&response(503, long.as_bytes())).message;
        assert!(shown.chars().count() <= 11 + 120, "{shown}");
        // JSON and plain text are not HTML.
        assert_eq!(
            status_only(&response(502, b"bad gateway")).message,
            "bad gateway"
        );
    }

    #[test]
    fn a_shape_signal_outranks_the_status_and_in_band_status_counts_inside_2xx() {
        let signalled = ProviderError {
            signal: Some(ErrorClass::NotFound),
            message: "m".to_owned(),
            ..ProviderError::default()
        };
        assert_eq!(
            reject(&response(400, b"{}"), signalled).class,
            ErrorClass::NotFound
        );
        let in_band = ProviderError {
            in_band_status: Some(429),
            ..ProviderError::default()
        };
        let rejected = reject(&response(200, b"{\"error\":{}}"), in_band);
        assert_eq!(
            (rejected.status, rejected.class),
            (200, ErrorClass::RateLimited)
        );
        assert_eq!(rejected.message, "{\"error\":{}}");
    }
}
