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
