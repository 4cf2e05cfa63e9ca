//! LiteLLM's price map (`model_prices_and_context_window.json`) as a source of shutdown dates.
//!
//! A flat object keyed by model name. `deprecation_date` is documented as "the date when the
//! model becomes deprecated" but filled with shutdown dates in practice, so it is read as the
//! retirement. Keys and `successor_model` may carry LiteLLM's route prefix (`gemini/…`, `azure/…`,
//! `vertex_ai/…`, `bedrock/…`, `together_ai/…`); it is stripped when it names the entry's own
//! `litellm_provider`, leaving the ID the provider's API uses. Only entries with a date become
//! facts; they keep the per-token list price. LiteLLM *removes* retired models, so absence from the
//! map is also a signal, but not one a parser of a single document can see.

use serde_json::Value;

use crate::lifecycle::feeds::{FeedError, FeedFormat, shape, text};
use crate::lifecycle::{Fact, Origin, TokenPrice, canonical_provider, dates};

pub(super) fn parse(value: &Value) -> Result<Vec<Fact>, FeedError> {
    let map = value.as_object().ok_or_else(|| {
        shape(
            FeedFormat::LiteLlm,
            "expected an object keyed by model name",
        )
    })?;
    Ok(map
        .iter()
        .filter(|(key, _)| key.as_str() != "sample_spec")
        .filter_map(|(key, entry)| fact(key, entry))
        .collect())
}

fn fact(key: &str, entry: &Value) -> Option<Fact> {
    let retirement = dates::iso(text(entry, "deprecation_date")?)?;
    let route = text(entry, "litellm_provider").or_else(|| key.split_once('/').map(|(p, _)| p))?;
    let provider = canonical_provider(route);
    let model = strip_route(key, &provider);
    if model.is_empty() || model.contains(char::is_whitespace) {
        return None;
    }
    let source = text(entry, "deprecation_source").map_or_else(
        || "LiteLLM price map".to_owned(),
        |url| format!("LiteLLM price map, citing {url}"),
    );
    Some(Fact {
        id: None,
        origin: Origin::Feed,
        models: vec![model.to_owned()],
        announced: None,
        retirement,
        replacement: text(entry, "successor_model")
            .map(|s| vec![strip_route(s, &provider).to_owned()])
            .unwrap_or_default(),
        source,
        captured: None,
        supersedes: Vec::new(),
        note: None,
        price: price(entry),
        primary: None,
        provider,
    })
}

/// `gemini/gemini-2.5-pro` → `gemini-2.5-pro` when the entry's provider is gemini;
/// `together_ai/meta-llama/X` → `meta-llama/X`; an unrelated first segment stays.
fn strip_route<'a>(key: &'a str, provider: &str) -> &'a str {
    match key.split_once('/') {
        Some((route, rest)) if canonical_provider(route) == provider => rest,
        _ => key,
    }
}

fn price(entry: &Value) -> Option<TokenPrice> {
    let per_token = |key: &str| {
        entry
            .get(key)
            .and_then(Value::as_f64)
            .filter(|p| p.is_finite())
    };
    let price = TokenPrice {
        input: per_token("input_cost_per_token"),
        output: per_token("output_cost_per_token"),
    };
    (price.input.is_some() || price.output.is_some()).then_some(price)
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use crate::lifecycle::feeds::{FeedFormat, parse_feed};
    use crate::lifecycle::{Retirement, TokenPrice, fixture};

    fn on(y: i32, m: u32, d: u32) -> Retirement {
        Retirement::On(NaiveDate::from_ymd_opt(y, m, d).unwrap())
    }

    #[test]
    fn the_real_sample() {
        let sample = fixture("deprecation-sources/litellm-model-prices-sample.json");
        let facts = parse_feed(&sample, None).unwrap();
        let mut rows: Vec<_> = facts
            .iter()
            .map(|f| {
                (
                    f.provider.as_str(),
                    f.models[0].as_str(),
                    f.retirement,
                    f.replacement.first().map(String::as_str),
                )
            })
            .collect();
        rows.sort_by_key(|row| (row.0, row.1));
        assert_eq!(
            rows,
            [
                (
                    "anthropic",
                    "claude-sonnet-4-5-20250929",
                    on(2026, 11, 30),
                    Some("claude-sonnet-5-5")
                ),
                (
                    "azure",
                    "gpt-4o-2024-05-13",
                    on(2027, 1, 14),
                    Some("gpt-5.1")
                ),
                (
                    "bedrock",
                    "us.anthropic.claude-sonnet-4-20250514-v1:0",
                    on(2026, 10, 14),
                    Some("us.anthropic.claude-sonnet-5")
                ),
                ("deepseek", "deepseek-reasoner", on(2026, 7, 24), None),
                (
                    "gemini",
                    "gemini-2.5-pro",
                    on(2026, 12, 1),
                    Some("gemini-3.8-flash")
                ),
                ("mistral", "mistral-large-2512", on(2027, 4, 30), None),
                (
                    "openai",
                    "gpt-3.5-turbo",
                    on(2026, 10, 23),
                    Some("gpt-5.6-terra")
                ),
                (
                    "openai",
                    "gpt-4o-2024-05-13",
                    on(2026, 10, 23),
                    Some("gpt-5.6-sol")
                ),
                ("openai", "o3-mini", on(2026, 10, 23), Some("gpt-5.6-sol")),
                (
                    "together",
                    "meta-llama/Llama-3.3-70B-Instruct-Turbo",
                    on(2026, 10, 22),
                    Some("meta-models/Muse-Glimmer-30B")
                ),
                (
                    "vertex",
                    "gemini-2.5-flash",
                    on(2026, 10, 20),
                    Some("gemini-3.8-flash")
                ),
            ]
        );
        let by_model = |model: &str| facts.iter().find(|f| f.models[0] == model).unwrap();
        let reasoner = by_model("deepseek-reasoner");
        assert_eq!(
            reasoner.source,
            "LiteLLM price map, citing https://api-docs.deepseek.com/updates"
        );
        assert_eq!(
            reasoner.price,
            Some(TokenPrice {
                input: Some(2.8e-7),
                output: Some(4.2e-7)
            })
        );
        assert_eq!(by_model("mistral-large-2512").source, "LiteLLM price map");
    }

    #[test]
    fn entries_without_a_readable_date_are_skipped() {
        let doc = r#"{
            "a": {"litellm_provider": "openai", "deprecation_date": "someday"},
            "b": {"litellm_provider": "openai"},
            "c": "not an object",
            "claude-sonnet-latest": {"alias_of": "claude-sonnet-5-5"},
            "groq/groq/compound": {"litellm_provider": "groq", "deprecation_date": "2026-01-01",
                                   "input_cost_per_token": "free"},
            "gemini/x": {"deprecation_date": "2026-02-02"}
        }"#;
        let facts = parse_feed(doc.as_bytes(), Some(FeedFormat::LiteLlm)).unwrap();
        let mut ids: Vec<_> = facts
            .iter()
            .map(|f| (f.provider.as_str(), f.models[0].as_str(), f.price))
            .collect();
        ids.sort_by_key(|id| (id.0, id.1));
        assert_eq!(
            ids,
            [("gemini", "x", None), ("groq", "groq/compound", None)]
        );
    }
}
