//! Masks configured secrets in text that comes from outside.
//!
//! A provider that echoes the key it was sent ("Incorrect API key provided: sk-…"), a client
//! error that quotes the Slack webhook URL it failed to reach, an SMTP server repeating the login:
//! each would carry a secret into reports, the store, logs and alerts. Rather than guard every
//! place such text is written, the transport and the alert deliverer pass everything they receive
//! through one `Redactor` built from the config's secrets, so nothing downstream ever holds them.

use std::borrow::Cow;

use crate::config::{AlertKind, Config};

/// What a secret is replaced with. Plain ASCII with no JSON, XML or shell meaning, so a masked
/// JSON body still parses.
pub const MASK: &str = "[redacted]";

/// Shorter values are not credentials; masking them would garble ordinary text.
const MIN_SECRET_LEN: usize = 6;

/// Every configured secret, in the spellings it can come back in.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is masked whole.
    needles: Vec<String>,
}

impl Redactor {
    /// A redactor for `secrets`; values too short to be credentials are ignored.
    #[must_use]
    pub fn new<I, S>(secrets: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut needles: Vec<String> = secrets
            .into_iter()
            .flat_map(|s| spellings(s.as_ref()))
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        needles.dedup();
        Redactor { needles }
    }

    /// The provider keys of `config` and the alert secrets its channels name, read through `env`.
    #[must_use]
    pub fn from_config(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Redactor {
        let keys = config
            .providers
            .iter()
            .filter_map(|p| p.endpoint.api_key.as_ref())
            .map(|k| k.expose().to_owned());
        let alert_vars = config.alerts.iter().flat_map(|c| secret_vars(&c.kind));
        let token_var = config
            .settings
            .api_token_env
            .iter()
            .chain(&config.traffic.token_env)
            .cloned();
        let values = alert_vars.chain(token_var).filter_map(|var| env(&var));
        Redactor::new(keys.chain(values))
    }

    /// `text` with every secret replaced by `MASK`; borrowed when there was nothing to mask.
    #[must_use]
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.needles.iter().any(|n| text.contains(n.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_owned();
        for needle in &self.needles {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), MASK);
            }
        }
        Cow::Owned(out)
    }

    /// `scrub` for an owned string.
    #[must_use]
    pub fn scrub_owned(&self, text: String) -> String {
        match self.scrub(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(masked) => masked,
        }
    }

    /// `bytes` with every secret replaced; bytes that are not UTF-8 are searched as they are.
    #[must_use]
    pub fn scrub_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let mut out = bytes;
        for needle in &self.needles {
            let needle = needle.as_bytes();
            if find(&out, needle).is_some() {
                out = replace_bytes(&out, needle, MASK.as_bytes());
            }
        }
        out
    }
}

/// The names of the variables that hold a channel's secrets.
fn secret_vars(kind: &AlertKind) -> Vec<String> {
    match kind {
        AlertKind::Email {
            username_env,
            password_env,
            ..
        } => username_env.iter().chain(password_env).cloned().collect(),
        AlertKind::Webhook { secret_env, .. } => secret_env.iter().cloned().collect(),
        AlertKind::Slack { url_env, .. } => vec![url_env.clone()],
        AlertKind::Alertmanager { .. } => Vec::new(),
    }
}

/// The secret as written, as a JSON string escapes it, and (for URLs) as the HTTP client prints
/// it after normalising.
fn spellings(secret: &str) -> Vec<String> {
    let secret = secret.trim();
    let mut out = vec![secret.to_owned()];
    if let Ok(json) = serde_json::to_string(secret) {
        out.push(json[1..json.len() - 1].to_owned());
    }
    if let Ok(url) = reqwest::Url::parse(secret) {
        out.push(url.to_string());
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = find(rest, needle) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(with);
        rest = &rest[at + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::{MASK, Redactor};

    #[test]
    fn masks_each_spelling_of_each_secret() {
        let r = Redactor::new(["sk-marker-123456", "https://hooks.example/T0/B0/x\"y"]);
        for (input, want) in [
            ("key sk-marker-123456 echoed", "key [redacted] echoed"),
            (
                "Bearer sk-marker-123456sk-marker-123456",
                "Bearer [redacted][redacted]",
            ),
            ("url https://hooks.example/T0/B0/x\"y", "url [redacted]"),
            (
                r#"{"u":"https://hooks.example/T0/B0/x\"y"}"#,
                r#"{"u":"[redacted]"}"#,
            ),
            ("nothing here", "nothing here"),
        ] {
            assert_eq!(r.scrub(input), want, "{input}");
            assert_eq!(
                r.scrub_bytes(input.as_bytes().to_vec()),
                want.as_bytes(),
                "{input}"
            );
        }
    }

    #[test]
    fn short_values_are_not_secrets() {
        let r = Redactor::new(["abc", ""]);
        assert_eq!(r.scrub("abc abc"), "abc abc");
    }

    #[test]
    fn longest_secret_wins() {
        let r = Redactor::new(["secret-1", "secret-1-longer"]);
        assert_eq!(r.scrub("secret-1-longer"), MASK);
    }

    #[test]
    fn invalid_utf8_is_searched_as_bytes() {
        let r = Redactor::new(["sk-marker-123456"]);
        let mut body = vec![0xff, 0xfe];
        body.extend_from_slice(b"sk-marker-123456");
        assert_eq!(r.scrub_bytes(body), b"\xff\xfe[redacted]");
    }
}
