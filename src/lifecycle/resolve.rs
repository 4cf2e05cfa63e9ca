//! One pin's lifecycle from every fact about it: one effective date, every source as evidence.
//!
//! Sources disagree (Google moved Gemini 2.5 Pro from 2026-06-17 to 2026-12-01; OpenAI's
//! replacements changed between captures), so the choice is a fixed order, written down here:
//!
//! 1. The pin's own `retires_on` wins outright (its replacement still comes from the facts).
//! 2. A fact named in another matching fact's `supersedes` is out: a later capture of the same
//!    page, or the provider's page over a third party, as recorded in the table.
//! 3. Of the rest, only dated facts can set the date. They rank by how closely they match the
//!    pin (its own ID as written, then respelled, then a family, then an accepted snapshot, then
//!    an OpenRouter upstream),
//!    then by origin (the provider's own live answer over any table or feed), then by the later
//!    announcement, then by the later capture, then by the earlier date (warn sooner, not later).
//! 4. A "retired, date unknown" fact about the pin's own ID (or its family) beats a date that is
//!    still ahead: someone saw it gone. Without any date, the best remaining fact decides
//!    ("retired, date unknown" or "announced, no date").
//!
//! Every matching fact, superseded or not, is returned with its own date and its role.

use std::cmp::{Ordering, Reverse};
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize, Serializer};

pub use crate::lifecycle::model_id::Match;
use crate::lifecycle::model_id::match_fact;
use crate::lifecycle::{Fact, Origin, Primary, Retirement, SourceClass};
use crate::provider::ProviderKind;

/// What the resolver needs to know about a pin.
#[derive(Debug, Clone, Copy)]
pub struct PinRef<'a> {
    pub kind: ProviderKind,
    /// The `[providers.NAME]` table name.
    pub provider: &'a str,
    pub model: &'a str,
    /// Served IDs that count as this pin (may include `model`).
    pub accept: &'a [String],
    pub retires_on: Option<NaiveDate>,
}

impl<'a> From<&'a crate::config::Pin> for PinRef<'a> {
    fn from(pin: &'a crate::config::Pin) -> Self {
        PinRef {
            kind: pin.kind,
            provider: &pin.provider,
            model: &pin.model,
            accept: &pin.accept,
            retires_on: pin.retires_on,
        }
    }
}

crate::closed::closed_set! {
/// Where a pin stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// No source lists a retirement.
    NoRecord,
    /// Announced or deprecated, no date.
    Deprecated,
    /// A retirement date lies ahead.
    Scheduled,
    /// Past its retirement, or gone.
    Retired,
}
}

impl Stage {
    /// The name the report gives the stage (its JSON form).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::NoRecord => "no_record",
            Stage::Deprecated => "deprecated",
            Stage::Scheduled => "scheduled",
            Stage::Retired => "retired",
        }
    }
}

/// A `warn_before` window, shown as people write it (`30d`, `12h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WarnWindow(pub Duration);

impl Serialize for WarnWindow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl std::fmt::Display for WarnWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.0.as_secs();
        let unit = [(86_400, "d"), (3_600, "h"), (60, "m")]
            .into_iter()
            .find(|(size, _)| secs > 0 && secs.is_multiple_of(*size));
        match unit {
            Some((size, name)) => write!(f, "{}{name}", secs / size),
            None if self.0.subsec_nanos() == 0 => write!(f, "{secs}s"),
            None => write!(f, "{}ms", self.0.as_millis()),
        }
    }
}

/// What one source contributed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub role: Role,
    pub origin: Origin,
    pub provider: String,
    /// The source's ID that matched the pin.
    pub model: String,
    pub matched: Match,
    pub retirement: Retirement,
    pub announced: Option<NaiveDate>,
    pub captured: Option<NaiveDate>,
    pub replacement: Vec<String>,
    pub source: String,
    /// Whether the source is the provider's own word (or the project's).
    #[serde(rename = "source_class")]
    pub class: SourceClass,
    /// The provider's page the row was checked against, and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<Primary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How a source relates to the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Set the effective retirement.
    Decisive,
    /// Consistent with it.
    Agrees,
    /// Says something else and was outranked.
    Differs,
    /// Replaced by a later row (`supersedes`).
    Superseded,
}

/// A pin's lifecycle as of the `now` it was resolved for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lifecycle {
    pub model: String,
    pub stage: Stage,
    /// The effective retirement; `None` when no source lists one.
    pub retirement: Option<Retirement>,
    /// Calendar days (UTC) from today to the retirement day; negative once past.
    pub days_left: Option<i64>,
    pub replacement: Vec<String>,
    /// The narrowest `warn_before` window the retirement falls in, while still ahead.
    pub window: Option<WarnWindow>,
    /// Decisive first, then in rank order.
    pub sources: Vec<Evidence>,
    /// `primary` when the provider's own word (or `retires_on`) gives the effective retirement:
    /// the decisive source, or one that agrees on the same date. A retirement that only third
    /// parties state is reported as a warning at most. `None` when no source lists a
    /// retirement.
    #[serde(rename = "source_class", skip_serializing_if = "Option::is_none")]
    pub class: Option<SourceClass>,
}

impl Lifecycle {
    /// Whether only third parties say so: the effective stage is reported as a warning at most.
    #[must_use]
    pub fn secondary_only(&self) -> bool {
        self.class == Some(SourceClass::Secondary)
    }
}

impl Lifecycle {
    #[must_use]
    pub fn is_retired(&self) -> bool {
        self.stage == Stage::Retired
    }
}

/// Resolves one pin against every fact (built-in, feeds, provider signals) as of `now`.
pub fn resolve<'f>(
    pin: &PinRef<'_>,
    facts: impl IntoIterator<Item = &'f Fact>,
    now: DateTime<Utc>,
    warn_before: &[Duration],
) -> Lifecycle {
    let mut candidates = candidates(pin, facts);
    // An alias's row speaks for its dated snapshot only once the alias is gone.
    candidates.retain(|c| {
        c.matched != Match::Alias
            || c.fact.retirement == Retirement::Gone
            || c.fact.retirement.instant().is_some_and(|at| at <= now)
    });
    candidates.sort_by(|a, b| rank(b).cmp(&rank(a)).then_with(|| earlier_first(a, b)));
    let override_fact = pin.retires_on.map(|date| pin_fact(pin, date));
    let decisive = match &override_fact {
        Some(fact) => Some(Candidate {
            fact,
            matched: Match::Exact,
            model: pin.model,
            superseded: false,
        }),
        None => decisive(&candidates, now),
    };
    let retirement = decisive.map(|c| c.fact.retirement);
    let stage = stage(retirement, now);
    let sources = evidence(decisive.as_ref(), &candidates, retirement, stage);
    let class = class_of(&sources, retirement);
    Lifecycle {
        model: pin.model.to_owned(),
        stage,
        retirement,
        days_left: retirement
            .and_then(Retirement::date)
            .map(|day| (day - now.date_naive()).num_days()),
        replacement: replacement(decisive.as_ref(), &candidates),
        window: window(retirement, stage, now, warn_before),
        sources,
        class,
    }
}

/// `primary` when a primary source sets or confirms the effective retirement; `None` without one.
fn class_of(sources: &[Evidence], effective: Option<Retirement>) -> Option<SourceClass> {
    let effective = effective?;
    let confirms = |e: &&Evidence| match e.role {
        Role::Decisive => true,
        Role::Agrees => e.retirement == effective,
        Role::Differs | Role::Superseded => false,
    };
    let primary = sources
        .iter()
        .filter(confirms)
        .any(|e| e.class == SourceClass::Primary);
    Some(if primary {
        SourceClass::Primary
    } else {
        SourceClass::Secondary
    })
}

/// The best dated fact, unless a fact about the pin's own ID says it is already gone and the
/// date is still ahead; without dates, the best remaining fact.
fn decisive<'f>(ranked: &[Candidate<'f>], now: DateTime<Utc>) -> Option<Candidate<'f>> {
    let live = || ranked.iter().filter(|c| !c.superseded).copied();
    let dated = live().find(|c| c.fact.retirement.instant().is_some());
    let gone = live().find(|c| c.matched.strength() >= 3 && c.fact.retirement == Retirement::Gone);
    let past = |c: &Candidate<'_>| c.fact.retirement.instant().is_some_and(|at| at <= now);
    match (dated, gone) {
        (Some(dated), Some(gone)) if !past(&dated) => Some(gone),
        (Some(dated), _) => Some(dated),
        (None, Some(gone)) => Some(gone),
        (None, None) => live().next(),
    }
}

#[derive(Clone, Copy)]
struct Candidate<'f> {
    fact: &'f Fact,
    matched: Match,
    model: &'f str,
    superseded: bool,
}

fn candidates<'f>(
    pin: &PinRef<'_>,
    facts: impl IntoIterator<Item = &'f Fact>,
) -> Vec<Candidate<'f>> {
    let matched: Vec<(&Fact, Match, &str)> = facts
        .into_iter()
        .filter_map(|fact| match_fact(pin, fact).map(|(how, id)| (fact, how, id)))
        .collect();
    let superseded_ids: Vec<&str> = matched
        .iter()
        .flat_map(|(fact, _, _)| fact.supersedes.iter().map(String::as_str))
        .collect();
    matched
        .into_iter()
        .map(|(fact, matched, model)| Candidate {
            fact,
            matched,
            model,
            superseded: fact
                .id
                .as_deref()
                .is_some_and(|id| superseded_ids.contains(&id)),
        })
        .collect()
}

/// Higher is stronger; see the module docs for the order.
fn rank(c: &Candidate<'_>) -> (bool, u8, bool, Option<NaiveDate>, Option<NaiveDate>) {
    (
        !c.superseded,
        c.matched.strength(),
        c.fact.origin == Origin::Provider,
        c.fact.announced,
        c.fact.captured,
    )
}

/// Among equals, the earlier retirement first: a warning that comes too early costs less than
/// one that comes too late.
fn earlier_first(a: &Candidate<'_>, b: &Candidate<'_>) -> Ordering {
    let key = |c: &Candidate<'_>| c.fact.retirement.instant().map(Reverse);
    key(b).cmp(&key(a))
}

fn pin_fact(pin: &PinRef<'_>, date: NaiveDate) -> Fact {
    Fact {
        id: None,
        origin: Origin::Pin,
        provider: pin.provider.to_owned(),
        models: vec![pin.model.to_owned()],
        announced: None,
        retirement: Retirement::On(date),
        replacement: Vec::new(),
        source: "pins.toml `retires_on`".to_owned(),
        captured: None,
        supersedes: Vec::new(),
        note: None,
        price: None,
        primary: None,
    }
}

fn stage(retirement: Option<Retirement>, now: DateTime<Utc>) -> Stage {
    match retirement {
        None => Stage::NoRecord,
        Some(Retirement::Announced) => Stage::Deprecated,
        Some(Retirement::Gone) => Stage::Retired,
        Some(dated) if dated.instant().is_some_and(|at| at <= now) => Stage::Retired,
        Some(_) => Stage::Scheduled,
    }
}

/// The decisive fact's replacement, else the best one from a fact matched as closely (an
/// upstream's successor is not an OpenRouter slug).
fn replacement(decisive: Option<&Candidate<'_>>, ranked: &[Candidate<'_>]) -> Vec<String> {
    let Some(decisive) = decisive else {
        return Vec::new();
    };
    let strength = decisive.matched.strength();
    std::iter::once(decisive)
        .chain(
            ranked
                .iter()
                .filter(|c| !c.superseded && c.matched.strength() >= strength),
        )
        .map(|c| &c.fact.replacement)
        .find(|r| !r.is_empty())
        .cloned()
        .unwrap_or_default()
}

fn window(
    retirement: Option<Retirement>,
    stage: Stage,
    now: DateTime<Utc>,
    warn_before: &[Duration],
) -> Option<WarnWindow> {
    if stage != Stage::Scheduled {
        return None;
    }
    let left = (retirement?.instant()? - now).to_std().ok()?;
    warn_before
        .iter()
        .filter(|w| left <= **w)
        .min()
        .map(|w| WarnWindow(*w))
}

fn evidence(
    decisive: Option<&Candidate<'_>>,
    ranked: &[Candidate<'_>],
    effective: Option<Retirement>,
    stage: Stage,
) -> Vec<Evidence> {
    let is_decisive = |c: &Candidate<'_>| decisive.is_some_and(|d| std::ptr::eq(d.fact, c.fact));
    let pin_row = decisive.filter(|d| d.fact.origin == Origin::Pin);
    pin_row
        .into_iter()
        .chain(ranked.iter().filter(|c| is_decisive(c)))
        .chain(ranked.iter().filter(|c| !is_decisive(c)))
        .map(|c| {
            let role = if is_decisive(c) {
                Role::Decisive
            } else {
                role(c, effective, stage)
            };
            entry(c, role)
        })
        .collect()
}

fn role(c: &Candidate<'_>, effective: Option<Retirement>, stage: Stage) -> Role {
    if c.superseded {
        return Role::Superseded;
    }
    let agrees = match c.fact.retirement {
        Retirement::Announced => true,
        Retirement::Gone => stage == Stage::Retired,
        dated => dated.date() == effective.and_then(Retirement::date),
    };
    if agrees { Role::Agrees } else { Role::Differs }
}

fn entry(c: &Candidate<'_>, role: Role) -> Evidence {
    Evidence {
        role,
        origin: c.fact.origin,
        provider: c.fact.provider.clone(),
        model: c.model.to_owned(),
        matched: c.matched,
        retirement: c.fact.retirement,
        announced: c.fact.announced,
        captured: c.fact.captured,
        replacement: c.fact.replacement.clone(),
        source: c.fact.source.clone(),
        class: c.fact.class(),
        primary: c.fact.primary.clone(),
        note: c.fact.note.clone(),
    }
}

/// One sentence for a "model not found" finding: retired (when, per whom) or simply unknown.
#[must_use]
pub fn retirement_message(lifecycle: &Lifecycle) -> String {
    let model = &lifecycle.model;
    let Some(lead) = lifecycle.sources.first() else {
        return format!("unknown model `{model}`: no lifecycle source lists a retirement for it");
    };
    let source = &lead.source;
    let message = match (lifecycle.stage, lifecycle.retirement) {
        (Stage::Retired, Some(Retirement::Gone) | None) => {
            format!("`{model}` is retired (date unknown) per {source}")
        }
        (Stage::Retired, Some(when)) => format!("`{model}` was retired on {when} per {source}"),
        (Stage::Scheduled, Some(when)) => {
            format!("`{model}` is scheduled to retire on {when} per {source}")
        }
        _ => format!("`{model}` is deprecated, no retirement date announced, per {source}"),
    };
    if lifecycle.replacement.is_empty() {
        return message;
    }
    format!(
        "{message}; replacement: {}",
        lifecycle.replacement.join(" or ")
    )
}

#[cfg(test)]
mod tests;
