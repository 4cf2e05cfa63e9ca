//! Which URLs modelpin will send keys and alerts to.
//!
//! API keys and alert payloads must not cross a network in clear text: `https://` anywhere, plain
//! `http://` only to loopback (the simulator, a local model server). The URL is read by the HTTP
//! client's own parser (`reqwest::Url`, the WHATWG rules), so the host checked is the host that
//! will be dialled: `http://evil.example\@127.0.0.1/` is a path on `evil.example` to the client,
//! and so it is here. User info (`user:password@`) is refused: credentials come from the
//! environment, and a URL with one is either a leaked secret or a disguise for the real host.

use reqwest::Url;
use url::Host;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlProblem {
    /// Not a URL at all, in the client's own words.
    Invalid(String),
    /// Not one of the schemes allowed here.
    Scheme,
    NoHost,
    /// `user[:password]@` before the host.
    UserInfo,
    /// `http://` to this non-loopback host.
    PlainHttp(String),
}

/// What is wrong, in words that never repeat the URL (for URLs that are secrets).
pub(crate) fn describe(problem: &UrlProblem) -> String {
    match problem {
        UrlProblem::Invalid(why) => format!("it is not a valid URL: {why}"),
        UrlProblem::Scheme => "it is not an `https://` URL".to_owned(),
        UrlProblem::NoHost => "it has no host".to_owned(),
        UrlProblem::UserInfo => "it contains user info (`user:password@`)".to_owned(),
        UrlProblem::PlainHttp(_) => {
            "it is plain `http://` to a host that is not loopback".to_owned()
        }
    }
}

/// Accepts `https://host...` and `http://loopback...`.
pub(crate) fn check_http_url(url: &str) -> Result<(), UrlProblem> {
    let parsed = parse(url, &["http", "https"])?;
    if parsed.scheme() == "https" {
        return Ok(());
    }
    let host = parsed.host().ok_or(UrlProblem::NoHost)?;
    if is_loopback(&host) {
        Ok(())
    } else {
        Err(UrlProblem::PlainHttp(host.to_string()))
    }
}

/// `url` parsed as the client will read it, with one of `schemes`, a host and no user info.
pub(crate) fn parse(url: &str, schemes: &[&str]) -> Result<Url, UrlProblem> {
    let Some((_, after)) = url.trim().split_once("://") else {
        return Err(UrlProblem::Scheme);
    };
    // The parser reads `https:///v1` as host `v1`; a user who wrote that meant no host.
    if after.starts_with(['/', '\\']) {
        return Err(UrlProblem::NoHost);
    }
    let parsed = match Url::parse(url.trim()) {
        Ok(parsed) => parsed,
        Err(url::ParseError::EmptyHost) => return Err(UrlProblem::NoHost),
        Err(e) => {
            let scheme = url.split("://").next().unwrap_or("").to_ascii_lowercase();
            return Err(if schemes.contains(&scheme.as_str()) {
                UrlProblem::Invalid(e.to_string())
            } else {
                UrlProblem::Scheme
            });
        }
    };
    if !schemes.contains(&parsed.scheme()) {
        return Err(UrlProblem::Scheme);
    }
    match parsed.host_str() {
        None | Some("") => return Err(UrlProblem::NoHost),
        Some(_) => {}
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlProblem::UserInfo);
    }
    Ok(parsed)
}

/// Whether the client will dial a loopback address for `host`.
pub(crate) fn is_loopback(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// The part after `scheme`, matched case-insensitively.
pub(crate) fn strip_scheme<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    let head = url.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme)
        .then(|| &url[scheme.len()..])
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
            "http://2130706433/v1",
        ] {
            assert_eq!(check_http_url(ok), Ok(()), "{ok}");
        }
        let plain = |host: &str| Err(UrlProblem::PlainHttp(host.to_string()));
        for (url, want) in [
            ("http://api.example.com/v1", plain("api.example.com")),
            ("http://128.0.0.1", plain("128.0.0.1")),
            ("http://localhost.evil.com", plain("localhost.evil.com")),
            ("http://[::2]/", plain("[::2]")),
            // The client reads `\` as `/`: the host dialled is evil.example.
            (
                "http://evil.example\\@127.0.0.1:9/v1",
                plain("evil.example"),
            ),
            ("http://127.0.0.1@evil.com/", Err(UrlProblem::UserInfo)),
            ("http://user:pw@127.0.0.1/x", Err(UrlProblem::UserInfo)),
            ("https://user@api.example.com/", Err(UrlProblem::UserInfo)),
            ("ftp://x", Err(UrlProblem::Scheme)),
            ("https:///v1", Err(UrlProblem::NoHost)),
            ("http://", Err(UrlProblem::NoHost)),
        ] {
            assert_eq!(check_http_url(url), want, "{url}");
        }
        assert!(matches!(
            check_http_url("http://[::1/v1"),
            Err(UrlProblem::Invalid(_))
        ));
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
