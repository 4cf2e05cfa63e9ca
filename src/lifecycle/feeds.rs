//! Deprecation feeds: bytes someone else publishes, turned into [`Fact`]s.
//!
//! `deprecation_feeds` in pins.toml may name any of these; the caller fetches the bytes and this
//! module only reads them, so every format is tested on real samples without a network. A
//! document that cannot be read is a [`FeedError`]; a single unreadable entry inside a readable
//! feed (a date that does not parse, a display name where an API ID should be) is skipped, so one
//! typo in LiteLLM's 4,878 keys does not cost the other 924 dates.

mod anthropic_sdk;
mod deprecations_info;
mod genai_prices;
mod litellm;

use std::fmt;

use serde_json::Value;

use crate::lifecycle::{Fact, Origin, table};

/// The feed formats modelpin reads. models.dev is not here: its per-model files do not name the
/// model they describe (their path does), so one file alone is no feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeedFormat {
    /// modelpin's own TOML (`[[fact]]` rows, the schema of `builtin.toml`).
    Modelpin,
    /// deprecations.info `v1/deprecations.json` (an array of records), its JSON Feed
    /// `v1/feed.json` (`items[]._deprecation`), or an object holding the records under
    /// `deprecations` or `data`.
    DeprecationsInfo,
    /// LiteLLM `model_prices_and_context_window.json`.
    LiteLlm,
    /// The Anthropic Python SDK's `DEPRECATED_MODELS` table as JSON (`{"models": {id: date}}`).
    AnthropicSdk,
    /// pydantic/genai-prices `data.json`: `deprecated` / `removed` flags, no dates.
    GenAiPrices,
}

impl FeedFormat {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FeedFormat::Modelpin => "modelpin",
            FeedFormat::DeprecationsInfo => "deprecations.info",
            FeedFormat::LiteLlm => "litellm",
            FeedFormat::AnthropicSdk => "anthropic-sdk",
            FeedFormat::GenAiPrices => "genai-prices",
        }
    }
}

impl fmt::Display for FeedFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A feed modelpin could not read at all.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error("the feed is not UTF-8 text")]
    NotText,
    #[error("the feed is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The parser's message and where, never its snippet: a feed path the config names may be
    /// any file, and its lines are not ours to print.
    #[error("the feed is not valid TOML: {0}")]
    Toml(String),
    #[error("unrecognised feed format: {0}")]
    UnknownFormat(String),
    #[error("not a {format} feed: {reason}")]
    Shape { format: FeedFormat, reason: String },
    #[error("fact #{} {}: {reason}", index + 1, id.as_deref().map(|i| format!("(`{i}`)")).unwrap_or_default())]
    InvalidFact {
        /// Zero-based row number.
        index: usize,
        id: Option<String>,
        reason: String,
    },
}

impl From<toml::de::Error> for FeedError {
    fn from(e: toml::de::Error) -> FeedError {
        let at = e.span().map(|s| format!(" (at byte {})", s.start));
        FeedError::Toml(format!("{}{}", e.message().trim(), at.unwrap_or_default()))
    }
}

/// Reads one feed document; `format: None` recognises it from its shape.
pub fn parse_feed(bytes: &[u8], format: Option<FeedFormat>) -> Result<Vec<Fact>, FeedError> {
    let text = std::str::from_utf8(bytes).map_err(|_| FeedError::NotText)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let format = match format {
        Some(format) => format,
        None => detect(text)?,
    };
    let json = || serde_json::from_str::<Value>(text);
    match format {
        FeedFormat::Modelpin => table::parse(text, Origin::Feed),
        FeedFormat::DeprecationsInfo => deprecations_info::parse(&json()?),
        FeedFormat::LiteLlm => litellm::parse(&json()?),
        FeedFormat::AnthropicSdk => anthropic_sdk::parse(&json()?),
        FeedFormat::GenAiPrices => genai_prices::parse(&json()?),
    }
}

/// Recognises a feed by its shape.
pub fn detect(text: &str) -> Result<FeedFormat, FeedError> {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => detect_json(&value),
        Err(json) if looks_like_json(text) => Err(FeedError::Json(json)),
        Err(_) => {
            let table: toml::Table = toml::from_str(text)?;
            if table.contains_key("fact") {
                Ok(FeedFormat::Modelpin)
            } else {
                Err(FeedError::UnknownFormat(
                    "TOML without `[[fact]]` rows (a models.dev model file does not name its \
                     model, so it is not a feed)"
                        .to_owned(),
                ))
            }
        }
    }
}

fn looks_like_json(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with('{') || (text.starts_with('[') && !text.starts_with("[["))
}

fn detect_json(value: &Value) -> Result<FeedFormat, FeedError> {
    let unknown = |what: &str| Err(FeedError::UnknownFormat(what.to_owned()));
    match value {
        Value::Array(items) => match items.first() {
            None => Ok(FeedFormat::DeprecationsInfo),
            Some(first) if first.get("models").is_some_and(Value::is_array) => {
                Ok(FeedFormat::GenAiPrices)
            }
            Some(first) if first.get("model_id").or(first.get("model")).is_some() => {
                Ok(FeedFormat::DeprecationsInfo)
            }
            Some(_) => unknown("a JSON array of unrecognised records"),
        },
        Value::Object(map) => {
            let array = |key: &str| map.get(key).is_some_and(Value::is_array);
            if array("items") || array("deprecations") || array("data") {
                Ok(FeedFormat::DeprecationsInfo)
            } else if map.get("models").is_some_and(Value::is_object) {
                Ok(FeedFormat::AnthropicSdk)
            } else if map.contains_key("sample_spec")
                || map.values().any(|v| v.get("litellm_provider").is_some())
            {
                Ok(FeedFormat::LiteLlm)
            } else {
                unknown("a JSON object with none of the known keys")
            }
        }
        _ => unknown("a JSON scalar"),
    }
}

/// A string field, trimmed; `None` when absent, not a string, or blank.
fn text<'a>(entry: &'a Value, key: &str) -> Option<&'a str> {
    entry
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A string or an array of strings; strings may hold comma-separated lists.
fn strings(value: Option<&Value>) -> Vec<String> {
    let items: Vec<&str> = match value {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    items
        .into_iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// An API model ID, not a display name: no whitespace, not blank.
fn model_id(raw: &str) -> Option<String> {
    let id = raw.trim();
    (!id.is_empty() && !id.contains(char::is_whitespace)).then(|| id.to_owned())
}

fn shape(format: FeedFormat, reason: &str) -> FeedError {
    FeedError::Shape {
        format,
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{FeedError, FeedFormat, detect, parse_feed};

    #[test]
    fn formats_are_recognised_by_shape() {
        let table = [
            ("[]", FeedFormat::DeprecationsInfo),
            (
                r#"[{"provider": "OpenAI", "model_id": "x"}]"#,
                FeedFormat::DeprecationsInfo,
            ),
            (
                r#"[{"provider": "OpenAI", "model": "x"}]"#,
                FeedFormat::DeprecationsInfo,
            ),
            (r#"{"deprecations": []}"#, FeedFormat::DeprecationsInfo),
            (
                r#"{"version": "https://jsonfeed.org/version/1.1", "items": []}"#,
                FeedFormat::DeprecationsInfo,
            ),
            (r#"{"sample_spec": {}}"#, FeedFormat::LiteLlm),
            (
                r#"{"gpt-4o": {"litellm_provider": "openai"}}"#,
                FeedFormat::LiteLlm,
            ),
            (
                r#"{"models": {"claude-2.0": "July 21st, 2025"}}"#,
                FeedFormat::AnthropicSdk,
            ),
            (
                r#"[{"id": "openai", "models": []}]"#,
                FeedFormat::GenAiPrices,
            ),
            ("[[fact]]\nprovider = \"x\"\n", FeedFormat::Modelpin),
            ("\n# comment\n[[fact]]\n", FeedFormat::Modelpin),
        ];
        for (text, want) in table {
            assert_eq!(detect(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn unreadable_documents_are_errors_not_panics() {
        let table: [(&[u8], &str); 9] = [
            (b"\xff\xfe\x00", "NotText"),
            (b"", "UnknownFormat"),
            (b"{", "Json"),
            (b"[1, 2", "Json"),
            (b"42", "UnknownFormat"),
            (b"{\"hello\": 1}", "UnknownFormat"),
            (b"[1, 2]", "UnknownFormat"),
            (
                b"name = \"Claude Opus 3\"\nstatus = \"deprecated\"\n",
                "UnknownFormat",
            ),
            (b"<html>nope</html>", "Toml"),
        ];
        for (bytes, want) in table {
            let got = parse_feed(bytes, None).unwrap_err();
            assert!(format!("{got:?}").starts_with(want), "{bytes:?}: {got:?}");
        }
    }

    #[test]
    fn a_forced_format_that_does_not_fit_is_a_shape_error() {
        let table = [
            (FeedFormat::LiteLlm, "[]"),
            (FeedFormat::DeprecationsInfo, "{\"x\": 1}"),
            (FeedFormat::AnthropicSdk, "[]"),
            (FeedFormat::GenAiPrices, "{}"),
        ];
        for (format, text) in table {
            let got = parse_feed(text.as_bytes(), Some(format));
            assert!(
                matches!(got, Err(FeedError::Shape { .. })),
                "{format}: {got:?}"
            );
        }
    }

    #[test]
    fn an_empty_modelpin_table_is_fine() {
        assert!(
            parse_feed(b"# nothing yet\n", Some(FeedFormat::Modelpin))
                .unwrap()
                .is_empty()
        );
    }
}
