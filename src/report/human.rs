//! The human form: one line per pin, then each finding with its evidence.
//!
//! Everything a provider or the config controls goes through `text::display_id` or
//! `text::terminal` here, where it is written: no control character reaches the terminal raw and
//! no outside text can begin a line. Cells are padded by hand, since `format!`'s width argument
//! panics past 65,535.

use std::fmt::Write as _;

use crate::finding::{Finding, Severity};
use crate::report::{PinReport, Report};
use crate::text::{bounded, display_id, terminal};

/// Longest evidence line printed; the JSON report has it all.
const EVIDENCE_WIDTH: usize = 240;

/// Longest finding message printed, in characters.
const MESSAGE_WIDTH: usize = 1000;

#[must_use]
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let lock = report
        .lock_digest
        .as_deref()
        .map_or("none".to_owned(), short_digest);
    let _ = writeln!(
        out,
        "modelpin check · config {} · lock {}\n",
        short_digest(&report.config_digest),
        lock
    );
    let rows: Vec<[String; 7]> = report.pins.iter().map(row).collect();
    let header = [
        "PIN", "PROVIDER", "MODEL", "STATUS", "SERVED", "CALLS", "COST",
    ]
    .map(String::from);
    let widths: Vec<usize> = (0..7)
        .map(|i| {
            rows.iter()
                .chain([&header])
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    push_row(&mut out, &header, &widths);
    for (pin, cells) in report.pins.iter().zip(&rows) {
        push_row(&mut out, cells, &widths);
        for finding in &pin.findings {
            push_finding(&mut out, finding);
        }
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "\n{} pins: {} ok, {} warning, {} drift, {} inconclusive · {} calls · {} tokens · ${:.4} · exit {}",
        s.pins,
        s.ok,
        s.warning,
        s.drift,
        s.inconclusive,
        s.calls.sent,
        s.tokens.input + s.tokens.output,
        s.cost_usd,
        report.exit_code.code()
    );
    out
}

fn row(pin: &PinReport) -> [String; 7] {
    let served = if pin.served_models.is_empty() {
        "-".to_owned()
    } else {
        pin.served_models
            .iter()
            .map(|(id, n)| format!("{} ×{n}", display_id(id)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    [
        display_id(&pin.id),
        display_id(&pin.provider),
        display_id(&pin.model),
        pin.status.as_str().to_uppercase(),
        served,
        format!("{}/{}", pin.calls.ok, pin.calls.sent),
        pin.cost_usd.map_or("-".to_owned(), |c| format!("${c:.4}")),
    ]
}

fn push_row(out: &mut String, cells: &[String; 7], widths: &[usize]) {
    let mut line = String::new();
    for (cell, width) in cells.iter().zip(widths) {
        line.push_str(cell);
        let pad = width.saturating_sub(cell.chars().count()) + 2;
        line.extend(std::iter::repeat_n(' ', pad));
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

fn push_finding(out: &mut String, finding: &Finding) {
    let mark = match finding.severity {
        Some(Severity::Error) => "error",
        Some(Severity::Warning) => "warn ",
        Some(Severity::Info) => "info ",
        None => "?    ",
    };
    let _ = writeln!(
        out,
        "  {mark} {}: {}",
        finding.code,
        bounded(&terminal(&finding.message), MESSAGE_WIDTH)
    );
    let mut evidence = terminal(&finding.evidence.to_string()).into_owned();
    if evidence.chars().count() > EVIDENCE_WIDTH {
        evidence = evidence.chars().take(EVIDENCE_WIDTH).collect::<String>() + "…";
    }
    let _ = writeln!(out, "        evidence: {evidence}");
}

fn short_digest(digest: &str) -> String {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    format!("sha256:{}", hex.chars().take(12).collect::<String>())
}
