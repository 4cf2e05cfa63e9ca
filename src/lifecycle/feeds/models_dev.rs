//! models.dev per-model TOML (`providers/<provider>/models/<id>.toml`).
//!
//! `status = "deprecated"` means, in models.dev's schema, "no longer served by the provider's
//! public API": a retirement without a date or replacement. The file does not name the model it
//! describes — its path does — so the caller passes provider and ID, and this is a function of
//! its own rather than a [`FeedFormat`](crate::lifecycle::FeedFormat) that `parse_feed` could
//! recognise. Prices are USD per million tokens in `[cost]`; they are kept per token.

use crate::lifecycle::feeds::FeedError;
use crate::lifecycle::{Fact, Origin, Retirement, TokenPrice, canonical_provider};

/// The fact in one models.dev model file, or `None` when it is not marked deprecated.
pub fn parse_models_dev_model(
    provider: &str,
    model: &str,
    bytes: &[u8],
) -> Result<Option<Fact>, FeedError> {
    let text = std::str::from_utf8(bytes).map_err(|_| FeedError::NotText)?;
    let file: toml::Table = toml::from_str(text)?;
    if file.get("status").and_then(toml::Value::as_str) != Some("deprecated") {
        return Ok(None);
    }
    let provider = canonical_provider(provider);
    Ok(Some(Fact {
        id: None,
        origin: Origin::Feed,
        source: format!(
            "models.dev providers/{provider}/models/{model}.toml (status = deprecated)"
        ),
        provider,
        models: vec![model.trim().to_owned()],
        announced: None,
        retirement: Retirement::Gone,
        replacement: Vec::new(),
        captured: None,
        supersedes: Vec::new(),
        note: Some("models.dev: no longer served by the provider's public API".to_owned()),
        price: price(file.get("cost")),
    }))
}

fn price(cost: Option<&toml::Value>) -> Option<TokenPrice> {
    let per_token = |key: &str| {
        let per_million = cost?.get(key)?;
        let value = per_million
            .as_float()
            .or_else(|| per_million.as_integer().map(|i| i as f64))?;
        Some(value / 1e6)
    };
    let price = TokenPrice {
        input: per_token("input"),
        output: per_token("output"),
    };
    (price.input.is_some() || price.output.is_some()).then_some(price)
}

#[cfg(test)]
mod tests {
    use super::parse_models_dev_model;
    use crate::lifecycle::{Retirement, fixture};

    #[test]
    fn the_real_model_files() {
        let table = [
            ("anthropic", "claude-3-opus-20240229", Some("anthropic")),
            ("google", "gemini-2.0-flash", Some("gemini")),
            ("openai", "gpt-4o", None),
        ];
        for (provider, model, want) in table {
            let path =
                format!("deprecation-sources/models.dev/providers-{provider}-models-{model}.toml");
            let fact = parse_models_dev_model(provider, model, &fixture(&path)).unwrap();
            assert_eq!(fact.as_ref().map(|f| f.provider.as_str()), want, "{model}");
            if let Some(fact) = fact {
                assert_eq!(fact.models, [model]);
                assert_eq!(fact.retirement, Retirement::Gone);
            }
        }
        let opus = fixture(
            "deprecation-sources/models.dev/providers-anthropic-models-claude-3-opus-20240229.toml",
        );
        let price = parse_models_dev_model("anthropic", "claude-3-opus-20240229", &opus)
            .unwrap()
            .unwrap()
            .price
            .unwrap();
        assert!((price.input.unwrap() - 15e-6).abs() < 1e-12);
        assert!((price.output.unwrap() - 75e-6).abs() < 1e-12);
    }

    #[test]
    fn the_provider_file_and_garbage() {
        let provider = fixture("deprecation-sources/models.dev/providers-anthropic-provider.toml");
        assert_eq!(
            parse_models_dev_model("anthropic", "x", &provider).unwrap(),
            None
        );
        assert!(parse_models_dev_model("anthropic", "x", b"status = ").is_err());
        assert!(parse_models_dev_model("anthropic", "x", b"\xff").is_err());
    }
}
