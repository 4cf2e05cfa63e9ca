//! The built-in table: every row valid, every cross-reference resolvable, every model of the
//! research note's fact table (wire-formats.md §16 (d), plus the §16 samples) covered.

use std::collections::HashSet;

use super::{Retirement, builtin, canonical_provider, table};
use crate::lifecycle::Origin;

/// Every model ID §16 (d) names, with its provider, expanded from the note's `(-suffix)` and
/// `+ alias` shorthand.
const NAMED_IN_RESEARCH: &[(&str, &str)] = &[
    ("openai", "gpt-3.5-turbo-0613"),
    ("openai", "gpt-3.5-turbo-16k-0613"),
    ("openai", "text-davinci-003"),
    ("openai", "gpt-4.5-preview"),
    ("azure", "o1-preview"),
    ("azure", "gpt-4-0314"),
    ("azure", "gpt-4-0613"),
    ("azure", "gpt-4-32k-0314"),
    ("azure", "gpt-4-32k-0613"),
    ("openai", "chatgpt-4o-latest"),
    ("openai", "computer-use-preview"),
    ("openai", "computer-use-preview-2025-03-11"),
    ("openai", "gpt-4o-search-preview-2025-03-11"),
    ("openai", "gpt-4o-mini-search-preview-2025-03-11"),
    ("openai", "gpt-5-codex"),
    ("openai", "gpt-5.1-codex"),
    ("openai", "gpt-5.1-codex-mini"),
    ("openai", "gpt-5-chat-latest"),
    ("openai", "o3-deep-research"),
    ("openai", "o4-mini-deep-research"),
    ("openai", "gpt-3.5-turbo"),
    ("openai", "gpt-3.5-turbo-0125"),
    ("openai", "gpt-4"),
    ("openai", "gpt-4-0613"),
    ("openai", "gpt-4-turbo"),
    ("openai", "gpt-4-turbo-2024-04-09"),
    ("openai", "gpt-4-1106-preview"),
    ("openai", "gpt-4o-2024-05-13"),
    ("openai", "o1"),
    ("openai", "o1-2024-12-17"),
    ("openai", "o1-pro"),
    ("openai", "o3-mini"),
    ("openai", "o3-mini-2025-01-31"),
    ("openai", "o4-mini"),
    ("openai", "o4-mini-2025-04-16"),
    ("openai", "gpt-4.1-nano"),
    ("openai", "gpt-4.1-nano-2025-04-14"),
    ("openai", "gpt-image-1"),
    ("openai", "gpt-5"),
    ("openai", "gpt-5-mini"),
    ("openai", "gpt-5-nano"),
    ("openai", "gpt-5-pro"),
    ("openai", "o3"),
    ("openai", "o3-pro"),
    ("openai", "gpt-4o"),
    ("openai", "gpt-4o-mini"),
    ("openai", "gpt-4.1"),
    ("openai", "gpt-4.1-mini"),
    ("anthropic", "claude-1.3"),
    ("anthropic", "claude-instant-1.2"),
    ("anthropic", "claude-2.0"),
    ("anthropic", "claude-2.1"),
    ("anthropic", "claude-3-sonnet-20240229"),
    ("anthropic", "claude-3-opus-20240229"),
    ("anthropic", "claude-3-opus-latest"),
    ("anthropic", "claude-3-5-sonnet-20240620"),
    ("anthropic", "claude-3-5-sonnet-20241022"),
    ("anthropic", "claude-3-7-sonnet-20250219"),
    ("anthropic", "claude-3-7-sonnet-latest"),
    ("anthropic", "claude-3-5-haiku-20241022"),
    ("anthropic", "claude-3-5-haiku-latest"),
    ("anthropic", "claude-3-haiku-20240307"),
    ("anthropic", "claude-opus-4-20250514"),
    ("anthropic", "claude-sonnet-4-20250514"),
    ("anthropic", "claude-opus-4-0"),
    ("anthropic", "claude-sonnet-4-0"),
    ("anthropic", "claude-opus-4-1-20250805"),
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-sonnet-4-5-20250929"),
    ("gemini", "gemini-1.0-pro-vision"),
    ("gemini", "gemini-2.5-pro-preview-03-25"),
    ("gemini", "gemini-2.5-pro-preview-05-06"),
    ("gemini", "gemini-2.5-pro-preview-06-05"),
    ("gemini", "gemini-2.0-flash"),
    ("gemini", "gemini-2.0-flash-001"),
    ("gemini", "gemini-2.0-flash-lite"),
    ("gemini", "gemini-2.0-flash-lite-001"),
    ("gemini", "gemini-3-pro-preview"),
    ("gemini", "gemini-2.5-pro"),
    ("gemini", "gemini-2.5-flash"),
    ("vertex", "gemini-2.5-flash"),
    ("deepseek", "deepseek-chat"),
    ("deepseek", "deepseek-reasoner"),
    ("deepseek", "deepseek-v4-flash"),
    ("deepseek", "deepseek-v4-pro"),
    ("mistral", "codestral-2501"),
    ("mistral", "codestral-2412"),
    ("mistral", "codestral-2411-rc5"),
    ("mistral", "mistral-tiny"),
    ("groq", "compound-beta"),
    ("openrouter", "x-ai/grok-4"),
    ("openrouter", "x-ai/grok-3"),
    ("openrouter", "google/gemini-2.0-flash-001"),
    ("bedrock", "anthropic.claude-v2:1"),
    ("bedrock", "us.anthropic.claude-3-5-haiku-20241022-v1:0"),
    ("bedrock", "anthropic.claude-sonnet-4-20250514-v1:0"),
    ("bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
    ("bedrock", "eu.anthropic.claude-sonnet-4-20250514-v1:0"),
    ("bedrock", "apac.anthropic.claude-sonnet-4-20250514-v1:0"),
    ("bedrock", "global.anthropic.claude-sonnet-4-20250514-v1:0"),
    ("together", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
];

const PROVIDERS: [&str; 11] = [
    "openai",
    "anthropic",
    "gemini",
    "azure",
    "openrouter",
    "vertex",
    "deepseek",
    "mistral",
    "groq",
    "together",
    "bedrock",
];

#[test]
fn every_row_is_valid() {
    let facts = builtin();
    assert!(facts.len() >= 50, "{} rows", facts.len());
    for fact in facts {
        let id = fact.id.as_deref().expect("every built-in row has an id");
        assert_eq!(fact.origin, Origin::Builtin);
        assert!(!fact.source.trim().is_empty(), "{id}");
        assert!(
            PROVIDERS.contains(&fact.provider.as_str()),
            "{id}: {}",
            fact.provider
        );
        if let (Some(announced), Some(retires)) = (fact.announced, fact.retirement.date()) {
            assert!(retires >= announced, "{id}");
        }
    }
}

#[test]
fn ids_are_unique_and_every_supersedes_resolves_to_a_row_about_the_same_models() {
    let facts = builtin();
    let mut ids = HashSet::new();
    for fact in facts {
        assert!(
            ids.insert(fact.id.as_deref().unwrap()),
            "duplicate {:?}",
            fact.id
        );
    }
    for fact in facts {
        for old in &fact.supersedes {
            let target = facts
                .iter()
                .find(|f| f.id.as_deref() == Some(old.as_str()))
                .unwrap_or_else(|| panic!("{:?} supersedes unknown {old}", fact.id));
            assert_eq!(target.provider, fact.provider, "{old}");
            assert!(
                target.models.iter().any(|m| fact.models.contains(m)),
                "{:?} supersedes {old} about other models",
                fact.id
            );
        }
    }
}

#[test]
fn the_table_covers_every_model_the_research_names() {
    let facts = builtin();
    let covers = |provider: &str, model: &str| {
        facts.iter().any(|f| {
            f.provider == provider
                && f.models.iter().any(|m| match m.strip_suffix('*') {
                    Some(prefix) => model.starts_with(prefix),
                    None => m == model,
                })
        })
    };
    let missing: Vec<_> = NAMED_IN_RESEARCH
        .iter()
        .filter(|(provider, model)| !covers(provider, model))
        .collect();
    assert!(missing.is_empty(), "not in builtin.toml: {missing:?}");
}

#[test]
fn timestamps_where_the_source_gives_a_time() {
    let facts = builtin();
    let of = |id: &str| {
        facts
            .iter()
            .find(|f| f.id.as_deref() == Some(id))
            .unwrap()
            .retirement
    };
    assert_eq!(of("deepseek-v3-names").to_string(), "2026-07-24 15:59 UTC");
    assert_eq!(
        of("mistral-codestral-2501").to_string(),
        "2026-01-31 12:00 UTC"
    );
    assert_eq!(of("deepseek-v4-flash"), Retirement::Gone);
    let sunset = crate::lifecycle::signals::sunset_header("Wed, 11 Nov 2026 23:59:59 GMT").unwrap();
    assert_eq!(sunset.retirement.to_string(), "2026-11-11 23:59:59 UTC");
    assert_eq!(of("mistral-tiny"), Retirement::Announced);
}

#[test]
fn the_builtin_text_round_trips_through_the_feed_reader() {
    let as_feed = table::parse(super::BUILTIN_TOML, Origin::Feed).unwrap();
    assert_eq!(as_feed.len(), builtin().len());
}

#[test]
fn provider_names_from_feeds() {
    let table = [
        ("OpenAI", "openai"),
        ("Google", "gemini"),
        ("Google Vertex", "vertex"),
        ("vertex_ai-language-models", "vertex"),
        ("AWS Bedrock", "bedrock"),
        ("bedrock_converse", "bedrock"),
        ("Azure", "azure"),
        ("azure_ai", "azure"),
        ("text-completion-openai", "openai"),
        ("together_ai", "together"),
        ("Mistral AI", "mistral"),
        ("mistralai", "mistral"),
        ("x-ai", "xai"),
        ("xAI", "xai"),
        ("Cohere", "cohere"),
        ("DeepSeek", "deepseek"),
        ("Anthropic", "anthropic"),
        (" Fireworks AI ", "fireworks-ai"),
    ];
    for (raw, want) in table {
        assert_eq!(canonical_provider(raw), want, "{raw}");
    }
}

/// Deterministic junk: every parser in the module must answer, never panic.
#[test]
fn hostile_input_never_panics() {
    use crate::lifecycle::{dates, feeds, signals};
    const ALPHABET: &[u8] = b"@-+:.,TZtz 0123456789{}[]\"'=\n\tMonWedNovGMTtrue/\\\xff\xc3\xa9*";
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) as usize
    };
    let mut samples: Vec<Vec<u8>> = vec![
        "@".repeat(10_000).into_bytes(),
        format!("@{}", "9".repeat(400)).into_bytes(),
        "2026-01-31T12:00:00Z".repeat(50).into_bytes(),
        "[".repeat(100_000).into_bytes(),
        b"{\"models\": {\"x\": \"February 31st, 2026\"}}".to_vec(),
    ];
    for _ in 0..2_000 {
        let len = next() % 48;
        samples.push(
            (0..len)
                .map(|_| ALPHABET[next() % ALPHABET.len()])
                .collect(),
        );
    }
    for bytes in &samples {
        let text = String::from_utf8_lossy(bytes);
        let _ = (dates::iso(&text), dates::http(&text), dates::english(&text));
        let _ = signals::deprecation_header(&text);
        let _ = signals::sunset_header(&text);
        let _ = signals::mistral_deprecation_header(&text);
        let _ = signals::body_warning(&text);
        let _ = signals::openai_models(bytes);
        let _ = signals::mistral_models(bytes);
        let _ = signals::openrouter_models(bytes);
        let _ = feeds::parse_feed(bytes, None);
    }
}
