//! pydantic/genai-prices `data.json`: which models a price list marks deprecated or removed.
//!
//! The flags carry no dates and no replacement, so each becomes a dateless fact: `deprecated`
//! ("deprecated by the provider but still functional") is [`Retirement::Announced`], `removed` is
//! [`Retirement::Gone`]. That is still worth having: it names models no dated source covers
//! (`mistral-tiny`), and a dateless fact never overrides a dated one. IDs are the model's `id`
//! plus every `equals` clause of its `match`; `starts_with` / `contains` / `regex` clauses describe
//! families that cannot be listed and are ignored rather than guessed. The source YAML files
//! (`prices/providers/*.yml`) are not read: modelpin carries no YAML parser, and the published
//! JSON holds the same flags.

use serde_json::Value;

use crate::lifecycle::feeds::{FeedError, FeedFormat, model_id, shape, text};
use crate::lifecycle::{Fact, Origin, Retirement, canonical_provider};

pub(super) fn parse(value: &Value) -> Result<Vec<Fact>, FeedError> {
    let providers = value
        .as_array()
        .ok_or_else(|| shape(FeedFormat::GenAiPrices, "expected an array of providers"))?;
    Ok(providers.iter().flat_map(provider_facts).collect())
}

fn provider_facts(provider: &Value) -> Vec<Fact> {
    let (Some(name), Some(models)) = (
        text(provider, "id"),
        provider.get("models").and_then(Value::as_array),
    ) else {
        return Vec::new();
    };
    let name = canonical_provider(name);
    models
        .iter()
        .filter_map(|model| fact(&name, model))
        .collect()
}

fn fact(provider: &str, model: &Value) -> Option<Fact> {
    let flag = |key: &str| model.get(key).and_then(Value::as_bool) == Some(true);
    let retirement = if flag("removed") {
        Retirement::Gone
    } else if flag("deprecated") {
        Retirement::Announced
    } else {
        return None;
    };
    let mut models = vec![model_id(text(model, "id")?)?];
    for id in equals(model.get("match")) {
        if !models.contains(&id) {
            models.push(id);
        }
    }
    Some(Fact {
        id: None,
        origin: Origin::Feed,
        provider: provider.to_owned(),
        models,
        announced: None,
        retirement,
        replacement: Vec::new(),
        source: "pydantic/genai-prices data.json (flag only, no date)".to_owned(),
        captured: None,
        supersedes: Vec::new(),
        note: text(model, "description").map(str::to_owned),
        price: None,
        primary: None,
    })
}

/// Every `equals` value in a match clause, through `or` / `and` lists.
fn equals(clause: Option<&Value>) -> Vec<String> {
    let Some(clause) = clause else {
        return Vec::new();
    };
    let mut found: Vec<String> = text(clause, "equals")
        .and_then(model_id)
        .into_iter()
        .collect();
    for key in ["or", "and"] {
        for inner in clause
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            found.extend(equals(Some(inner)));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use crate::lifecycle::feeds::{FeedFormat, parse_feed};
    use crate::lifecycle::{Retirement, fixture};

    #[test]
    fn the_real_sample_flags_two_models() {
        let bytes = fixture("deprecation-sources/genai-prices-data-v2-sample.json");
        let facts = parse_feed(&bytes, None).unwrap();
        let rows: Vec<_> = facts
            .iter()
            .map(|f| (f.provider.as_str(), f.models.clone(), f.retirement))
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "gemini",
                    vec![
                        "gemini-2.5-flash-preview".to_owned(),
                        "gemini-2.5-flash-preview-05-20:thinking".to_owned(),
                        "gemini-2.5-flash-preview:thinking".to_owned(),
                    ],
                    Retirement::Announced
                ),
                (
                    "mistral",
                    vec!["mistral-tiny".to_owned()],
                    Retirement::Announced
                ),
            ]
        );
        assert!(facts[1].note.as_deref().unwrap().contains("Ministral 8B"));
    }

    #[test]
    fn removed_models_are_gone_and_odd_entries_are_skipped() {
        let doc = r#"[{"id": "anthropic", "models": [
            {"id": "claude-instant-1", "match": {"equals": "claude-instant-1"}, "removed": true},
            {"id": "claude-x", "deprecated": "yes"},
            {"deprecated": true},
            "nonsense"]},
            {"id": "no-models"}]"#;
        let facts = parse_feed(doc.as_bytes(), Some(FeedFormat::GenAiPrices)).unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].models, ["claude-instant-1"]);
        assert_eq!(facts[0].retirement, Retirement::Gone);
    }
}
