//! `modelpin deprecations`: each pin's lifecycle — retirement date, days left, replacement and
//! every source — from the built-in table, the feeds and `retires_on`. No provider is called.
//!
//! It exits as `check` would on the lifecycle alone: 1 when a listed pin is retired by the
//! provider's own word (or, with `--strict`, by third parties only, or retires inside a
//! `warn_before` window), 0 otherwise, in every format. `--data`
//! lists the table and judges no pin, so it exits 0. The human forms start with a header row.

use crate::text::{display_id, terminal};
use std::fmt::Write as _;
use std::path::Path;

use chrono::Utc;
use serde::Serialize;

use crate::audit::lifecycle::load_facts;
use crate::cli::{DeprecationsArgs, ListFormat as Format};
use crate::cmd::AppError;
use crate::cmd::{Output, emit, transport_for};
use crate::exit::Exit;
use crate::lifecycle::{Fact, Lifecycle, PinRef, SourceClass, Stage, builtin, resolve};

#[derive(Serialize)]
struct PinLifecycle<'a> {
    pin: &'a str,
    provider: &'a str,
    #[serde(flatten)]
    lifecycle: Lifecycle,
}

pub async fn run(
    config_path: &Path,
    args: &DeprecationsArgs,
    out: Output,
) -> Result<Exit, AppError> {
    let format = args.format;
    if args.data {
        emit(&render_data(builtin(), format));
        return Ok(Exit::Ok);
    }
    // Nothing here calls a provider: the keys' variables need not be set.
    let config = crate::config::load_without_keys(config_path)?;
    let within = args
        .within
        .as_deref()
        .map(|w| {
            crate::config::parse_duration(w)
                .map_err(|e| AppError::Usage(format!("--within {w}: {e}")))
        })
        .transpose()?;
    let transport = transport_for(&config)?;
    let facts = load_facts(&config, &transport).await;
    for warning in &facts.warnings {
        out.progress(&format!("warning: {warning}"));
    }
    let now = Utc::now();
    let rows: Vec<PinLifecycle> = config
        .pins
        .iter()
        .map(|pin| PinLifecycle {
            pin: &pin.id,
            provider: &pin.provider,
            lifecycle: resolve(
                &PinRef::from(pin),
                &facts.facts,
                now,
                &config.settings.warn_before,
            ),
        })
        .filter(|row| within.is_none_or(|w| due_within(&row.lifecycle, w)))
        .collect();
    let text = match format {
        Format::Json => json(&rows),
        Format::Human => render(&rows),
    };
    emit(&text);
    Ok(exit_code(
        rows.iter().map(|row| &row.lifecycle),
        args.strict,
    ))
}

/// 1 when a pin is retired by the provider's own word, or with `strict` retired by a third
/// party's or retiring inside a `warn_before` window (the warnings `check` gives); else 0. A pin deprecated without a date, or retiring further out than
/// every window, is worth knowing, not a failure.
fn exit_code<'a>(lives: impl IntoIterator<Item = &'a Lifecycle>, strict: bool) -> Exit {
    // A retirement only third parties state is the warning `check` gives it.
    let fails = |life: &Lifecycle| {
        (life.is_retired() && (strict || !life.secondary_only()))
            || (strict && life.window.is_some())
    };
    if lives.into_iter().any(fails) {
        Exit::Failed
    } else {
        Exit::Ok
    }
}

/// Retired already, or retiring within `window`.
fn due_within(life: &Lifecycle, window: std::time::Duration) -> bool {
    let days = i64::try_from(window.as_secs() / 86_400).unwrap_or(i64::MAX);
    life.is_retired() || life.days_left.is_some_and(|left| left <= days)
}

fn json<T: Serialize>(value: &T) -> String {
    let mut text = crate::text::json_inert(
        serde_json::to_string_pretty(value).expect("lifecycle types serialise"),
    );
    text.push('\n');
    text
}

/// Table rows, each with the lines indented beneath it: columns as wide as their longest cell
/// (the header's included), two spaces apart, no trailing spaces.
fn table<const N: usize>(header: [&str; N], rows: &[([String; N], Vec<String>)]) -> String {
    let header = header.map(str::to_owned);
    let cells: Vec<[String; N]> = rows.iter().map(|(cells, _)| cells.clone()).collect();
    let widths = crate::text::column_widths(&header, &cells);
    let line = |row: &[String; N]| crate::text::table_row(row, &widths);
    let mut out = String::new();
    let _ = writeln!(out, "{}", line(&header));
    for (cells, details) in rows {
        let _ = writeln!(out, "{}", line(cells));
        for detail in details {
            let _ = writeln!(out, "    {}", detail.trim_end());
        }
    }
    out
}

fn render(rows: &[PinLifecycle<'_>]) -> String {
    if rows.is_empty() {
        return "no pinned model retires in that window\n".to_owned();
    }
    let rows: Vec<([String; 3], Vec<String>)> = rows
        .iter()
        .map(|row| {
            let life = &row.lifecycle;
            let status = match life.stage {
                Stage::NoRecord => "no retirement on record".to_owned(),
                Stage::Deprecated => "deprecated, no date".to_owned(),
                Stage::Scheduled => format!(
                    "retires {} ({} left)",
                    life.retirement.map(|r| r.to_string()).unwrap_or_default(),
                    crate::words::count(life.days_left.unwrap_or_default().unsigned_abs(), "day")
                ),
                Stage::Retired => format!(
                    "RETIRED {}",
                    life.retirement.map(|r| r.to_string()).unwrap_or_default()
                ),
            };
            let mut details = Vec::new();
            if !life.replacement.is_empty() {
                details.push(format!(
                    "replacement: {}",
                    terminal(&life.replacement.join(", "))
                ));
            }
            for source in &life.sources {
                details.push(format!(
                    "{:?}: {} ({})",
                    source.role,
                    terminal(&source.source),
                    source.retirement
                ));
            }
            (
                [display_id(row.pin), display_id(&life.model), status],
                details,
            )
        })
        .collect();
    table(["PIN", "MODEL", "STATUS"], &rows)
}

fn render_data(facts: &[Fact], format: Format) -> String {
    if format == Format::Json {
        return json(&facts);
    }
    let rows: Vec<([String; 5], Vec<String>)> = facts
        .iter()
        .map(|fact| {
            let cells = [
                terminal(&fact.provider).into_owned(),
                fact.announced
                    .map_or_else(|| "-".to_owned(), |d| d.to_string()),
                fact.retirement.to_string(),
                match fact.class() {
                    SourceClass::Primary => "primary".to_owned(),
                    SourceClass::Secondary => "secondary".to_owned(),
                },
                terminal(fact.note.as_deref().unwrap_or("")).into_owned(),
            ];
            let replacement = if fact.replacement.is_empty() {
                "-".to_owned()
            } else {
                terminal(&fact.replacement.join(", ")).into_owned()
            };
            let mut details = vec![
                format!("models: {}", terminal(&fact.models.join(", "))),
                format!("replacement: {replacement}"),
                format!("source: {}", terminal(&fact.source)),
            ];
            if let Some(page) = &fact.primary {
                details.push(format!(
                    "provider's page: {} (read {})",
                    terminal(&page.url),
                    page.read
                ));
            }
            (cells, details)
        })
        .collect();
    table(
        ["PROVIDER", "ANNOUNCED", "RETIRES", "SOURCE", "NOTE"],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::{TimeZone as _, Utc};

    use super::{exit_code, render_data};
    use crate::cli::ListFormat;
    use crate::exit::Exit;
    use crate::lifecycle::{Lifecycle, PinRef, builtin, resolve};
    use crate::provider::ProviderKind;

    const DAY: u64 = 86_400;

    /// A pin of a model no table lists, retiring `days` from now by `retires_on` (none: no record).
    fn life(days: Option<i64>) -> Lifecycle {
        let now = Utc.with_ymd_and_hms(2026, 1, 10, 12, 0, 0).unwrap();
        let date = days.map(|d| now.date_naive() + chrono::Duration::days(d));
        let pin = PinRef {
            kind: ProviderKind::OpenAi,
            provider: "openai",
            model: "acme-chat-2099",
            accept: &[],
            retires_on: date,
        };
        let windows = [90, 30, 7].map(|d| Duration::from_secs(d * DAY));
        resolve(&pin, builtin(), now, &windows)
    }

    /// A pin of a model a feed row (no provider's page) says retired in 2025.
    fn third_party_retirement() -> Lifecycle {
        let now = Utc.with_ymd_and_hms(2026, 1, 10, 12, 0, 0).unwrap();
        let row = "[[fact]]\nprovider = \"openai\"\nmodels = [\"acme-chat-2099\"]\nretires = 2025-06-01\nsource = \"a forum post\"\n";
        let facts = crate::lifecycle::feeds::parse_feed(row.as_bytes(), None).unwrap();
        let pin = PinRef {
            kind: ProviderKind::OpenAi,
            provider: "openai",
            model: "acme-chat-2099",
            accept: &[],
            retires_on: None,
        };
        resolve(&pin, &facts, now, &[])
    }

    #[test]
    fn exit_codes_follow_check() {
        // (days to retirement, --strict) -> exit code
        for (days, strict, want) in [
            (None, false, Exit::Ok),
            (None, true, Exit::Ok),
            (Some(-3), false, Exit::Failed),
            (Some(0), false, Exit::Failed),
            (Some(10), false, Exit::Ok),
            (Some(10), true, Exit::Failed),
            (Some(89), true, Exit::Failed),
            (Some(400), true, Exit::Ok),
        ] {
            let got = exit_code([&life(days)], strict);
            assert_eq!(got, want, "{days:?} strict={strict}");
        }
        assert_eq!(exit_code([], true), Exit::Ok);
        // Retired by a third party's row only: a warning, failing only with --strict.
        let secondary = third_party_retirement();
        assert!(secondary.is_retired() && secondary.secondary_only());
        assert_eq!(exit_code([&secondary], false), Exit::Ok);
        assert_eq!(exit_code([&secondary], true), Exit::Failed);
        assert_eq!(
            exit_code([&life(Some(400)), &life(Some(-1))], false),
            Exit::Failed
        );
    }

    #[test]
    fn the_data_table_has_a_header_and_columns_that_line_up() {
        let text = render_data(builtin(), ListFormat::Human);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("PROVIDER  "), "{}", lines[0]);
        let retires = lines[0].find("RETIRES").unwrap();
        let rows: Vec<&str> = lines[1..]
            .iter()
            .copied()
            .filter(|l| !l.starts_with(' '))
            .collect();
        assert_eq!(rows.len(), builtin().len());
        assert!(
            rows.iter().all(|r| r.as_bytes()[retires - 1] == b' '
                && r.as_bytes()[retires].is_ascii_alphanumeric()),
            "{text}"
        );
        assert!(
            lines.iter().all(|l| !l.ends_with(' ')),
            "no trailing spaces"
        );
    }
}
