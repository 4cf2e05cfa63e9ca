//! What an ID found in code means for the project: retired, retiring, an alias that moves, not
//! watched by any pin, or served as something else according to the lock.
//!
//! The ID is judged once and the verdict applied to every occurrence by its kind: a literal gets
//! every finding at its own level; a comment or identifier gets only `retired` and `retiring`, as
//! info (the mention is worth knowing about, but it cannot break a request). Lifecycle dates come
//! from the same resolver `deprecations` and `check` use; with a pin for the ID, the pin's own
//! provider and `retires_on` count, without one the provider is inferred from the ID's family.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use crate::config::Pin;
pub(crate) use crate::lifecycle::is_dated;
use crate::lifecycle::resolve::Match;
use crate::lifecycle::{
    Fact, Lifecycle, Origin, PinRef, Retirement, Stage, core_of, resolve, undated,
};
use crate::lock::Lock;
use crate::provider::modality::Modality;
use crate::provider::{ProviderKind, normalize_model_id};
use crate::scan::classify::Kind;
pub use crate::scan::code::{Code, Level};
use crate::scan::forms::same_form;

/// One conclusion about one ID.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub code: Code,
    pub level: Level,
    pub message: String,
    /// The ID to write instead, in the form of the ID found (Bedrock profile, `models/`, slug...),
    /// when exactly one named successor can be written in that form (see `forms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// A ready-to-paste `[[pin]]` (unpinned only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// What is known about the project: lifecycle facts, pins and the lock.
pub struct Knowledge<'a> {
    facts: &'a [Fact],
    pins: &'a [Pin],
    lock: Option<&'a Lock>,
    now: DateTime<Utc>,
    warn_before: &'a [Duration],
    /// Fact indices by lowercase [`fact_key`]; family (`*`) facts under `""`.
    index: HashMap<String, Vec<usize>>,
}

impl<'a> Knowledge<'a> {
    #[must_use]
    pub fn new(
        facts: &'a [Fact],
        pins: &'a [Pin],
        lock: Option<&'a Lock>,
        now: DateTime<Utc>,
        warn_before: &'a [Duration],
    ) -> Knowledge<'a> {
        let mut index: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, fact) in facts.iter().enumerate() {
            for model in &fact.models {
                let key = if model.ends_with('*') {
                    String::new()
                } else {
                    fact_key(model).to_ascii_lowercase()
                };
                let slot = index.entry(key).or_default();
                if slot.last() != Some(&i) {
                    slot.push(i);
                }
            }
        }
        Knowledge {
            facts,
            pins,
            lock,
            now,
            warn_before,
            index,
        }
    }

    /// The findings for `id` as used in a literal.
    #[must_use]
    pub fn judge(&self, id: &str) -> Vec<Finding> {
        let pin = self.pin_named(id);
        let life = self.lifecycle_of(id, pin);
        let fix = self.successor(id, &life);
        let mut out: Vec<Finding> = lifecycle_finding(id, &life, &fix).into_iter().collect();
        let served = self.served(id);
        out.extend(served_differently(id, &served));
        if !life.is_retired() {
            // An Azure deployment name stands for its pin's model.
            out.extend(alias(pin.map_or(id, |p| p.model.as_str()), &served));
            if pin.is_none() && !self.covered(id) {
                out.push(unpinned(id));
            }
        }
        out
    }

    /// The verdict with a retirement date the ID's own line states, when no lifecycle source
    /// already gives a finding: the line is then the source (as retired, retiring, or nothing
    /// while the date is outside every warning window).
    #[must_use]
    pub fn with_stated(&self, id: &str, date: NaiveDate, verdict: &[Finding]) -> Vec<Finding> {
        if verdict
            .iter()
            .any(|f| matches!(f.code, Code::Retired | Code::Retiring))
        {
            return verdict.to_vec();
        }
        let (_, provider) = guess_provider(id);
        let fact = Fact {
            id: None,
            // The project's own word, like a pin's `retires_on`.
            origin: Origin::Pin,
            provider: provider.to_owned(),
            models: vec![id.to_owned()],
            announced: None,
            retirement: Retirement::On(date),
            replacement: Vec::new(),
            source: "the date stated on this line".to_owned(),
            captured: None,
            supersedes: Vec::new(),
            note: None,
            price: None,
            primary: None,
        };
        let life = resolve(&guessed(id), [&fact], self.now, self.warn_before);
        let Some(stated) = lifecycle_finding(id, &life, &Fix::Unnamed) else {
            return verdict.to_vec();
        };
        let retired = stated.code == Code::Retired;
        std::iter::once(stated)
            .chain(
                verdict
                    .iter()
                    .filter(|f| !(retired && matches!(f.code, Code::Alias | Code::Unpinned)))
                    .cloned(),
            )
            .collect()
    }

    /// What a fix may write for `id`: its named successor in the form of the ID found, followed
    /// while `scan` reports that successor at warning or above (retired, retiring inside a
    /// `warn_before` window, served as another model) to the first one it does not. A fork
    /// (several successors), a loop or a chain that ends on such an ID offers no fix: a patch
    /// never writes an ID the next scan warns about.
    fn successor(&self, id: &str, life: &Lifecycle) -> Fix {
        let mut next = match written_successor(id, &life.replacement) {
            Ok(next) => next,
            Err(fix) => return fix,
        };
        let mut skipped: Vec<(String, &'static str)> = Vec::new();
        while skipped.len() < MAX_CHAIN {
            let seen = |s: &str| same(s, id) || skipped.iter().any(|(k, _)| same(k, s));
            if seen(&next) {
                return Fix::Refused(format!("the successors named lead back to `{next}`"));
            }
            let life = self.lifecycle_of(&next, self.pin_named(&next));
            let Some(why) = self.warns(&next, &life) else {
                return Fix::Write { id: next, skipped };
            };
            skipped.push((next.clone(), why));
            next = match written_successor(&next, &life.replacement) {
                Ok(found) => found,
                Err(_) => {
                    return Fix::Refused(format!(
                        "`{next}` is itself {why} and names no single successor this form can write"
                    ));
                }
            };
        }
        Fix::Refused(format!(
            "the chain of successors is longer than {MAX_CHAIN}"
        ))
    }

    /// Why `scan` reports `id` at warning or above, by the findings `judge` gives it; `None`
    /// when it does not.
    fn warns(&self, id: &str, life: &Lifecycle) -> Option<&'static str> {
        lifecycle_finding(id, life, &Fix::Unnamed)
            .into_iter()
            .chain(served_differently(id, &self.served(id)))
            .filter(|f| f.level >= Level::Warning)
            .map(|f| match f.code {
                Code::Retired => "retired",
                Code::Retiring => "retiring",
                _ => "served as another model",
            })
            .next()
    }

    /// The lifecycle of `id` as a literal: its pin's (`pin_named`) provider when a pin names
    /// it, else the provider its family implies.
    fn lifecycle_of(&self, id: &str, pin: Option<&Pin>) -> Lifecycle {
        let mut ids = vec![id];
        if let Some(pin) = pin {
            ids.push(&pin.model);
            ids.extend(pin.accept.iter().map(String::as_str));
        }
        let facts = self.facts_about(&ids);
        match pin {
            Some(pin) => resolve(&PinRef::from(pin), facts, self.now, self.warn_before),
            None => resolve(&guessed(id), facts, self.now, self.warn_before),
        }
    }

    /// The facts that can be about any of `ids`: the same core ID, its undated alias, or a
    /// family. A cheap pre-filter: `resolve` still decides, but a tree holds thousands of
    /// distinct IDs.
    fn facts_about(&self, ids: &[&str]) -> Vec<&Fact> {
        let undated = ids.iter().filter_map(|id| undated(id));
        let mut found: Vec<usize> = std::iter::once(String::new())
            .chain(
                ids.iter()
                    .copied()
                    .chain(undated)
                    .map(|id| fact_key(id).to_ascii_lowercase()),
            )
            .filter_map(|key| self.index.get(&key))
            .flatten()
            .copied()
            .collect();
        found.sort_unstable();
        found.dedup();
        found.into_iter().map(|i| &self.facts[i]).collect()
    }

    /// The pin whose model (or Azure deployment) this ID is.
    fn pin_named(&self, id: &str) -> Option<&Pin> {
        self.pins.iter().find(|pin| {
            same(&pin.model, id) || (pin.kind == ProviderKind::Azure && same(&pin.deployment, id))
        })
    }

    /// Any pin watches the ID: its model, deployment, accepted or locked served IDs.
    fn covered(&self, id: &str) -> bool {
        self.pins.iter().any(|pin| {
            same(&pin.model, id)
                || same(&pin.deployment, id)
                || pin.accept.iter().any(|a| same(a, id))
        }) || self.lock.is_some_and(|lock| {
            lock.pins.iter().any(|(name, locked)| {
                self.pins.iter().any(|p| &p.id == name)
                    && locked.served_models.keys().any(|s| same(s, id))
            })
        })
    }

    /// What the lock says the ID was served as, for every locked pin that requests it.
    fn served(&self, id: &str) -> Vec<String> {
        let Some(lock) = self.lock else {
            return Vec::new();
        };
        let mut served: Vec<String> = lock
            .pins
            .values()
            .filter(|locked| same(&locked.model, id))
            .flat_map(|locked| locked.served_models.keys().cloned())
            .filter(|s| !same(s, id))
            .collect();
        served.sort();
        served.dedup();
        served
    }

    /// Findings for an occurrence of `kind`, from the literal verdict.
    #[must_use]
    pub fn for_kind(findings: &[Finding], kind: Kind) -> Vec<Finding> {
        if kind == Kind::Literal {
            return findings.to_vec();
        }
        findings
            .iter()
            .filter(|f| matches!(f.code, Code::Retired | Code::Retiring))
            .map(|f| Finding {
                level: Level::Info,
                message: format!("{} (mentioned in {}, not used)", f.message, kind.phrase()),
                ..f.clone()
            })
            .collect()
    }
}

/// The ID without vendor, path, Bedrock prefix or OpenRouter `:variant`.
fn fact_key(id: &str) -> &str {
    let core = core_of(id.trim());
    match core.rsplit_once(':') {
        Some((head, variant)) if variant.bytes().all(|b| b.is_ascii_alphabetic()) => head,
        _ => core,
    }
}

fn same(a: &str, b: &str) -> bool {
    normalize_model_id(a).eq_ignore_ascii_case(&normalize_model_id(b))
}

/// The provider an ID belongs to when no pin says.
#[must_use]
pub fn guess_provider(id: &str) -> (ProviderKind, &'static str) {
    let core = core_of(id);
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| core.starts_with(p));
    if id.contains('/') && !id.starts_with("models/") && !id.starts_with("projects/") {
        return (ProviderKind::OpenRouter, "openrouter");
    }
    if core.len() < id.len() && !id.contains('/') {
        return (ProviderKind::OpenAiCompatible, "bedrock");
    }
    if starts(&[
        "gpt-", "chatgpt-", "o1", "o3", "o4", "text-", "davinci-", "babbage-",
    ]) {
        (ProviderKind::OpenAi, "openai")
    } else if starts(&["claude-"]) {
        (ProviderKind::Anthropic, "anthropic")
    } else if id.starts_with("projects/") {
        (ProviderKind::Gemini, "vertex")
    } else if starts(&["gemini-", "gemma-"]) {
        (ProviderKind::Gemini, "gemini")
    } else if starts(&["deepseek-"]) {
        (ProviderKind::OpenAiCompatible, "deepseek")
    } else if starts(&["grok-"]) {
        (ProviderKind::OpenAiCompatible, "xai")
    } else if core.to_ascii_lowercase().contains("stral") {
        (ProviderKind::OpenAiCompatible, "mistral")
    } else {
        (ProviderKind::OpenAiCompatible, "openai-compatible")
    }
}

fn guessed(id: &str) -> PinRef<'_> {
    let (kind, provider) = guess_provider(id);
    PinRef {
        kind,
        provider,
        model: id,
        accept: &[],
        retires_on: None,
    }
}

/// Longest chain of successors a fix follows.
const MAX_CHAIN: usize = 8;

/// What a fix writes for an ID, if anything.
#[derive(Debug, Clone, PartialEq)]
enum Fix {
    /// No single successor can be written in the ID's form (none named, several, another form).
    Unnamed,
    /// This ID: the named successor, or the first one down its chain `scan` would not flag.
    Write {
        id: String,
        /// Successors passed over, in chain order, with what `scan` flags them for.
        skipped: Vec<(String, &'static str)>,
    },
    /// A successor is named, but following it ends on an ID `scan` flags: why.
    Refused(String),
}

/// The one successor of `id` that can be written in its form.
fn written_successor(id: &str, named: &[String]) -> Result<String, Fix> {
    let written: Vec<String> = named
        .iter()
        .filter_map(|successor| same_form(id, successor))
        .collect();
    match <[String; 1]>::try_from(written) {
        Ok([one]) => Ok(one),
        Err(_) => Err(Fix::Unnamed),
    }
}

fn lifecycle_finding(id: &str, life: &Lifecycle, fix: &Fix) -> Option<Finding> {
    let named = match life.replacement.as_slice() {
        [] => "no replacement named".to_owned(),
        many => format!("replacement: {}", many.join(" or ")),
    };
    let (replacement, instead) = match fix {
        Fix::Write { id: to, skipped } if !skipped.is_empty() => (
            Some(to.clone()),
            format!(
                "{named}; {}, so the fix writes `{to}`",
                passed_over(skipped)
            ),
        ),
        Fix::Write { id: to, .. } => (Some(to.clone()), named),
        Fix::Refused(why) => (None, format!("{named}; no fix offered: {why}")),
        Fix::Unnamed => (None, named),
    };
    let source = life.sources.first().map_or("", |s| s.source.as_str());
    let via = match life.sources.first() {
        Some(s) if s.matched == Match::Alias => format!(" with its alias `{}`", s.model),
        _ => String::new(),
    };
    let date = life.retirement.map(|r| r.to_string()).unwrap_or_default();
    let (code, level, message) = match (life.stage, life.window) {
        (Stage::Retired, _) if life.secondary_only() => (
            Code::Retired,
            Level::Warning,
            format!(
                "`{id}` is retired{via} ({date}) according to a third party, not yet the provider's own page; {instead} [source: {source}]"
            ),
        ),
        (Stage::Retired, _) => (
            Code::Retired,
            Level::Error,
            format!("`{id}` is retired{via} ({date}); {instead} [source: {source}]"),
        ),
        (Stage::Scheduled, Some(window)) => (
            Code::Retiring,
            Level::Warning,
            format!(
                "`{id}` retires on {date}, in {} days (inside the {window} warning window); {instead} [source: {source}]",
                life.days_left.unwrap_or_default()
            ),
        ),
        (Stage::Deprecated, _) => (
            Code::Retiring,
            Level::Info,
            format!("`{id}` is deprecated, no date announced; {instead} [source: {source}]"),
        ),
        _ => return None,
    };
    Some(Finding {
        code,
        level,
        message,
        replacement,
        suggestion: None,
    })
}

/// `` `o4-mini` is retired``, `` `a` is retired, then `b` is retiring``.
fn passed_over(skipped: &[(String, &str)]) -> String {
    let each: Vec<String> = skipped
        .iter()
        .map(|(id, why)| format!("`{id}` is {why}"))
        .collect();
    each.join(", then ")
}

fn served_differently(id: &str, served: &[String]) -> Option<Finding> {
    let other: Vec<&String> = served.iter().filter(|s| !is_snapshot_of(s, id)).collect();
    if other.is_empty() {
        return None;
    }
    let list: Vec<String> = other.iter().map(|s| format!("`{s}`")).collect();
    Some(Finding {
        code: Code::ServedDifferently,
        level: Level::Warning,
        message: format!("modelpin.lock records `{id}` served as {}", list.join(", ")),
        replacement: None,
        suggestion: None,
    })
}

/// `gpt-4o-2024-08-06` is a snapshot of `gpt-4o`.
fn is_snapshot_of(served: &str, alias: &str) -> bool {
    let served = normalize_model_id(served).to_ascii_lowercase();
    let alias = normalize_model_id(core_of(alias)).to_ascii_lowercase();
    served
        .strip_prefix(&alias)
        .is_some_and(|rest| rest.starts_with(['-', '@']) && is_dated(&served))
}

fn alias(id: &str, served: &[String]) -> Option<Finding> {
    if is_dated(id) || is_open_weights(id) {
        return None;
    }
    let snapshots: Vec<String> = served
        .iter()
        .filter(|s| is_snapshot_of(s, id))
        .map(|s| format!("`{s}`"))
        .collect();
    let today = if snapshots.is_empty() {
        "pin a dated snapshot, or pin the alias so a move is noticed".to_owned()
    } else {
        format!("modelpin.lock has it resolving to {}", snapshots.join(", "))
    };
    Some(Finding {
        code: Code::Alias,
        level: Level::Info,
        message: format!("`{id}` is an undated alias the provider can move; {today}"),
        replacement: None,
        suggestion: None,
    })
}

/// Open-weight model names name fixed weights, not a moving alias.
fn is_open_weights(id: &str) -> bool {
    let core = core_of(id).to_ascii_lowercase();
    ["llama", "meta-llama", "qwen", "gemma", "mixtral", "kimi-"]
        .iter()
        .any(|p| core.starts_with(p))
}

/// A pin id made from a model ID: its core in lower-case letters and digits, other runs as `-`.
#[must_use]
pub fn pin_slug(id: &str) -> String {
    let raw: String = core_of(id)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    raw.trim_matches('-').to_owned()
}

fn unpinned(id: &str) -> Finding {
    if let Some(kind) = Modality::non_chat(id) {
        return Finding {
            code: Code::Unpinned,
            level: Level::Info,
            message: format!(
                "`{id}` is not covered by any pin; it is {kind}, and modelpin's probes are chat calls, so its lifecycle is all there is to watch (this scan does; `modelpin deprecations --data` lists the table)"
            ),
            replacement: None,
            suggestion: None,
        };
    }
    let (_, provider) = guess_provider(id);
    Finding {
        code: Code::Unpinned,
        level: Level::Info,
        message: format!("`{id}` is not covered by any pin, so nothing watches it"),
        replacement: None,
        suggestion: Some(format!(
            "[[pin]]\nid = \"{}\"\nprovider = \"{provider}\"\nmodel = \"{id}\"\nprobes = [\"probes/*.toml\"]\n",
            pin_slug(id)
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::{TimeZone, Utc};

    use super::{Code, Knowledge, Level, guess_provider, is_dated};
    use crate::lifecycle::builtin;
    use crate::lock::{LOCK_VERSION, Lock, LockedPin};
    use crate::provider::ProviderKind;
    use crate::scan::classify::Kind;

    #[test]
    fn dated_snapshots_and_aliases() {
        let table = [
            ("gpt-4o", false),
            ("gpt-4", false),
            ("o1", false),
            ("claude-3-5-haiku-latest", false),
            ("gemini-2.5-pro", false),
            ("deepseek-chat", false),
            ("openai/gpt-4o:free", false),
            ("gpt-4o-2024-08-06", true),
            ("gpt-4-0613", true),
            ("claude-3-opus-20240229", true),
            ("gemini-2.0-flash-001", true),
            ("gemini-2.5-pro-preview-03-25", true),
            ("mistral-large-2402", true),
            ("claude-3-5-sonnet@20240620", true),
            ("us.anthropic.claude-3-5-haiku-20241022-v1:0", true),
            ("anthropic.claude-v2:1", true),
        ];
        for (id, want) in table {
            assert_eq!(is_dated(id), want, "{id}");
        }
    }

    #[test]
    fn providers_from_the_id() {
        use ProviderKind::{Anthropic, Gemini, OpenAi, OpenAiCompatible, OpenRouter};
        let table = [
            ("gpt-4o", OpenAi, "openai"),
            ("o3-mini", OpenAi, "openai"),
            ("claude-3-haiku-20240307", Anthropic, "anthropic"),
            ("models/gemini-2.5-pro", Gemini, "gemini"),
            ("google/gemini-2.0-flash-001", OpenRouter, "openrouter"),
            ("anthropic.claude-v2:1", OpenAiCompatible, "bedrock"),
            ("deepseek-chat", OpenAiCompatible, "deepseek"),
            ("codestral-2501", OpenAiCompatible, "mistral"),
        ];
        for (id, kind, provider) in table {
            assert_eq!(guess_provider(id), (kind, provider), "{id}");
        }
    }

    fn lock(model: &str, served: &str) -> Lock {
        let locked = LockedPin {
            provider: "p".to_owned(),
            kind: "openai".to_owned(),
            model: model.to_owned(),
            served_models: BTreeMap::from([(served.to_owned(), 3)]),
            upstreams: BTreeMap::new(),
            system_fingerprints: Vec::new(),
            effective_price: None,
            probes: BTreeMap::new(),
            first_tokens: None,
            tiers_missing: BTreeMap::new(),
        };
        Lock {
            lock_version: LOCK_VERSION,
            modelpin_version: "0".to_owned(),
            config_digest: "d".to_owned(),
            pins: BTreeMap::from([("pin".to_owned(), locked)]),
        }
    }

    fn codes(knowledge: &Knowledge<'_>, id: &str) -> Vec<(Code, Level)> {
        knowledge
            .judge(id)
            .into_iter()
            .map(|f| (f.code, f.level))
            .collect()
    }

    #[test]
    fn verdicts_for_ids_without_pins() {
        let warn = [std::time::Duration::from_secs(90 * 86_400)];
        let moved = lock("gemini-9.9-pro", "gemini-9.9-flash");
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
        let knowledge = Knowledge::new(builtin(), &[], Some(&moved), now, &warn);
        assert_eq!(
            codes(&knowledge, "claude-3-opus-20240229"),
            [(Code::Retired, Level::Error)]
        );
        assert_eq!(
            codes(&knowledge, "gpt-9-2099-01-01"),
            [(Code::Unpinned, Level::Info)]
        );
        let got = codes(&knowledge, "gemini-9.9-pro");
        assert!(
            got.contains(&(Code::ServedDifferently, Level::Warning)),
            "{got:?}"
        );
        assert!(got.contains(&(Code::Alias, Level::Info)), "{got:?}");
    }

    #[test]
    fn mentions_keep_only_lifecycle_as_info() {
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
        let knowledge = Knowledge::new(builtin(), &[], None, now, &[]);
        let findings = knowledge.judge("claude-3-opus-20240229");
        for kind in [Kind::Comment, Kind::Identifier] {
            let got = Knowledge::for_kind(&findings, kind);
            assert_eq!(got.len(), 1);
            assert_eq!((got[0].code, got[0].level), (Code::Retired, Level::Info));
        }
        let alias = knowledge.judge("gpt-4o");
        assert!(Knowledge::for_kind(&alias, Kind::Comment).is_empty());
    }
}
