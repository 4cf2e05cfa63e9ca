//! deprecations.info: a daily scrape of provider deprecation pages, published as JSON.
//!
//! Read from the public feed's own shape (`deprecations/deprecations-rss`, `docs/v1/deprecations.json`:
//! an array of `{provider, model_id, model_name, announcement_date, shutdown_date,
//! replacement_models, deprecation_context, url, scraped_at}`; `docs/v1/feed.json` wraps the same
//! record as `items[]._deprecation`). The field names `model`, `deprecation_date`,
//! `retirement_date`, `replacement` and `source_url` are read as synonyms, and an object holding
//! the records under `deprecations` or `data` is accepted too. No sample of the feed is among the
//! shared fixtures; the tests use a short document in the feed's shape with values taken from it.
//!
//! Providers are display names (`OpenAI`, `Google Vertex`, `AWS Bedrock`) and become canonical
//! names. Some rows name a model by its display name (`AI21 Jamba-Instruct`) or describe a batch
//! in prose; no API ID contains whitespace, so those rows are skipped. An empty `shutdown_date`
//! means the deprecation is announced without a date.

use serde_json::Value;

use crate::lifecycle::feeds::{FeedError, FeedFormat, model_id, shape, strings, text};
use crate::lifecycle::{Fact, Origin, Retirement, canonical_provider, dates};

const FORMAT: FeedFormat = FeedFormat::DeprecationsInfo;

/// One record and what its JSON Feed wrapper adds.
struct Record<'a> {
    body: &'a Value,
    url: Option<&'a str>,
    published: Option<&'a str>,
}

pub(super) fn parse(value: &Value) -> Result<Vec<Fact>, FeedError> {
    Ok(records(value)?.iter().filter_map(fact).collect())
}

fn records(value: &Value) -> Result<Vec<Record<'_>>, FeedError> {
    let plain = |body| Record {
        body,
        url: None,
        published: None,
    };
    if let Some(list) = value.as_array() {
        return Ok(list.iter().map(plain).collect());
    }
    if let Some(items) = value.get("items").and_then(Value::as_array) {
        return Ok(items.iter().filter_map(feed_item).collect());
    }
    ["deprecations", "data"]
        .iter()
        .find_map(|key| value.get(key).and_then(Value::as_array))
        .map(|list| list.iter().map(plain).collect())
        .ok_or_else(|| {
            shape(
                FORMAT,
                "expected an array, `items`, `deprecations` or `data`",
            )
        })
}

fn feed_item(item: &Value) -> Option<Record<'_>> {
    Some(Record {
        body: item.get("_deprecation")?,
        url: text(item, "url"),
        published: text(item, "date_published"),
    })
}

fn fact(record: &Record<'_>) -> Option<Fact> {
    let body = record.body;
    let provider = canonical_provider(text(body, "provider")?);
    let model = model_id(text(body, "model_id").or(text(body, "model"))?)?;
    let retirement = match text(body, "shutdown_date").or(text(body, "retirement_date")) {
        None => Retirement::Announced,
        Some(raw) => dates::iso(raw)?,
    };
    let source = text(body, "url")
        .or(text(body, "source_url"))
        .or(record.url)
        .unwrap_or("deprecations.info");
    let captured = text(body, "scraped_at").or(record.published);
    Some(Fact {
        id: None,
        origin: Origin::Feed,
        provider,
        models: vec![model],
        announced: text(body, "announcement_date")
            .or(text(body, "deprecation_date"))
            .and_then(dates::day),
        retirement,
        replacement: strings(body.get("replacement_models").or(body.get("replacement"))),
        source: format!("deprecations.info, citing {source}"),
        captured: captured.and_then(dates::day),
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
    use crate::lifecycle::{Origin, Retirement};

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    /// Records in the shape of deprecations.info `v1/deprecations.json` (values from the public
    /// feed, `deprecations/deprecations-rss` at commit 664d6abe8159), plus hostile rows.
    const SAMPLE: &str = r#"[
  {
    "provider": "OpenAI",
    "model_id": "gpt-4.5-preview",
    "model_name": "gpt-4.5-preview",
    "announcement_date": "2025-04-14",
    "shutdown_date": "2025-07-14",
    "replacement_models": ["gpt-4.1"],
    "deprecation_context": "On April 14th, 2025, we notified developers ...",
    "url": "https://platform.openai.com/docs/deprecations#2025-04-14-gpt-4-5-preview",
    "content_hash": "0000000000000000",
    "scraped_at": "2025-12-05T16:52:41.185568+00:00"
  },
  {
    "provider": "Azure",
    "model_id": "Cohere-rerank-v3.5",
    "announcement_date": "2026-01-14",
    "shutdown_date": "2026-05-14",
    "replacement_models": ["Cohere-rerank-v4.0-pro,Cohere-rerank-v4.0-fast"],
    "url": "https://learn.microsoft.com/en-us/azure/ai-foundry/concepts/model-lifecycle-retirement"
  },
  {
    "provider": "Google Vertex",
    "model_id": "claude-3-opus@20240229",
    "shutdown_date": "",
    "replacement_models": null,
    "url": "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/deprecations/partner-models"
  },
  {"provider": "AWS Bedrock", "model_id": "AI21 Jamba-Instruct", "shutdown_date": "2025-08-01"},
  {"provider": "Cohere", "model_id": "command-r", "shutdown_date": "soon"},
  {"provider": "", "model_id": "orphan", "shutdown_date": "2025-01-01"},
  {"model_id": 42},
  "not an object"
]"#;

    #[test]
    fn the_public_array_shape() {
        let facts = parse_feed(SAMPLE.as_bytes(), None).unwrap();
        let summary: Vec<_> = facts
            .iter()
            .map(|f| (f.provider.as_str(), f.models[0].as_str(), f.retirement))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "openai",
                    "gpt-4.5-preview",
                    Retirement::On(date(2025, 7, 14))
                ),
                (
                    "azure",
                    "Cohere-rerank-v3.5",
                    Retirement::On(date(2026, 5, 14))
                ),
                ("vertex", "claude-3-opus@20240229", Retirement::Announced),
            ]
        );
        let first = &facts[0];
        assert_eq!(first.origin, Origin::Feed);
        assert_eq!(first.announced, Some(date(2025, 4, 14)));
        assert_eq!(first.captured, Some(date(2025, 12, 5)));
        assert_eq!(first.replacement, ["gpt-4.1"]);
        assert!(
            first
                .source
                .contains("platform.openai.com/docs/deprecations")
        );
        assert_eq!(
            facts[1].replacement,
            ["Cohere-rerank-v4.0-pro", "Cohere-rerank-v4.0-fast"]
        );
    }

    #[test]
    fn the_json_feed_and_the_documented_field_names() {
        let feed = r#"{"version": "https://jsonfeed.org/version/1.1", "items": [
            {"id": "openai-o1-mini", "url": "https://platform.openai.com/docs/deprecations#o1",
             "date_published": "2025-12-05T16:52:41+00:00",
             "_deprecation": {"provider": "OpenAI", "model_id": "o1-mini",
                              "shutdown_date": "2025-10-27", "announcement_date": "2025-04-28",
                              "replacement_models": ["o4-mini"]}},
            {"id": "no-record", "url": "https://example.com"}]}"#;
        let facts = parse_feed(feed.as_bytes(), None).unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(
            facts[0].source,
            "deprecations.info, citing https://platform.openai.com/docs/deprecations#o1"
        );
        assert_eq!(facts[0].captured, Some(date(2025, 12, 5)));

        let documented = r#"{"deprecations": [{"provider": "Anthropic", "model": "claude-2.1",
            "deprecation_date": "2025-01-21", "retirement_date": "2025-07-21",
            "replacement": "claude-sonnet-4-6", "source_url": "https://docs.anthropic.com"}]}"#;
        let facts = parse_feed(documented.as_bytes(), Some(FeedFormat::DeprecationsInfo)).unwrap();
        assert_eq!(facts[0].provider, "anthropic");
        assert_eq!(facts[0].announced, Some(date(2025, 1, 21)));
        assert_eq!(facts[0].retirement, Retirement::On(date(2025, 7, 21)));
        assert_eq!(facts[0].replacement, ["claude-sonnet-4-6"]);
    }
}
