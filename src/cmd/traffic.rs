//! `modelpin traffic FILE`: judges an exported OTLP/JSON file of GenAI spans against the pins,
//! with the same findings, formats and exit codes as `check` — for CI, backfill, or a user
//! without a daemon. No provider is called and no key is needed.

use std::path::Path;

use serde_json::Value;

use crate::audit::lifecycle::Facts;
use crate::cli::Format;
use crate::cmd::AppError;
use crate::cmd::{Output, emit};
use crate::exit::Exit;
use crate::report::human;
use crate::traffic::spans::{Extracted, extract};

/// Largest file read: an export of a few million spans.
const MAX_FILE: u64 = 512 * 1024 * 1024;

pub fn run(
    config_path: &Path,
    file: &Path,
    format: Format,
    strict: bool,
    out: Output,
) -> Result<Exit, AppError> {
    let config = crate::config::load_without_keys(config_path)?;
    crate::cmd::warn_config(&config, out);
    let lock = crate::lock::read(&config.settings.lockfile)?;
    let mut extracted = read_spans(file)?;
    extracted.spans = crate::traffic::spans::masked(extracted.spans, &config);
    let judged = crate::traffic::judge(
        &config,
        lock.as_ref(),
        &extracted.spans,
        &Facts::builtin_only(),
        strict,
    );
    out.progress(&format!(
        "traffic: {} in {}: {} GenAI, {} matching no pin{}",
        human::plural(extracted.seen, "span"),
        file.display(),
        extracted.spans.len(),
        judged.unmatched,
        if extracted.malformed > 0 {
            format!(", {} malformed and skipped", extracted.malformed)
        } else {
            String::new()
        }
    ));
    for line in unmatched_lines(&judged.unmatched_pairs) {
        out.progress(&line);
    }
    let mut report = judged.report;
    if report.pins.is_empty() {
        out.progress(
            "traffic: no span matched a pin (a pin matches spans that asked for its `model` from its provider kind; `openai-compatible` pins match `openai` spans, and `[traffic] provider_names` adds others): nothing was judged",
        );
        report.exit_code = Exit::Inconclusive;
    }
    let text = match format {
        Format::Human => human::render_with(
            &report,
            human::Detail::for_stdout(out.verbose).for_traffic(),
        ),
        other => crate::cmd::check::render(&config, &report, other),
    };
    emit(&text);
    if format == Format::Github {
        crate::cmd::check::append_step_summary(&report, out);
    }
    Ok(report.exit_code)
}

/// (requested model, provider) pairs listed when spans match no pin; the rest are counted.
const UNMATCHED_SHOWN: usize = 10;

/// "seen but matching no pin" with each (requested model, provider) pair and its count.
fn unmatched_lines(pairs: &[(crate::traffic::Unmatched, u64)]) -> Vec<String> {
    if pairs.is_empty() {
        return Vec::new();
    }
    let mut lines =
        vec!["traffic: seen but matching no pin (requested model · provider):".to_owned()];
    let name = |v: &Option<String>| {
        v.as_deref()
            .map_or("(not named)".to_owned(), crate::text::display_id)
    };
    for (pair, n) in pairs.iter().take(UNMATCHED_SHOWN) {
        lines.push(format!(
            "  {} · {} ×{n}",
            name(&pair.requested),
            name(&pair.provider)
        ));
    }
    if pairs.len() > UNMATCHED_SHOWN {
        let rest: u64 = pairs[UNMATCHED_SHOWN..].iter().map(|(_, n)| n).sum();
        let more = (pairs.len() - UNMATCHED_SHOWN) as u64;
        lines.push(format!(
            "  … and {more} more {} ({})",
            crate::words::noun(more, "pair"),
            human::plural(rest, "span")
        ));
    }
    lines
}

/// One OTLP/JSON export request per file, or one per line (the Collector's file exporter).
fn read_spans(file: &Path) -> Result<Extracted, AppError> {
    let fail = |e: &dyn std::fmt::Display| {
        AppError::Failed(format!("cannot read {}: {e}", file.display()))
    };
    let size = std::fs::metadata(file).map_err(|e| fail(&e))?.len();
    if size > MAX_FILE {
        return Err(AppError::Usage(format!(
            "{} is {size} bytes; at most {MAX_FILE} are read (split the export)",
            file.display()
        )));
    }
    let text = std::fs::read_to_string(file).map_err(|e| fail(&e))?;
    let documents: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(one) => vec![one],
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, line)| {
                serde_json::from_str(line).map_err(|e| {
                    AppError::Usage(format!("{}:{}: not OTLP/JSON: {e}", file.display(), i + 1))
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let mut all = Extracted::default();
    for document in &documents {
        let one = extract(document);
        all.seen += one.seen;
        all.malformed += one.malformed;
        all.spans.extend(one.spans);
    }
    Ok(all)
}
