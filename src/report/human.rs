//! The human form: one line per pin, then each finding with its evidence.

use std::fmt::Write as _;

use crate::finding::{Finding, Severity};
use crate::report::{PinReport, Report};

/// Longest evidence line printed; the JSON report has it all.
const EVIDENCE_WIDTH: usize = 240;

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
            .map(|(id, n)| format!("{id} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    [
        pin.id.clone(),
        pin.provider.clone(),
        pin.model.clone(),
        pin.status.as_str().to_uppercase(),
        served,
        format!("{}/{}", pin.calls.ok, pin.calls.sent),
        pin.cost_usd.map_or("-".to_owned(), |c| format!("${c:.4}")),
    ]
}

fn push_row(out: &mut String, cells: &[String; 7], widths: &[usize]) {
    let mut line = String::new();
    for (cell, width) in cells.iter().zip(widths) {
        let _ = write!(line, "{cell:<width$}  ");
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
    let _ = writeln!(out, "  {mark} {}: {}", finding.code, finding.message);
    let mut evidence = finding.evidence.to_string();
    if evidence.chars().count() > EVIDENCE_WIDTH {
        evidence = evidence.chars().take(EVIDENCE_WIDTH).collect::<String>() + "…";
    }
    let _ = writeln!(out, "        evidence: {evidence}");
}

fn short_digest(digest: &str) -> String {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    format!("sha256:{}", hex.chars().take(12).collect::<String>())
}
