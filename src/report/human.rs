//! The human form: one line per pin, then each finding with its evidence as `key: value` lines
//! and what to do next. A terminal too narrow for the table gets one block per pin instead.
//!
//! Everything a provider or the config controls goes through `text::display_id` or
//! `text::terminal` here, where it is written: no control character reaches the terminal raw and
//! no outside text can begin a line. Cells are padded by hand, since `format!`'s width argument
//! panics past 65,535.

use crate::finding::moved::WHAT_MOVED;
use std::fmt::Write as _;

use serde_json::Value;

use crate::finding::headline::evidence_lines;
use crate::finding::{Code, Finding, Severity};
use crate::report::{PinReport, Report};
use crate::text::{bounded, display_id, line_start, terminal};

/// Longest evidence line shown unless verbose.
const EVIDENCE_WIDTH: usize = 160;

/// How much of each finding's evidence to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Detail {
    /// Every evidence line, uncut (`-v`).
    pub verbose: bool,
    /// Columns available; `None` when not writing to a terminal.
    pub width: Option<usize>,
    /// The report judges traffic spans (`modelpin traffic`), not probe calls.
    pub traffic: bool,
}

impl Detail {
    /// The width of the terminal stdout is, if it is one (`COLUMNS` wins when set).
    #[must_use]
    pub fn for_stdout(verbose: bool) -> Detail {
        use std::io::IsTerminal as _;
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .or_else(|| {
                std::io::stdout()
                    .is_terminal()
                    .then(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
                    .flatten()
            });
        Detail {
            verbose,
            width,
            traffic: false,
        }
    }

    /// The same, for a report judged from traffic: its own header, spans counted as spans.
    #[must_use]
    pub fn for_traffic(self) -> Detail {
        Detail {
            traffic: true,
            ..self
        }
    }
}

/// Longest finding message printed, in characters.
const MESSAGE_WIDTH: usize = 1000;

#[must_use]
pub fn render(report: &Report) -> String {
    render_with(report, Detail::default())
}

#[must_use]
pub fn render_with(report: &Report, detail: Detail) -> String {
    let mut out = String::new();
    let lock = report
        .lock_digest
        .as_deref()
        .map_or("none".to_owned(), short_digest);
    let (command, unit) = if detail.traffic {
        ("modelpin traffic", "span")
    } else {
        ("modelpin check", "call")
    };
    let _ = writeln!(
        out,
        "{command} · config {} · lock {}\n",
        short_digest(&report.config_digest),
        lock
    );
    let rows: Vec<[String; 7]> = report.pins.iter().map(row).collect();
    let header = [
        "PIN",
        "PROVIDER",
        "MODEL",
        "STATUS",
        "SERVED",
        if detail.traffic { "SPANS" } else { "CALLS" },
        "COST",
    ]
    .map(String::from);
    let widths = crate::text::column_widths(&header, &rows);
    let table: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    let stacked = detail.width.is_some_and(|w| table > w);
    if !stacked {
        push_row(&mut out, &header, &widths);
    }
    for (pin, cells) in report.pins.iter().zip(&rows) {
        if stacked {
            push_block(&mut out, &header, cells);
        } else {
            push_row(&mut out, cells, &widths);
        }
        for finding in &pin.findings {
            push_finding(&mut out, finding, detail);
        }
    }
    let s = &report.summary;
    let cost = s.cost_text();
    let _ = writeln!(
        out,
        "\n{}: {} ok, {} warning, {} drift, {} inconclusive · {} · {} · {cost} · exit {}",
        plural(s.pins, "pin"),
        s.ok,
        s.warning,
        s.drift,
        s.inconclusive,
        plural(s.calls.sent, unit),
        plural(s.tokens.input.saturating_add(s.tokens.output), "token"),
        report.exit_code.code()
    );
    out
}

/// `1 pin`, `2 pins`.
#[must_use]
pub fn plural(n: u64, word: &str) -> String {
    crate::words::count(n, word)
}

/// Cost as every place shows it: dollars, or `unpriced` when neither the provider nor a `price`
/// says.
fn money(cost: Option<f64>) -> String {
    cost.map_or_else(|| "unpriced".to_owned(), |c| format!("${c:.4}"))
}

/// A pin as `HEADER: value` lines, for terminals too narrow for the table.
fn push_block(out: &mut String, header: &[String; 7], cells: &[String; 7]) {
    let _ = writeln!(out, "{}", line_start(&cells[0]));
    for (name, value) in header.iter().zip(cells).skip(1) {
        let _ = writeln!(out, "  {}: {value}", name.to_lowercase());
    }
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
        money(pin.cost_usd),
    ]
}

fn push_row(out: &mut String, cells: &[String; 7], widths: &[usize]) {
    let mut line = String::new();
    for (cell, width) in cells.iter().zip(widths) {
        line.push_str(cell);
        let pad = width.saturating_sub(cell.chars().count()) + 2;
        line.extend(std::iter::repeat_n(' ', pad));
    }
    out.push_str(&line_start(line.trim_end()));
    out.push('\n');
}

fn push_finding(out: &mut String, finding: &Finding, detail: Detail) {
    let mark = match finding.severity {
        Some(Severity::Error) => "error",
        Some(Severity::Warning) => "warn ",
        Some(Severity::Info) => "info ",
        None => "note ",
    };
    let _ = writeln!(
        out,
        "  {mark} {}: {}",
        finding.code,
        bounded(&terminal(&finding.message), MESSAGE_WIDTH)
    );
    let mut all = evidence_lines(&finding.evidence);
    let moved = what_moved(finding);
    if !moved.is_empty() {
        all.retain(|(path, _)| path != WHAT_MOVED);
    }
    let every = || {
        all.iter()
            .map(|(path, value)| format!("{path}: {value}"))
            .collect::<Vec<_>>()
    };
    // What moved comes first, a line each; then every line if verbose, else the decisive ones
    // (none when what moved is said: it is what decides a drift).
    let shown_of_all = match (detail.verbose, moved.is_empty()) {
        (true, _) => every(),
        (false, true) => finding.headline(&all),
        (false, false) => Vec::new(),
    };
    let hidden = all.len().saturating_sub(shown_of_all.len());
    let lines: Vec<String> = moved.into_iter().chain(shown_of_all).collect();
    for line in &lines {
        let line = terminal(line);
        let line = if detail.verbose || line.chars().count() <= EVIDENCE_WIDTH {
            line.into_owned()
        } else {
            line.chars().take(EVIDENCE_WIDTH).collect::<String>() + "…"
        };
        let _ = writeln!(out, "        {}", line_start(&line));
    }
    if hidden > 0 {
        let _ = writeln!(
            out,
            "        … {} more {} (`-v` shows all; `--format json` has everything)",
            hidden,
            crate::words::noun(hidden as u64, "evidence line")
        );
    }
    if let Some(action) = &finding.action {
        let _ = writeln!(
            out,
            "        → {}",
            bounded(&terminal(action), MESSAGE_WIDTH)
        );
    }
}

/// A `behavior_drift` finding's `what_moved` lines; none for other findings and for audits
/// stored before it was written.
fn what_moved(finding: &Finding) -> Vec<String> {
    if finding.code != Code::BehaviorDrift {
        return Vec::new();
    }
    finding.evidence[WHAT_MOVED]
        .as_array()
        .map(|lines| {
            lines
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn short_digest(digest: &str) -> String {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    format!("sha256:{}", hex.chars().take(12).collect::<String>())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_drift_shows_what_moved_a_line_each_before_the_rest() {
        let finding = Finding {
            code: Code::BehaviorDrift,
            severity: Some(Severity::Error),
            message: "the answers changed".to_owned(),
            evidence: json!({
                "alpha": 0.001,
                "tests": [{"test": "pass_rate", "probes": ["arith"], "adjusted_p": 0.0001, "rejected": true}],
                "what_moved": [
                    "arith: pass rate 90 % → 10 %",
                    "not significant: capital: answers changed: \"Perth\n::error::x\u{202e}\" 0 % → 50 %"
                ]
            }),
            action: None,
        };
        let mut out = String::new();
        push_finding(&mut out, &finding, Detail::default());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], "        arith: pass rate 90 % → 10 %", "{out}");
        assert!(
            lines[2].starts_with(
                "        not significant: capital: answers changed: \"Perth\\n::error::x\\u{202e}\""
            ),
            "{out}"
        );
        assert!(
            lines[3].starts_with("        … 5 more evidence lines"),
            "{out}"
        );
        assert!(!out.contains('\u{202e}'));
        let mut verbose = String::new();
        let detail = Detail {
            verbose: true,
            ..Detail::default()
        };
        push_finding(&mut verbose, &finding, detail);
        assert!(
            verbose.contains("        arith: pass rate 90 % → 10 %\n"),
            "{verbose}"
        );
        assert!(verbose.contains("tests[0].adjusted_p: 0.0001"), "{verbose}");
        assert!(!verbose.contains("what_moved"), "{verbose}");
    }

    #[test]
    fn plurals() {
        assert_eq!(plural(1, "pin"), "1 pin");
        assert_eq!(plural(0, "pin"), "0 pins");
        assert_eq!(plural(2, "call"), "2 calls");
    }
}
