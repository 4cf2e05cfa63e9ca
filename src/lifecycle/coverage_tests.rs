//! The built-in table covers the public feeds: every dated row of the vendored snapshots of
//! LiteLLM's price map and deprecations.info (tests/fixtures/lifecycle/, provenance and filter in
//! SOURCES.md there) is in `builtin.toml` with the same provider, ID and date.

use std::collections::BTreeMap;

use super::feeds::parse_feed;
use super::{Fact, builtin};

/// The providers modelpin reaches: its kinds, and the APIs the table reaches as
/// openai-compatible (the schema comment at the top of builtin.toml).
const REACHED: [&str; 11] = [
    "openai",
    "anthropic",
    "gemini",
    "openrouter",
    "azure",
    "vertex",
    "deepseek",
    "mistral",
    "groq",
    "together",
    "bedrock",
];

const SNAPSHOTS: [&str; 2] = ["litellm-deprecations.json", "deprecations-info.json"];

fn snapshot(name: &str) -> Vec<Fact> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/lifecycle/");
    let bytes = std::fs::read(format!("{path}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"));
    parse_feed(&bytes, None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn covered(row: &Fact, model: &str) -> bool {
    builtin().iter().any(|fact| {
        fact.provider == row.provider
            && fact.retirement == row.retirement
            && fact.models.iter().any(|m| m.eq_ignore_ascii_case(model))
    })
}

#[test]
fn builtin_covers_every_snapshot_row() {
    for name in SNAPSHOTS {
        let rows = snapshot(name);
        assert!(rows.len() > 300, "{name}: {} rows", rows.len());
        let mut per_provider: BTreeMap<&str, usize> = BTreeMap::new();
        let mut missing = Vec::new();
        for row in &rows {
            assert!(
                REACHED.contains(&row.provider.as_str()) && row.retirement.date().is_some(),
                "{name}: the filter keeps only dated rows of reached providers: {row:?}"
            );
            *per_provider.entry(&row.provider).or_default() += 1;
            for model in &row.models {
                if !covered(row, model) {
                    missing.push(format!("{} {model} {}", row.provider, row.retirement));
                }
            }
        }
        println!("{name}: {} rows {per_provider:?}", rows.len());
        assert!(
            missing.is_empty(),
            "{name}: {} rows missing from builtin.toml (regenerate with `python3 tests/fixtures/lifecycle/snapshot.py rows`):\n{}",
            missing.len(),
            missing.join("\n")
        );
    }
}

/// The provider's own sites, by provider: a row's `primary` page must be on one of them.
const OWN_SITES: [(&str, &[&str]); 11] = [
    (
        "openai",
        &["platform.openai.com", "developers.openai.com", "openai.com"],
    ),
    (
        "anthropic",
        &[
            "docs.anthropic.com",
            "platform.claude.com",
            "docs.claude.com",
        ],
    ),
    ("gemini", &["ai.google.dev"]),
    ("vertex", &["cloud.google.com"]),
    ("azure", &["learn.microsoft.com"]),
    ("bedrock", &["docs.aws.amazon.com"]),
    ("groq", &["console.groq.com"]),
    ("together", &["docs.together.ai"]),
    ("mistral", &["docs.mistral.ai"]),
    ("deepseek", &["api-docs.deepseek.com"]),
    ("openrouter", &["openrouter.ai"]),
];

/// Only a row that cites the provider's own page can raise an error (see `SourceClass`): every
/// `primary` page is on that provider's own site, with the day it was read; every other row is
/// secondary, and a retirement it alone states is a warning at most.
#[test]
fn error_capable_rows_cite_the_providers_own_page() {
    use super::{Origin, SourceClass};
    let mut primary = 0;
    for fact in builtin() {
        assert_eq!(fact.origin, Origin::Builtin);
        let Some(page) = &fact.primary else {
            assert_eq!(fact.class(), SourceClass::Secondary, "{:?}", fact.id);
            continue;
        };
        primary += 1;
        assert_eq!(fact.class(), SourceClass::Primary);
        let host = page
            .url
            .strip_prefix("https://")
            .and_then(|rest| rest.split(['/', '#']).next())
            .unwrap_or_default();
        let sites = OWN_SITES
            .iter()
            .find(|(provider, _)| *provider == fact.provider)
            .map(|(_, sites)| *sites)
            .unwrap_or_default();
        assert!(
            sites.contains(&host),
            "row {:?} ({}) cites {} as the provider's own page",
            fact.id,
            fact.provider,
            page.url
        );
        let first = chrono::NaiveDate::from_ymd_opt(2023, 1, 1).unwrap();
        assert!(
            first <= page.read && page.read <= chrono::Utc::now().date_naive(),
            "{:?} read {}",
            fact.id,
            page.read
        );
    }
    assert!(
        primary > 0,
        "some rows are checked against the provider's page"
    );
}

/// A retirement only third parties state is a warning in `scan` and `check`; the provider's own
/// page makes it an error.
#[test]
fn a_secondary_retirement_is_a_warning_and_a_primary_one_an_error() {
    use chrono::TimeZone;

    use crate::scan::judge::{Code, Knowledge, Level};
    let after_all = chrono::Utc.with_ymd_and_hms(2031, 1, 1, 0, 0, 0).unwrap();
    let knowledge = Knowledge::new(builtin(), &[], None, after_all, &[]);
    let level_of = |id: &str| {
        knowledge
            .judge(id)
            .into_iter()
            .find(|f| f.code == Code::Retired)
            .map(|f| f.level)
    };
    let mut seen = (0, 0);
    for fact in builtin().iter().filter(|f| f.provider == "openai") {
        // Plain IDs: a fine-tune (`ft:`) or a family (`*`) is not what scan finds in code.
        let plain = |m: &&String| {
            m.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
        };
        let Some(id) = fact.models.iter().find(plain) else {
            continue;
        };
        let rows: Vec<&Fact> = builtin()
            .iter()
            .filter(|f| f.provider == "openai" && f.models.contains(id))
            .collect();
        let want = if rows.iter().all(|f| f.primary.is_some()) {
            seen.0 += 1;
            Level::Error
        } else if rows.iter().all(|f| f.primary.is_none()) {
            seen.1 += 1;
            Level::Warning
        } else {
            continue;
        };
        assert_eq!(level_of(id), Some(want), "{id}");
    }
    assert!(seen.0 > 0 && seen.1 > 0, "{seen:?}");
}
