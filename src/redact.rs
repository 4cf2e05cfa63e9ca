//! Masks configured secrets in text that comes from outside, in whatever encoding it arrives.
//!
//! A provider that echoes the key it was sent ("Incorrect API key provided: sk-…"), a client
//! error that quotes the Slack webhook URL it failed to reach, an SMTP server repeating the login:
//! each would carry a secret into reports, the store, logs and alerts. Rather than guard every
//! place such text is written, the transport, the provider adapters and the alert deliverer pass
//! everything they receive through one `Redactor` built from the config's secrets, so nothing
//! downstream ever holds them.
//!
//! A plain search is not enough: a JSON body may spell `sk-AB` as `\u0073k-AB` (or any mix of
//! escapes), a URL may percent-encode it in either case, a basic-auth header carries it in base64,
//! and a receiver that echoes a Slack URL may quote only its path. So the text is searched as it
//! came and as it reads once JSON string escapes and percent-encoding are undone (each decoded
//! byte remembers which source bytes it came from, so the mask replaces exactly the escaped
//! spelling), and every secret is searched in all its spellings: as written, the parts of a URL
//! secret that are secrets on their own (path, query, its values, user info), the stretch of
//! base64 that encodes it at each of the three alignments, and any letter case when the secret is
//! hex (case carries no meaning there).

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

use decode::{Source, each_decoding, percent_decode};

/// What a secret is replaced with. Plain ASCII with no JSON, XML or shell meaning, so a masked
/// JSON body still parses.
pub const MASK: &str = "[redacted]";

/// Shorter values are not credentials; masking them would garble ordinary text.
const MIN_SECRET_LEN: usize = 6;

/// A base64 stretch shorter than this could occur by chance in ordinary base64 text.
const MIN_BASE64_LEN: usize = 8;

/// A URL path segment at least this long is a token on its own (Slack's last segment is 24
/// characters); shorter ones are names like `services` or workspace ids.
const MIN_TOKEN_SEGMENT: usize = 16;

/// Every configured secret, in the spellings it can come back in.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Spellings matched byte for byte.
    exact: Option<AhoCorasick>,
    /// Spellings of hex secrets, matched in any ASCII letter case.
    folded: Option<AhoCorasick>,
}

impl Redactor {
    /// A redactor for `secrets`; values too short to be credentials are ignored.
    #[must_use]
    pub fn new<I, S>(secrets: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let (mut exact, mut folded) = (Vec::new(), Vec::new());
        for secret in secrets {
            let secret = secret.as_ref().trim();
            if secret.len() < MIN_SECRET_LEN {
                continue;
            }
            let into = if is_hex_like(secret) {
                &mut folded
            } else {
                &mut exact
            };
            into.extend(spellings(secret));
        }
        Redactor {
            exact: automaton(exact, false),
            folded: automaton(folded, true),
        }
    }

    /// `text` with every secret replaced by `MASK`; borrowed when there was nothing to mask.
    #[must_use]
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.spans(text.as_bytes());
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let masked = replace(text.as_bytes(), &spans);
        // Spans start and end on whole escapes or whole UTF-8 sequences of valid needles, so
        // valid UTF-8 stays valid; the lossy path only guards against a surprise.
        Cow::Owned(
            String::from_utf8(masked)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        )
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
        let spans = self.spans(&bytes);
        if spans.is_empty() {
            return bytes;
        }
        replace(&bytes, &spans)
    }

    /// Whether any secret is configured at all (nothing to search for otherwise).
    fn is_empty(&self) -> bool {
        self.exact.is_none() && self.folded.is_none()
    }

    /// Source byte ranges to mask, sorted, overlaps merged (adjacent ones kept apart).
    fn spans(&self, source: &[u8]) -> Vec<(usize, usize)> {
        if self.is_empty() || source.is_empty() {
            return Vec::new();
        }
        let mut spans = Vec::new();
        self.find(source, |s, e| (s, e), &mut spans);
        each_decoding(source, &mut |stream| {
            self.find(
                &stream.bytes,
                |s, e| (stream.start[s] as usize, stream.end[e - 1] as usize),
                &mut spans,
            );
        });
        merge(spans)
    }

    fn find(
        &self,
        haystack: &[u8],
        to_source: impl Fn(usize, usize) -> (usize, usize),
        spans: &mut Vec<(usize, usize)>,
    ) {
        for automaton in self.exact.iter().chain(&self.folded) {
            for m in automaton.find_iter(haystack) {
                spans.push(to_source(m.start(), m.end()));
            }
        }
    }
}

fn automaton(mut needles: Vec<String>, fold_case: bool) -> Option<AhoCorasick> {
    needles.sort();
    needles.dedup();
    if needles.is_empty() {
        return None;
    }
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        .ascii_case_insensitive(fold_case)
        .build(&needles)
        .ok()
}

/// Hex digits (and the dashes of a UUID): a value whose letter case means nothing, so a
/// provider may echo it upper- or lower-cased.
fn is_hex_like(secret: &str) -> bool {
    secret.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
        && secret.bytes().filter(u8::is_ascii_hexdigit).count() >= MIN_SECRET_LEN
}

/// The secret as written, as the HTTP client prints it after normalising, its secret parts
/// when it is a URL, and the base64 stretches that encode it. Escaped spellings (JSON, percent)
/// need no entry: the text is searched decoded as well.
fn spellings(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_owned()];
    if let Some(decoded) = percent_decoded(secret) {
        out.push(decoded);
    }
    if let Ok(url) = url::Url::parse(secret)
        && url.has_host()
    {
        out.push(url.to_string());
        out.extend(url_parts(&url));
    }
    let base: Vec<String> = out.clone();
    for text in &base {
        out.extend(base64_stretches(text.as_bytes()));
    }
    out.retain(|s| s.len() >= MIN_SECRET_LEN);
    out
}

/// The parts of a URL secret that give the secret away on their own: a receiver that echoes
/// the request line quotes the path and query without the host.
fn url_parts(url: &url::Url) -> Vec<String> {
    let mut parts = Vec::new();
    let path = url.path();
    if path.len() > 1 {
        parts.push(path.to_owned());
        parts.push(path.trim_start_matches('/').to_owned());
        parts.extend(
            path.split('/')
                .filter(|s| s.len() >= MIN_TOKEN_SEGMENT)
                .map(str::to_owned),
        );
    }
    if let Some(query) = url.query().filter(|q| !q.is_empty()) {
        parts.push(query.to_owned());
        for pair in query.split('&') {
            parts.push(pair.to_owned());
            if let Some((_, value)) = pair.split_once('=') {
                parts.push(value.to_owned());
            }
        }
    }
    if !url.username().is_empty() {
        parts.push(url.username().to_owned());
    }
    if let Some(password) = url.password() {
        parts.push(password.to_owned());
        parts.push(format!("{}:{password}", url.username()));
    }
    let decoded: Vec<String> = parts.iter().filter_map(|p| percent_decoded(p)).collect();
    parts.extend(decoded);
    parts
}

/// The base64 characters that encode `secret` wherever it sits in a longer encoded text
/// (`user:secret` in a basic-auth header, `\0user\0secret` in SMTP AUTH PLAIN): for each of the
/// three byte alignments, the characters whose six bits all come from the secret, in the
/// standard and the URL-safe alphabet.
fn base64_stretches(secret: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for offset in 0..3usize {
        let mut bytes = vec![0u8; offset];
        bytes.extend_from_slice(secret);
        let first = (8 * offset).div_ceil(6);
        let last = (8 * (offset + secret.len())) / 6;
        if last <= first || last - first < MIN_BASE64_LEN {
            continue;
        }
        for encoded in [
            STANDARD_NO_PAD.encode(&bytes),
            URL_SAFE_NO_PAD.encode(&bytes),
        ] {
            out.push(encoded[first..last].to_owned());
        }
    }
    out
}

fn percent_decoded(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    let stream = percent_decode(&Source(text.as_bytes()));
    String::from_utf8(stream.bytes).ok().filter(|d| d != text)
}

/// Sorted, with overlapping ranges joined; ranges that only touch stay apart, so two secrets
/// written back to back read as two masks.
fn merge(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    spans.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match out.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

fn replace(source: &[u8], spans: &[(usize, usize)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(source.len());
    let mut at = 0;
    for &(start, end) in spans {
        out.extend_from_slice(&source[at..start]);
        out.extend_from_slice(MASK.as_bytes());
        at = end;
    }
    out.extend_from_slice(&source[at..]);
    out
}

mod decode;
#[cfg(test)]
mod sinks;
#[cfg(test)]
mod tests;
