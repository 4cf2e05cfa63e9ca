//! Which URLs modelpin will send keys and alerts to.
//!
//! API keys and alert payloads must not cross a network in clear text: `https://` anywhere, plain
//! `http://` only to loopback (the simulator, a local model server). Parsing stops at the host;
//! the HTTP client validates the rest when it is used.

use std::net::{Ipv4Addr, Ipv6Addr};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlProblem {
    /// Not `http://` or `https://`.
    Scheme,
    NoHost,
    /// `http://` to this non-loopback host.
    PlainHttp(String),
}

/// Accepts `https://host...` and `http://loopback...`.
pub(crate) fn check_http_url(url: &str) -> Result<(), UrlProblem> {
    let (secure, rest) = if let Some(rest) = strip_scheme(url, "https://") {
        (true, rest)
    } else if let Some(rest) = strip_scheme(url, "http://") {
        (false, rest)
    } else {
        return Err(UrlProblem::Scheme);
    };
    let host = host_of(rest);
    if host.is_empty() || host == "[]" {
        return Err(UrlProblem::NoHost);
    }
    if secure || is_loopback(host) {
        Ok(())
    } else {
        Err(UrlProblem::PlainHttp(host.to_string()))
    }
}

/// The part after `scheme`, matched case-insensitively.
pub(crate) fn strip_scheme<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    let head = url.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme)
        .then(|| &url[scheme.len()..])
}

/// The host of `authority[/path]`, brackets kept for IPv6, user info and port dropped.
pub(crate) fn host_of(rest: &str) -> &str {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    if host_port.starts_with('[') {
        return host_port.find(']').map_or(host_port, |i| &host_port[..=i]);
    }
    host_port.split(':').next().unwrap_or("")
}

fn is_loopback(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return ip.is_loopback();
    }
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .and_then(|h| h.parse::<Ipv6Addr>().ok())
        .is_some_and(|ip| ip.is_loopback())
}

/// `[A-Za-z_][A-Za-z0-9_]*`: what a shell will export.
pub(crate) fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::{UrlProblem, check_http_url, is_env_name};

    #[test]
    fn https_anywhere_http_only_on_loopback() {
        for ok in [
            "https://api.openai.com/v1",
            "HTTPS://example.com",
            "http://127.0.0.1:8080/v1",
            "http://127.1.2.3",
            "http://localhost:11434/v1",
            "http://LOCALHOST/",
            "http://[::1]:9000/v1",
            "http://user:pw@127.0.0.1/x",
        ] {
            assert_eq!(check_http_url(ok), Ok(()), "{ok}");
        }
        let plain = |host: &str| Err(UrlProblem::PlainHttp(host.to_string()));
        assert_eq!(
            check_http_url("http://api.example.com/v1"),
            plain("api.example.com")
        );
        assert_eq!(check_http_url("http://128.0.0.1"), plain("128.0.0.1"));
        assert_eq!(
            check_http_url("http://localhost.evil.com"),
            plain("localhost.evil.com")
        );
        assert_eq!(check_http_url("http://[::2]/"), plain("[::2]"));
        assert_eq!(
            check_http_url("http://127.0.0.1@evil.com/"),
            plain("evil.com")
        );
        assert_eq!(check_http_url("ftp://x"), Err(UrlProblem::Scheme));
        assert_eq!(check_http_url("https:///v1"), Err(UrlProblem::NoHost));
    }

    #[test]
    fn env_names() {
        assert!(is_env_name("OPENAI_API_KEY"));
        assert!(is_env_name("_X1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("MY-KEY"));
        assert!(!is_env_name(""));
    }
}
