//! `modelpin deprecations`: each pin's lifecycle — retirement date, days left, replacement and
//! every source — from the built-in table, the feeds and `retires_on`. No provider is called.

use crate::text::{display_id, terminal};
use std::fmt::Write as _;
use std::path::Path;

use chrono::Utc;
use serde::Serialize;

use crate::audit::lifecycle::load_facts;
use crate::cli::ListFormat as Format;
use crate::cmd::AppError;
use crate::cmd::{Output, emit, transport_for};
use crate::exit::Exit;
use crate::lifecycle::{Fact, Lifecycle, PinRef, Stage, builtin, resolve};

#[derive(Serialize)]
struct PinLifecycle<'a> {
    pin: &'a str,
    provider: &'a str,
    #[serde(flatten)]
    lifecycle: Lifecycle,
}

pub async fn run(
    config_path: &Path,
    within: Option<&str>,
    data: bool,
    format: Format,
    out: Output,
) -> Result<Exit, AppError> {
    if data {
        emit(&render_data(builtin(), format));
        return Ok(Exit::Ok);
    }
    // Nothing here calls a provider: the keys' variables need not be set.
    let config = crate::config::load_without_keys(config_path)?;
    let within = within
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
    Ok(Exit::Ok)
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

fn render(rows: &[PinLifecycle<'_>]) -> String {
    if rows.is_empty() {
        return "no pinned model retires in that window\n".to_owned();
    }
    let mut out = String::new();
    for row in rows {
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
        let _ = writeln!(
            out,
            "{:<20} {:<40} {status}",
            display_id(row.pin),
            display_id(&life.model)
        );
        if !life.replacement.is_empty() {
            let _ = writeln!(
                out,
                "    replacement: {}",
                terminal(&life.replacement.join(", "))
            );
        }
        for source in &life.sources {
            let _ = writeln!(
                out,
                "    {:?}: {} ({})",
                source.role,
                terminal(&source.source),
                source.retirement
            );
        }
    }
    out
}

fn render_data(facts: &[Fact], format: Format) -> String {
    if format == Format::Json {
        return json(&facts);
    }
    let mut out = String::new();
    for fact in facts {
        let _ = writeln!(
            out,
            "{:<11} {:<10} {:<24} {}\n    models: {}\n    replacement: {}\n    source: {}",
            fact.provider,
            fact.announced
                .map_or_else(|| "-".to_owned(), |d| d.to_string()),
            fact.retirement.to_string(),
            terminal(fact.note.as_deref().unwrap_or("")),
            terminal(&fact.models.join(", ")),
            if fact.replacement.is_empty() {
                "-".to_owned()
            } else {
                fact.replacement.join(", ")
            },
            fact.source
        );
    }
    out
}
