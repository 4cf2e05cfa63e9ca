//! modelpin's own fact format: `builtin.toml`, and any user feed written the same way.
//!
//! The built-in table and a user's table share one strict reader, so a typo in either is an
//! error naming the row rather than a fact silently dropped. The schema is documented at the top
//! of `builtin.toml`.

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use toml::value::Datetime;

use crate::lifecycle::feeds::FeedError;
use crate::lifecycle::{Fact, Origin, Primary, Retirement};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    fact: Vec<RawFact>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFact {
    id: Option<String>,
    provider: String,
    models: Vec<String>,
    announced: Option<Datetime>,
    retires: Option<Datetime>,
    status: Option<RawStatus>,
    replacement: Option<OneOrMany>,
    source: String,
    captured: Option<Datetime>,
    #[serde(default)]
    supersedes: Vec<String>,
    note: Option<String>,
    primary: Option<String>,
    read: Option<Datetime>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawStatus {
    Deprecated,
    Retired,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Parses a whole table; the first invalid row is the error.
pub(crate) fn parse(text: &str, origin: Origin) -> Result<Vec<Fact>, FeedError> {
    let raw: RawTable = toml::from_str(text)?;
    let mut ids = HashSet::new();
    raw.fact
        .into_iter()
        .enumerate()
        .map(|(index, row)| {
            let id = row.id.clone();
            let invalid = |reason: String| FeedError::InvalidFact {
                index,
                id: id.clone(),
                reason,
            };
            if let Some(id) = row.id.as_ref().filter(|id| !ids.insert((*id).clone())) {
                return Err(invalid(format!("duplicate id `{id}`")));
            }
            fact(row, origin).map_err(invalid)
        })
        .collect()
}

fn fact(row: RawFact, origin: Origin) -> Result<Fact, String> {
    let provider = row.provider.trim().to_ascii_lowercase();
    if provider.is_empty() {
        return Err("`provider` is empty".to_owned());
    }
    check_models(&row.models)?;
    if row.source.trim().is_empty() {
        return Err("`source` is empty".to_owned());
    }
    let announced = optional_date(row.announced.as_ref(), "announced")?;
    let retirement = retirement(row.retires.as_ref(), row.status)?;
    if let (Some(announced), Some(retires)) = (announced, retirement.date())
        && retires < announced
    {
        return Err(format!(
            "retires {retires} before it was announced {announced}"
        ));
    }
    Ok(Fact {
        id: row.id,
        origin,
        provider,
        models: row.models,
        announced,
        retirement,
        replacement: match row.replacement {
            None => Vec::new(),
            Some(OneOrMany::One(one)) => vec![one],
            Some(OneOrMany::Many(many)) => many,
        },
        source: row.source,
        captured: optional_date(row.captured.as_ref(), "captured")?,
        supersedes: row.supersedes,
        note: row.note,
        price: None,
        primary: primary(row.primary, row.read.as_ref())?,
    })
}

/// `primary` (the provider's own page, an `https://` URL) and `read` (the day it was read)
/// come together or not at all.
fn primary(url: Option<String>, read: Option<&Datetime>) -> Result<Option<Primary>, String> {
    match (url, read) {
        (None, None) => Ok(None),
        (Some(url), Some(read)) => {
            if !url.starts_with("https://") || url.contains(char::is_whitespace) {
                return Err(format!("`primary = \"{url}\"` must be one https:// URL"));
            }
            let read = date(read).ok_or_else(|| format!("`read = {read}` must be a date"))?;
            Ok(Some(Primary { url, read }))
        }
        (Some(_), None) => Err("`primary` needs `read`, the day the page was read".to_owned()),
        (None, Some(_)) => Err("`read` belongs to a `primary` page; name the page".to_owned()),
    }
}

fn check_models(models: &[String]) -> Result<(), String> {
    if models.is_empty() {
        return Err("`models` is empty".to_owned());
    }
    for model in models {
        let stem = model.strip_suffix('*').unwrap_or(model);
        if stem.trim().is_empty() || stem.contains('*') || stem.trim() != stem {
            return Err(format!(
                "model `{model}`: IDs are non-empty, unpadded, with `*` only at the end"
            ));
        }
    }
    Ok(())
}

fn retirement(retires: Option<&Datetime>, status: Option<RawStatus>) -> Result<Retirement, String> {
    match (retires, status) {
        (Some(retires), None) => instant(retires).ok_or_else(|| {
            format!("`retires = {retires}` must be a date or a date-time with an offset")
        }),
        (None, Some(RawStatus::Deprecated)) => Ok(Retirement::Announced),
        (None, Some(RawStatus::Retired)) => Ok(Retirement::Gone),
        (Some(_), Some(_)) => Err("give `retires` or `status`, not both".to_owned()),
        (None, None) => {
            Err("give `retires` (a date) or `status` (deprecated | retired)".to_owned())
        }
    }
}

fn instant(value: &Datetime) -> Option<Retirement> {
    if let Some(date) = date(value) {
        return Some(Retirement::On(date));
    }
    if value.date.is_none() || value.time.is_none() || value.offset.is_none() {
        return None;
    }
    DateTime::parse_from_rfc3339(&value.to_string())
        .ok()
        .map(|at| Retirement::At(at.with_timezone(&Utc)))
}

fn optional_date(value: Option<&Datetime>, key: &str) -> Result<Option<NaiveDate>, String> {
    value
        .map(|v| date(v).ok_or_else(|| format!("`{key} = {v}` must be a date")))
        .transpose()
}

fn date(value: &Datetime) -> Option<NaiveDate> {
    match (value.date, value.time, value.offset) {
        (Some(d), None, None) => {
            NaiveDate::from_ymd_opt(i32::from(d.year), u32::from(d.month), u32::from(d.day))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone, Utc};

    use super::parse;
    use crate::lifecycle::feeds::FeedError;
    use crate::lifecycle::{Origin, Retirement};

    #[test]
    fn a_full_row_and_a_timestamp() {
        let facts = parse(
            r#"
[[fact]]
id = "deepseek"
provider = "DeepSeek"
models = ["deepseek-chat"]
announced = 2026-04-24
retires = 2026-07-24T15:59:00Z
replacement = "deepseek-v4-flash"
source = "api-docs.deepseek.com"
captured = 2026-05-01
supersedes = ["older"]
note = "n"
"#,
            Origin::Feed,
        )
        .unwrap();
        let fact = &facts[0];
        assert_eq!(fact.provider, "deepseek");
        assert_eq!(fact.origin, Origin::Feed);
        assert_eq!(
            fact.retirement,
            Retirement::At(Utc.with_ymd_and_hms(2026, 7, 24, 15, 59, 0).unwrap())
        );
        assert_eq!(fact.announced, NaiveDate::from_ymd_opt(2026, 4, 24));
        assert_eq!(fact.replacement, ["deepseek-v4-flash"]);
        assert_eq!(fact.supersedes, ["older"]);
    }

    fn error(row: &str) -> String {
        let text = format!("[[fact]]\nprovider = \"openai\"\nsource = \"s\"\n{row}\n");
        match parse(&text, Origin::Feed) {
            Err(FeedError::InvalidFact { reason, .. }) => reason,
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn invalid_rows_are_errors_naming_the_problem() {
        let table = [
            ("models = []\nretires = 2026-01-01", "`models` is empty"),
            ("models = [\"a*b\"]\nretires = 2026-01-01", "model `a*b`"),
            ("models = [\"*\"]\nretires = 2026-01-01", "model `*`"),
            ("models = [\"a\"]", "give `retires` (a date)"),
            (
                "models = [\"a\"]\nretires = 2026-01-01\nstatus = \"retired\"",
                "not both",
            ),
            ("models = [\"a\"]\nretires = 2026-01-01T10:00:00", "offset"),
            (
                "models = [\"a\"]\nretires = 2026-01-01\nannounced = 2026-02-01",
                "before",
            ),
            (
                "models = [\"a\"]\nretires = 2026-01-01\ncaptured = 2026-01-01T00:00:00Z",
                "`captured",
            ),
        ];
        for (row, want) in table {
            let got = error(row);
            assert!(got.contains(want), "{row:?}: {got}");
        }
    }

    #[test]
    fn unknown_keys_and_bad_status_are_toml_errors() {
        for row in [
            "models = [\"a\"]\nretires = 2026-01-01\nretire = 1",
            "models = [\"a\"]\nstatus = \"gone\"",
        ] {
            let text = format!("[[fact]]\nprovider = \"openai\"\nsource = \"s\"\n{row}\n");
            assert!(
                matches!(parse(&text, Origin::Feed), Err(FeedError::Toml(_))),
                "{row}"
            );
        }
    }

    #[test]
    fn duplicate_ids_are_errors() {
        let row = "[[fact]]\nid = \"x\"\nprovider = \"openai\"\nmodels = [\"a\"]\nretires = 2026-01-01\nsource = \"s\"\n";
        let got = parse(&format!("{row}{row}"), Origin::Feed);
        assert!(
            matches!(got, Err(FeedError::InvalidFact { index: 1, .. })),
            "{got:?}"
        );
    }
}
