//! Which facts are about a pin: provider scope and model-ID matching.
//!
//! Matching errs on the side of missing a fact rather than borrowing another model's date:
//! `gpt-4o` never matches `gpt-4o-mini`, and dated snapshots are not folded into their aliases
//! (a retiring snapshot is not a retiring alias). What is normalised is spelling only: Gemini's
//! `models/` prefix, Vertex resource paths, ASCII case, Bedrock's cross-region profile prefix
//! (`us.`, `eu.`, `apac.`, `global.`, ...). A trailing `*` on a fact's ID is a family prefix,
//! used only where a source names a family.
//!
//! Provider scope: a pin sees the facts of its own kind (`openai`, `anthropic`, `azure`,
//! `openrouter`, `gemini` — or `vertex` when the provider table's name says vertex). Azure never
//! sees OpenAI's rows: Microsoft runs its own schedule. An `openai-compatible` pin sees the
//! provider its table name names (`[providers.deepseek]`, `[providers.my-mistral]`), and when the
//! name names none, every provider modelpin has no kind for (deepseek, mistral, groq, together,
//! bedrock, vertex, ...), by exact ID. An OpenRouter pin also sees the upstream's rows: the slug's
//! vendor (`openai/`, `google/`, `anthropic/`, `deepseek/`, `mistralai/`, `x-ai/`) names the
//! provider and the rest, without a `:variant`, is matched as that provider's ID.

use serde::Serialize;

use crate::lifecycle::resolve::PinRef;
use crate::lifecycle::{Fact, KIND_PROVIDERS, canonical_provider};
use crate::provider::{ProviderKind, normalize_model_id};

/// How a fact's ID met the pin, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    /// The pin's model ID, as written.
    Exact,
    /// The pin's model ID after normalising spelling (`models/` prefix, case, Bedrock profile).
    Normalised,
    /// A family the fact names with a trailing `*`.
    Family,
    /// One of the pin's other accepted served IDs (a snapshot its alias points at).
    Accepted,
    /// The upstream provider's ID inside an OpenRouter slug.
    Upstream,
    /// The undated alias of the pin's dated snapshot (`o1-mini` for `o1-mini-2024-09-12`).
    /// Counts only once the alias is retired: a snapshot does not outlive its alias unless a
    /// source says so, and any fact about the snapshot itself outranks it.
    Alias,
}

impl Match {
    /// Ranking weight: a fact about the pin's own ID outranks one about a family, a snapshot
    /// or an upstream; the ID as written outranks the same ID respelled, so a Bedrock profile's
    /// own row (`us.anthropic.…` and its `us.` successor) wins over the base model's.
    pub(crate) fn strength(self) -> u8 {
        match self {
            Match::Exact => 5,
            Match::Normalised => 4,
            Match::Family => 3,
            Match::Accepted => 2,
            Match::Upstream => 1,
            Match::Alias => 0,
        }
    }
}

/// Substrings of a provider table's name that say which API it is, checked in this order
/// (`azure-openai` is Azure).
const NAME_HINTS: [(&str, &str); 15] = [
    ("vertex", "vertex"),
    ("bedrock", "bedrock"),
    ("azure", "azure"),
    ("openrouter", "openrouter"),
    ("deepseek", "deepseek"),
    ("mistral", "mistral"),
    ("groq", "groq"),
    ("together", "together"),
    ("xai", "xai"),
    ("x-ai", "xai"),
    ("cohere", "cohere"),
    ("gemini", "gemini"),
    ("google", "gemini"),
    ("anthropic", "anthropic"),
    ("openai", "openai"),
];

fn named_provider(table: &str) -> Option<&'static str> {
    let table = table.to_ascii_lowercase();
    NAME_HINTS
        .iter()
        .find(|(needle, _)| table.contains(needle))
        .map(|(_, provider)| *provider)
}

/// The provider name facts about this pin's own API carry; `None` for an `openai-compatible`
/// pin whose table name names no provider.
pub(crate) fn home_provider(pin: &PinRef<'_>) -> Option<&'static str> {
    match pin.kind {
        ProviderKind::OpenAi => Some("openai"),
        ProviderKind::Anthropic => Some("anthropic"),
        ProviderKind::Azure => Some("azure"),
        ProviderKind::OpenRouter => Some("openrouter"),
        ProviderKind::Gemini if pin.provider.to_ascii_lowercase().contains("vertex") => {
            Some("vertex")
        }
        ProviderKind::Gemini => Some("gemini"),
        ProviderKind::OpenAiCompatible => named_provider(pin.provider),
    }
}

fn in_scope(pin: &PinRef<'_>, provider: &str) -> bool {
    match home_provider(pin) {
        Some(home) => home == provider,
        None => !KIND_PROVIDERS.contains(&provider),
    }
}

/// How `fact` is about `pin`, and which of its IDs matched; `None` when it is not.
pub(crate) fn match_fact<'f>(pin: &PinRef<'_>, fact: &'f Fact) -> Option<(Match, &'f str)> {
    if in_scope(pin, &fact.provider) {
        if let Some(found) = match_id(fact, pin.model) {
            return Some(found);
        }
        let mut accepted = pin.accept.iter().filter(|id| id.as_str() != pin.model);
        if let Some((_, id)) = accepted.find_map(|id| match_id(fact, id)) {
            return Some((Match::Accepted, id));
        }
    }
    if in_scope(pin, &fact.provider)
        && let Some((_, id)) = undated(pin.model).and_then(|alias| match_id(fact, alias))
    {
        return Some((Match::Alias, id));
    }
    let (vendor, model) = upstream(pin)?;
    if canonical_provider(vendor) != fact.provider {
        return None;
    }
    match_id(fact, model).map(|(_, id)| (Match::Upstream, id))
}

/// The ID without its trailing date: `o1-mini-2024-09-12` → `o1-mini`, `gpt-4-0613` → `gpt-4`,
/// `claude-3-opus-20240229` → `claude-3-opus`, `claude-3-5-sonnet@20240620` → its alias; `None`
/// for an ID that ends in no date (a three-digit version such as `-001` is no date).
pub(crate) fn undated(id: &str) -> Option<&str> {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((alias, date)) = id.rsplit_once('@') {
        return digits(date, 8).then_some(alias).filter(|a| !a.is_empty());
    }
    let parts: Vec<&str> = id.rsplitn(4, '-').collect();
    let cut = match parts.as_slice() {
        [d, m, y, rest] if digits(y, 4) && digits(m, 2) && digits(d, 2) => Some(rest.len()),
        [last, ..] if digits(last, 8) || digits(last, 4) => Some(id.len() - last.len() - 1),
        _ => None,
    }?;
    Some(&id[..cut])
        .filter(|alias| !alias.is_empty() && alias.bytes().any(|b| b.is_ascii_alphabetic()))
}

/// `openai/gpt-4o:free` → (`openai`, `gpt-4o`), for OpenRouter pins only.
fn upstream<'p>(pin: &PinRef<'p>) -> Option<(&'p str, &'p str)> {
    if pin.kind != ProviderKind::OpenRouter {
        return None;
    }
    let (vendor, model) = pin.model.trim().split_once('/')?;
    let model = model.split_once(':').map_or(model, |(model, _)| model);
    (!vendor.is_empty() && !model.is_empty()).then_some((vendor, model))
}

fn match_id<'f>(fact: &'f Fact, candidate: &str) -> Option<(Match, &'f str)> {
    fact.models.iter().find_map(|pattern| {
        id_match(pattern, candidate, &fact.provider).map(|how| (how, pattern.as_str()))
    })
}

fn id_match(pattern: &str, candidate: &str, provider: &str) -> Option<Match> {
    if let Some(prefix) = pattern.strip_suffix('*') {
        let prefix = normalise(prefix, provider);
        return normalise(candidate, provider)
            .starts_with(&prefix)
            .then_some(Match::Family);
    }
    if pattern == candidate {
        return Some(Match::Exact);
    }
    (normalise(pattern, provider) == normalise(candidate, provider)).then_some(Match::Normalised)
}

/// Cross-region inference profile prefixes Bedrock puts before a model ID.
const BEDROCK_PROFILES: [&str; 8] = [
    "us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca.",
];

fn normalise(id: &str, provider: &str) -> String {
    let id = normalize_model_id(id).to_ascii_lowercase();
    if provider != "bedrock" {
        return id;
    }
    BEDROCK_PROFILES
        .iter()
        .find_map(|profile| id.strip_prefix(profile))
        .map_or(id.clone(), str::to_owned)
}

/// The ID without vendor, `models/`, resource path or Bedrock prefix.
#[must_use]
pub fn core_of(id: &str) -> &str {
    let id = id.rsplit_once('/').map_or(id, |(_, rest)| rest);
    let head = id.split_once('-').map_or(id, |(head, _)| head);
    match head.rfind('.') {
        Some(dot) if head[dot + 1..].starts_with(|c: char| c.is_ascii_alphabetic()) => {
            &id[dot + 1..]
        }
        _ => id,
    }
}

/// Carries a date or a fixed version: `-20240229`, `-2024-08-06`, `-0613`, `-001`, `-03-25`,
/// `@20240620`, Bedrock's `-v1:0`.
#[must_use]
pub fn is_dated(id: &str) -> bool {
    let core = core_of(id);
    let core = match core.rsplit_once(':') {
        Some((head, variant)) if variant.bytes().all(|b| b.is_ascii_alphabetic()) => head,
        _ => core,
    };
    if core.split_once('@').is_some() || has_digit_run(core, 8) {
        return true;
    }
    let parts: Vec<&str> = core.split('-').collect();
    let digits = |s: &&&str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let tail: Vec<usize> = parts
        .iter()
        .rev()
        .take_while(digits)
        .map(|s| s.len())
        .collect();
    let versioned = parts
        .last()
        .is_some_and(|last| last.starts_with('v') && last.contains(':'));
    matches!(tail.as_slice(), [3 | 4, ..] | [2, 2, ..]) || versioned
}

fn has_digit_run(text: &str, len: usize) -> bool {
    let mut run = 0;
    for byte in text.bytes() {
        run = if byte.is_ascii_digit() { run + 1 } else { 0 };
        if run >= len {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{Match, id_match, match_fact};
    use crate::lifecycle::resolve::PinRef;
    use crate::lifecycle::{Fact, Origin, Retirement};
    use crate::provider::ProviderKind;

    fn fact(provider: &str, models: &[&str]) -> Fact {
        Fact {
            id: None,
            origin: Origin::Builtin,
            provider: provider.to_owned(),
            models: models.iter().map(|m| (*m).to_owned()).collect(),
            announced: None,
            retirement: Retirement::Gone,
            replacement: Vec::new(),
            source: "s".to_owned(),
            captured: None,
            supersedes: Vec::new(),
            note: None,
            price: None,
            primary: None,
        }
    }

    #[test]
    fn the_alias_of_a_dated_snapshot() {
        let table = [
            ("o1-mini-2024-09-12", Some("o1-mini")),
            ("gpt-4-0613", Some("gpt-4")),
            ("gpt-4o-2024-08-06", Some("gpt-4o")),
            ("claude-3-opus-20240229", Some("claude-3-opus")),
            ("claude-3-5-sonnet@20240620", Some("claude-3-5-sonnet")),
            ("gemini-1.5-pro-002", None),
            ("gpt-4o", None),
            ("o1-mini", None),
            ("2024-09-12", None),
            ("x@2024", None),
            ("model-12345", None),
        ];
        for (id, want) in table {
            assert_eq!(super::undated(id), want, "{id}");
        }
    }

    #[test]
    fn ids_match_exactly_or_by_spelling_never_by_prefix() {
        let table = [
            ("gpt-4o", "gpt-4o", "openai", Some(Match::Exact)),
            ("gpt-4o", "gpt-4o-mini", "openai", None),
            ("gpt-4o", "gpt-4o-2024-08-06", "openai", None),
            ("gpt-4o-mini", "gpt-4o", "openai", None),
            (
                "gemini-2.5-pro",
                "models/gemini-2.5-pro",
                "gemini",
                Some(Match::Normalised),
            ),
            (
                "gemini-2.5-pro",
                " gemini-2.5-pro ",
                "gemini",
                Some(Match::Normalised),
            ),
            (
                "gemini-2.5-flash",
                "projects/p/locations/l/publishers/google/models/gemini-2.5-flash",
                "vertex",
                Some(Match::Normalised),
            ),
            (
                "gemini-2.5-pro",
                "gemini-2.5-pro-preview-03-25",
                "gemini",
                None,
            ),
            (
                "meta-llama/Llama-3.3-70B-Instruct-Turbo",
                "meta-llama/llama-3.3-70b-instruct-turbo",
                "together",
                Some(Match::Normalised),
            ),
            (
                "gpt-5.1-codex*",
                "gpt-5.1-codex-mini",
                "openai",
                Some(Match::Family),
            ),
            ("gpt-5.1-codex*", "gpt-5.1", "openai", None),
            (
                "us.anthropic.claude-3-5-haiku-20241022-v1:0",
                "anthropic.claude-3-5-haiku-20241022-v1:0",
                "bedrock",
                Some(Match::Normalised),
            ),
            (
                "us.anthropic.claude-3-5-haiku-20241022-v1:0",
                "eu.anthropic.claude-3-5-haiku-20241022-v1:0",
                "bedrock",
                Some(Match::Normalised),
            ),
            ("us.x", "x", "openai", None),
        ];
        for (pattern, candidate, provider, want) in table {
            assert_eq!(
                id_match(pattern, candidate, provider),
                want,
                "{pattern} vs {candidate}"
            );
        }
    }

    fn pin<'a>(
        kind: ProviderKind,
        provider: &'a str,
        model: &'a str,
        accept: &'a [String],
    ) -> PinRef<'a> {
        PinRef {
            kind,
            provider,
            model,
            accept,
            retires_on: None,
        }
    }

    #[test]
    fn provider_scope_by_kind_and_table_name() {
        use ProviderKind::{Anthropic, Azure, Gemini, OpenAi, OpenAiCompatible, OpenRouter};
        let table = [
            (OpenAi, "openai", "gpt-4o", "openai", true),
            (Azure, "azure", "gpt-4o", "openai", false),
            (OpenAi, "openai", "gpt-4o", "azure", false),
            (Anthropic, "anthropic", "gpt-4o", "openai", false),
            (Gemini, "google", "gpt-4o", "gemini", true),
            (Gemini, "vertex-eu", "gpt-4o", "vertex", true),
            (Gemini, "vertex-eu", "gpt-4o", "gemini", false),
            (OpenAiCompatible, "deepseek", "gpt-4o", "deepseek", true),
            (OpenAiCompatible, "deepseek", "gpt-4o", "mistral", false),
            (OpenAiCompatible, "my-llm", "gpt-4o", "mistral", true),
            (OpenAiCompatible, "my-llm", "gpt-4o", "openai", false),
            (
                OpenAiCompatible,
                "azure-openai-proxy",
                "gpt-4o",
                "azure",
                true,
            ),
            (OpenRouter, "router", "gpt-4o", "openrouter", true),
            (OpenRouter, "router", "gpt-4o", "openai", false),
        ];
        for (kind, name, model, provider, want) in table {
            let fact = fact(provider, &[model]);
            let got = match_fact(&pin(kind, name, model, &[]), &fact).is_some();
            assert_eq!(got, want, "{kind:?} [{name}] vs {provider}");
        }
    }

    #[test]
    fn accepted_ids_and_openrouter_upstreams() {
        let accept = ["gpt-4o".to_owned(), "gpt-4o-2024-08-06".to_owned()];
        let snapshot = fact("openai", &["gpt-4o-2024-08-06"]);
        let got = match_fact(
            &pin(ProviderKind::OpenAi, "openai", "gpt-4o", &accept),
            &snapshot,
        );
        assert_eq!(got, Some((Match::Accepted, "gpt-4o-2024-08-06")));

        let gemini = fact("gemini", &["gemini-2.0-flash-001"]);
        let router = |model| pin(ProviderKind::OpenRouter, "openrouter", model, &[]);
        let table = [
            (
                "google/gemini-2.0-flash-001",
                Some((Match::Upstream, "gemini-2.0-flash-001")),
            ),
            (
                "google/gemini-2.0-flash-001:free",
                Some((Match::Upstream, "gemini-2.0-flash-001")),
            ),
            ("google/gemini-2.0-flash-lite-001", None),
            ("openai/gemini-2.0-flash-001", None),
            ("gemini-2.0-flash-001", None),
            ("/", None),
        ];
        for (model, want) in table {
            assert_eq!(match_fact(&router(model), &gemini), want, "{model}");
        }
    }
}
