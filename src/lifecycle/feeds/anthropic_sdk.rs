//! The Anthropic Python SDK's `DEPRECATED_MODELS` table: model ID → end-of-life date.
//!
//! Anthropic sends nothing on the wire before a model goes; this client-side table is the only
//! machine-readable list of its dates, aliases included (`claude-3-7-sonnet-latest`,
//! `claude-opus-4-0`). The dict literal is read as JSON (`{"models": {id: "November 6th, 2024"}}`,
//! as in the shared sample); dates are English long dates, ISO dates are accepted too.

use serde_json::Value;

use crate::lifecycle::feeds::{FeedError, FeedFormat, model_id, shape, text};
use crate::lifecycle::{Fact, Origin, Retirement, dates};

const DEFAULT_SOURCE: &str = "anthropics/anthropic-sdk-python DEPRECATED_MODELS";

pub(super) fn parse(value: &Value) -> Result<Vec<Fact>, FeedError> {
    let models = value
        .get("models")
        .and_then(Value::as_object)
        .ok_or_else(|| shape(FeedFormat::AnthropicSdk, "expected `models`: {id: date}"))?;
    let source = text(value, "_source").unwrap_or(DEFAULT_SOURCE);
    Ok(models
        .iter()
        .filter_map(|(id, date)| fact(id, date.as_str()?, source))
        .collect())
}

fn fact(id: &str, date: &str, source: &str) -> Option<Fact> {
    let retirement = dates::english(date)
        .map(Retirement::On)
        .or_else(|| dates::iso(date))?;
    Some(Fact {
        id: None,
        origin: Origin::Feed,
        provider: "anthropic".to_owned(),
        models: vec![model_id(id)?],
        announced: None,
        retirement,
        replacement: Vec::new(),
        source: source.to_owned(),
        captured: None,
        supersedes: Vec::new(),
        note: None,
        price: None,
        primary: None,
    })
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use crate::lifecycle::feeds::{FeedFormat, parse_feed};
    use crate::lifecycle::{Retirement, fixture};

    fn on(y: i32, m: u32, d: u32) -> Retirement {
        Retirement::On(NaiveDate::from_ymd_opt(y, m, d).unwrap())
    }

    #[test]
    fn the_real_sdk_table() {
        let bytes = fixture("deprecation-sources/anthropic-sdk-python-deprecated-models.json");
        let facts = parse_feed(&bytes, None).unwrap();
        assert_eq!(facts.len(), 18);
        let date_of = |id: &str| facts.iter().find(|f| f.models == [id]).unwrap().retirement;
        assert_eq!(date_of("claude-instant-1.1-100k"), on(2024, 11, 6));
        assert_eq!(date_of("claude-3-7-sonnet-latest"), on(2026, 2, 19));
        assert_eq!(date_of("claude-sonnet-4-0"), on(2026, 6, 15));
        assert_eq!(date_of("claude-mythos-preview"), on(2026, 6, 30));
        assert!(facts.iter().all(|f| f.provider == "anthropic"));
        assert!(
            facts[0]
                .source
                .starts_with("anthropics/anthropic-sdk-python")
        );
    }

    #[test]
    fn unreadable_dates_are_skipped() {
        let doc =
            r#"{"models": {"a": "2026-01-01", "b": "Someday", "c": 3, "d e": "May 1, 2026"}}"#;
        let facts = parse_feed(doc.as_bytes(), Some(FeedFormat::AnthropicSdk)).unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].retirement, on(2026, 1, 1));
    }
}
