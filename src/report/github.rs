//! GitHub Actions output: workflow-command annotations on stdout, and a Markdown summary for
//! `$GITHUB_STEP_SUMMARY`.
//!
//! GitHub shows at most 10 annotations of each kind per step, so when there are more the first
//! nine are kept and a tenth says how many more the job summary lists. Messages are escaped as
//! the runner's toolkit does: `%`, CR and LF in the message; also `:` and `,` in properties.

use std::fmt::Write as _;

use crate::finding::{Code, Finding, Severity};
use crate::report::Report;
use crate::text;
use crate::text::github::{LIMIT, escape_data, escape_property};

/// The annotations. `file` is pins.toml as the workflow sees it; `line` finds a pin's line.
#[must_use]
pub fn render(report: &Report, file: &str, line: &dyn Fn(&str) -> Option<usize>) -> String {
    let mut out = String::new();
    let lock = report.lock_digest.as_deref().unwrap_or("none");
    let _ = writeln!(
        out,
        "::notice title={}::{}",
        escape_property("modelpin"),
        escape_data(&format!(
            "checked config {} against lock {}: {} ({})",
            report.config_digest,
            lock,
            report.status.as_str(),
            crate::words::count_of(report.pins.len(), "pin")
        ))
    );
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for pin in &report.pins {
        for f in &pin.findings {
            let annotation = annotation(&pin.id, f, file, line(&pin.id));
            match (f.severity, f.code) {
                (Some(Severity::Error), _) => errors.push(annotation),
                (Some(Severity::Warning), _) | (None, Code::Inconclusive) => {
                    warnings.push(annotation);
                }
                _ => {}
            }
        }
    }
    push_limited(&mut out, "error", errors);
    push_limited(&mut out, "warning", warnings);
    out
}

fn annotation(pin: &str, f: &Finding, file: &str, line: Option<usize>) -> String {
    let mut props = format!("file={}", escape_property(file));
    if let Some(line) = line {
        let _ = write!(props, ",line={line}");
    }
    let _ = write!(
        props,
        ",title={}",
        escape_property(&format!("modelpin {pin}: {}", f.code))
    );
    let text = match &f.action {
        Some(action) => format!("{}\n→ {action}", f.message),
        None => f.message.clone(),
    };
    format!("{props}::{}", escape_data(&text))
}

fn push_limited(out: &mut String, kind: &str, items: Vec<String>) {
    let total = items.len();
    let shown = if total > LIMIT { LIMIT - 1 } else { total };
    for item in items.into_iter().take(shown) {
        let _ = writeln!(out, "::{kind} {item}");
    }
    if total > shown {
        let _ = writeln!(
            out,
            "::{kind} title=modelpin::{}",
            escape_data(&format!(
                "{} more {kind} {}; the job summary lists them all",
                total - shown,
                crate::words::noun((total - shown) as u64, "finding")
            ))
        );
    }
}

/// The job summary in Markdown.
#[must_use]
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## modelpin: {}\n", report.status.as_str());
    let _ = writeln!(
        out,
        "Config `{}`, lock `{}`.\n",
        report.config_digest,
        report.lock_digest.as_deref().unwrap_or("none")
    );
    out.push_str("| pin | provider | model | status | served | calls | tokens | cost |\n|---|---|---|---|---|---|---|---|\n");
    for p in &report.pins {
        let served: Vec<String> = p
            .served_models
            .iter()
            .map(|(m, n)| format!("{} ×{n}", code(m)))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {}/{} | {} | {} |",
            cell(&text::display_id(&p.id)),
            cell(&p.provider),
            code(&p.model),
            p.status.as_str(),
            served.join(", "),
            p.calls.ok,
            p.calls.sent,
            p.tokens.input + p.tokens.output,
            p.cost_usd
                .map_or("unpriced".to_owned(), |c| format!("${c:.4}"))
        );
    }
    let findings: Vec<(&str, &Finding)> = report
        .pins
        .iter()
        .flat_map(|p| p.findings.iter().map(move |f| (p.id.as_str(), f)))
        .collect();
    if !findings.is_empty() {
        out.push_str("\n### Findings\n\n");
        for (pin, f) in findings {
            let _ = writeln!(
                out,
                "- **{}** `{}` ({}): {}",
                cell(&text::display_id(pin)),
                f.code,
                f.severity.map_or("-", Severity::as_str),
                cell(&f.message)
            );
            if let Some(action) = &f.action {
                let _ = writeln!(out, "  → {}", cell(action));
            }
        }
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "\n{}, {}, {}; exit {}.",
        crate::words::count(s.calls.sent, "call"),
        crate::words::count(s.tokens.input + s.tokens.output, "token"),
        s.cost_text(),
        report.exit_code.code()
    );
    out
}

/// A Markdown table cell or list item: escaped for the terminal-like log view (no raw control
/// character, no line break) and with `|` escaped so the table keeps its columns.
fn cell(raw: &str) -> String {
    text::terminal(raw).replace('|', "\\|")
}

/// An ID as a Markdown code span: shortened, escaped, and fenced with one backtick more than the
/// longest run inside it (CommonMark), so a backtick in the ID cannot end the span.
fn code(id: &str) -> String {
    let shown = cell(&text::display_id(id));
    let longest = shown.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if longest == 0 {
        format!("{fence}{shown}{fence}")
    } else {
        format!("{fence} {shown} {fence}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_the_runner_toolkit() {
        let cases = [
            ("plain", "plain", "plain"),
            ("50% off", "50%25 off", "50%25 off"),
            ("a\nb\r\nc", "a%0Ab%0D%0Ac", "a%0Ab%0D%0Ac"),
            ("x: y, z", "x: y, z", "x%3A y%2C z"),
            ("%0A literal", "%250A literal", "%250A literal"),
            (
                "::error::injected",
                "::error::injected",
                "%3A%3Aerror%3A%3Ainjected",
            ),
        ];
        for (raw, data, property) in cases {
            assert_eq!(escape_data(raw), data, "{raw:?}");
            assert_eq!(escape_property(raw), property, "{raw:?}");
        }
    }

    #[test]
    fn more_than_ten_of_a_kind_are_summarised_in_the_tenth() {
        let mut out = String::new();
        push_limited(
            &mut out,
            "error",
            (0..14).map(|i| format!("title=t::m{i}")).collect(),
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), LIMIT);
        assert!(lines[8].ends_with("m8"));
        assert!(lines[9].contains("5 more error findings"), "{}", lines[9]);
        let mut exact = String::new();
        push_limited(
            &mut exact,
            "warning",
            (0..10).map(|i| format!("title=t::m{i}")).collect(),
        );
        assert_eq!(
            exact.lines().count(),
            10,
            "exactly ten need no summary line"
        );
    }
}
