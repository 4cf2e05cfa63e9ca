//! One `probes/*.toml` file: a fixed prompt whose answers are compared with the baseline.
//!
//! Defaults, for keys a probe file leaves out:
//! - `max_tokens = 16`: enough for the short, categorical answers probes are built around, and
//!   cheap at `samples` calls per audit;
//! - `temperature = 1.0`: the providers' own default, so the audit samples the distribution users
//!   actually get (and temperature 0 is not deterministic on hosted models anyway);
//! - `compare = "choice"`;
//! - `normalize = []`: answers are compared exactly as returned;
//! - no `[expect]`: no pass/fail rule, only the comparison with the baseline.

use sha2::{Digest, Sha256};
use toml::Spanned;

use super::check::Check;
use super::raw::{RawExpect, RawProbe, Str};
use super::source::Source;
use super::{Compare, Expect, Normalize, Probe};

pub(crate) const DEFAULT_MAX_TOKENS: u32 = 16;
pub(crate) const DEFAULT_TEMPERATURE: f64 = 1.0;
/// The range every supported provider accepts (Anthropic's is narrower: 0 to 1).
const MAX_TEMPERATURE: f64 = 2.0;

/// Validates a decoded probe file.
pub(crate) fn probe(check: &mut Check, src: &Source, raw: RawProbe) -> Option<Probe> {
    let id = check.identifier(&raw.id, "id", "probe id");
    let prompt = check.non_empty(&raw.prompt, "prompt");
    let max_tokens = match &raw.max_tokens {
        Some(m) => check.at_least_one(m, "max_tokens"),
        None => Some(DEFAULT_MAX_TOKENS),
    };
    let temperature = match &raw.temperature {
        Some(t) => temperature(check, t),
        None => Some(DEFAULT_TEMPERATURE),
    };
    let compare = match &raw.compare {
        Some(c) => check.choice(c, "comparison", &["choice", "text"]).map(|c| {
            if c == "text" {
                Compare::Text
            } else {
                Compare::Choice
            }
        }),
        None => Some(Compare::Choice),
    };
    let normalize = normalize(check, raw.normalize.as_deref().unwrap_or_default());
    let expect = match &raw.expect {
        Some(e) => expect(check, e).map(Some),
        None => Some(None),
    };
    let system = raw.system.map(Spanned::into_inner);
    let (prompt, max_tokens, temperature) = (prompt?, max_tokens?, temperature?);
    Some(Probe {
        id: id?,
        source: src.path.clone(),
        digest: probe_digest(system.as_deref(), &prompt, max_tokens, temperature),
        system,
        prompt,
        max_tokens,
        temperature,
        compare: compare?,
        expect: expect?,
        normalize: normalize?,
    })
}

fn temperature(check: &mut Check, value: &Spanned<f64>) -> Option<f64> {
    let t = *value.get_ref();
    if (0.0..=MAX_TEMPERATURE).contains(&t) {
        return Some(t);
    }
    check.error(
        value.span(),
        format!("`temperature` must be from 0 to {MAX_TEMPERATURE}, found {t:?}"),
    );
    None
}

fn normalize(check: &mut Check, raw: &[Str]) -> Option<Vec<Normalize>> {
    let steps: Vec<Option<Normalize>> = raw
        .iter()
        .map(|step| {
            check
                .choice(step, "normalization", &["trim", "lower"])
                .map(|s| {
                    if s == "trim" {
                        Normalize::Trim
                    } else {
                        Normalize::Lower
                    }
                })
        })
        .collect();
    steps.into_iter().collect()
}

fn expect(check: &mut Check, raw: &Spanned<RawExpect>) -> Option<Expect> {
    let r = raw.get_ref();
    let present: Vec<(&str, std::ops::Range<usize>)> = [
        ("equals", r.equals.as_ref().map(Spanned::span)),
        ("contains", r.contains.as_ref().map(Spanned::span)),
        ("regex", r.regex.as_ref().map(Spanned::span)),
        ("one_of", r.one_of.as_ref().map(Spanned::span)),
        ("json", r.json.as_ref().map(Spanned::span)),
    ]
    .into_iter()
    .filter_map(|(k, span)| span.map(|s| (k, s)))
    .collect();
    match present.as_slice() {
        [] => {
            check.error(raw.span(), "`[expect]` needs a rule").help(
                "add exactly one of `equals`, `contains`, `regex`, `one_of` or `json = true`",
            );
            None
        }
        [_] => rule(check, r),
        [(first, _), (second, span), ..] => {
            check
                .error(
                    span.clone(),
                    format!("`[expect]` takes one rule, found `{first}` and `{second}`"),
                )
                .help("keep one; use `one_of` to accept several answers");
            None
        }
    }
}

/// The single rule present in `r`.
fn rule(check: &mut Check, r: &RawExpect) -> Option<Expect> {
    if let Some(v) = &r.equals {
        return Some(Expect::Equals(v.get_ref().clone()));
    }
    if let Some(v) = &r.contains {
        return check.non_empty(v, "contains").map(Expect::Contains);
    }
    if let Some(v) = &r.regex {
        // Compiled here with the engine the judge uses, so a pattern that can never match is an
        // error at load, with a caret, not a probe that silently never passes.
        let pattern = check.non_empty(v, "regex")?;
        if let Err(e) = regex::Regex::new(&pattern) {
            let why = e.to_string();
            let why = why.lines().last().unwrap_or("invalid pattern").trim();
            check
                .error(v.span(), format!("`regex` is not a valid pattern: {why}"))
                .help("the syntax is Rust's `regex` crate (no look-around, no backreferences); `(?i)` ignores case");
            return None;
        }
        return Some(Expect::Regex(pattern));
    }
    if let Some(v) = &r.one_of {
        if v.get_ref().is_empty() {
            check.error(v.span(), "`one_of` needs at least one answer");
            return None;
        }
        return Some(Expect::OneOf(v.get_ref().clone()));
    }
    match &r.json {
        Some(v) if *v.get_ref() => Some(Expect::Json),
        Some(v) => {
            check
                .error(v.span(), "`json` can only be `true`")
                .help("leave `[expect]` out for no pass/fail rule");
            None
        }
        None => None,
    }
}

/// `sha256:<hex>` over what goes on the wire, as a JSON array: strings are escaped and floats
/// printed shortest-round-trip, so the encoding is unambiguous and stable.
pub(crate) fn probe_digest(
    system: Option<&str>,
    prompt: &str,
    max_tokens: u32,
    temperature: f64,
) -> String {
    let canonical =
        serde_json::json!(["modelpin.probe/v1", system, prompt, max_tokens, temperature]);
    sha256(canonical.to_string().as_bytes())
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::probe_digest;

    #[test]
    fn digest_is_stable_and_covers_what_is_sent() {
        let d = probe_digest(None, "What is 17 * 23?", 8, 1.0);
        assert_eq!(d, probe_digest(None, "What is 17 * 23?", 8, 1.0));
        assert!(d.starts_with("sha256:") && d.len() == 7 + 64, "{d}");
        assert_ne!(d, probe_digest(Some(""), "What is 17 * 23?", 8, 1.0));
        assert_ne!(d, probe_digest(None, "What is 17 * 23? ", 8, 1.0));
        assert_ne!(d, probe_digest(None, "What is 17 * 23?", 9, 1.0));
        assert_ne!(d, probe_digest(None, "What is 17 * 23?", 8, 0.7));
    }

    #[test]
    fn digest_is_pinned() {
        // A change here invalidates every baseline users have recorded: bump the version tag
        // inside the canonical encoding only on purpose.
        assert_eq!(
            probe_digest(Some("Be terse."), "What is 17 * 23?", 8, 1.0),
            super::sha256(br#"["modelpin.probe/v1","Be terse.","What is 17 * 23?",8,1.0]"#)
        );
    }
}
