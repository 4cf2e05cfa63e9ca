//! JUnit XML: one `<testsuite>` per pin, one `<testcase>` per check, a `<failure>` per error
//! finding (its `→` action, a blank line and its evidence as JSON for the element text),
//! `<error>` when the pin could not be measured, and `<skipped>` for checks that had nothing to
//! compare or do not apply (no upstream host, no behaviour test in this audit). The config and lock digests are properties
//! of every suite, so a CI result names exactly what it verified.

use std::fmt::Write as _;

use crate::finding::PinStatus;
use crate::finding::{Check, Code, Finding, Severity};
use crate::report::{PinReport, Report};
use crate::text;

#[must_use]
pub fn render(report: &Report) -> String {
    let suites: Vec<Suite> = report.pins.iter().map(suite).collect();
    let tallies: Vec<Tally> = suites.iter().map(Suite::tally).collect();
    let total = |f: fn(&Tally) -> usize| tallies.iter().map(f).sum::<usize>();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"modelpin\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\">",
        suites.iter().map(|s| s.cases.len()).sum::<usize>(),
        total(|t| t.failures),
        total(|t| t.errors),
        total(|t| t.skipped),
        seconds(report)
    );
    for (pin, suite) in report.pins.iter().zip(&suites) {
        write_suite(&mut out, report, pin, suite);
    }
    out.push_str("</testsuites>\n");
    out
}

enum Outcome<'a> {
    Passed,
    Failed(&'a Finding),
    Errored(&'a Finding),
    Skipped(String),
}

struct Suite<'a> {
    cases: Vec<(&'static str, Outcome<'a>)>,
}

/// Failures, errors and skipped cases.
#[derive(Default)]
struct Tally {
    failures: usize,
    errors: usize,
    skipped: usize,
}

impl Suite<'_> {
    fn tally(&self) -> Tally {
        let mut t = Tally::default();
        for (_, outcome) in &self.cases {
            match outcome {
                Outcome::Failed(_) => t.failures += 1,
                Outcome::Errored(_) => t.errors += 1,
                Outcome::Skipped(_) => t.skipped += 1,
                Outcome::Passed => {}
            }
        }
        t
    }
}

fn suite(pin: &PinReport) -> Suite<'_> {
    let unmeasured = pin.calls.ok == 0;
    let no_baseline = pin.findings.iter().any(|f| f.code == Code::NoBaseline);
    let inconclusive = pin.findings.iter().find(|f| f.code == Code::Inconclusive);
    let cases = Check::ALL
        .iter()
        .map(|check| {
            let failed = pin
                .findings
                .iter()
                .find(|f| f.code.check() == Some(*check) && f.severity == Some(Severity::Error));
            let outcome = match (failed, check) {
                (Some(f), _) => Outcome::Failed(f),
                (None, Check::Reachable) => inconclusive
                    .filter(|_| pin.status == PinStatus::Inconclusive)
                    .map_or(Outcome::Passed, Outcome::Errored),
                (None, _) if unmeasured => {
                    Outcome::Skipped("not measured: no call was answered".to_owned())
                }
                (None, c) if no_baseline && c.needs_baseline() => {
                    Outcome::Skipped("no baseline in modelpin.lock".to_owned())
                }
                (None, Check::Cost) if pin.cost_usd.is_none() => Outcome::Skipped(
                    "unpriced: the pin has no `price` and the provider reported no cost".to_owned(),
                ),
                // Checks that do not apply to this provider or this audit pass nothing.
                (None, Check::Upstream) if pin.upstreams.is_empty() => Outcome::Skipped(
                    "does not apply: the provider names no upstream host (only gateways such as OpenRouter do)".to_owned(),
                ),
                (None, Check::Behaviour)
                    if pin.behaviour.is_empty()
                        && !pin.findings.iter().any(|f| f.code.check() == Some(Check::Behaviour)) =>
                {
                    Outcome::Skipped(
                        "no behaviour test ran (no probe answers were compared in this audit)"
                            .to_owned(),
                    )
                }
                (None, _) => Outcome::Passed,
            };
            (check.name(), outcome)
        })
        .collect();
    Suite { cases }
}

fn write_suite(out: &mut String, report: &Report, pin: &PinReport, suite: &Suite<'_>) {
    let tally = suite.tally();
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" timestamp=\"{}\" time=\"{}\">",
        xml(&pin.id),
        suite.cases.len(),
        tally.failures,
        tally.errors,
        tally.skipped,
        xml(report.started_at.trim_end_matches('Z')),
        seconds(report)
    );
    out.push_str("    <properties>\n");
    let lock = report
        .lock_digest
        .clone()
        .unwrap_or_else(|| "none".to_owned());
    for (name, value) in [
        ("config_digest", report.config_digest.as_str()),
        ("lock_digest", lock.as_str()),
        ("provider", pin.provider.as_str()),
        ("model", pin.model.as_str()),
        ("status", pin.status.as_str()),
    ] {
        let _ = writeln!(
            out,
            "      <property name=\"{name}\" value=\"{}\"/>",
            xml(value)
        );
    }
    out.push_str("    </properties>\n");
    for (name, outcome) in &suite.cases {
        write_case(out, &pin.id, name, outcome);
    }
    let notes: Vec<String> = pin
        .findings
        .iter()
        .filter(|f| f.severity != Some(Severity::Error) && f.code != Code::Inconclusive)
        .map(|f| {
            format!(
                "{} {}: {}",
                f.severity.map_or("-", Severity::as_str),
                f.code,
                f.message
            )
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(
            out,
            "    <system-out>{}</system-out>",
            xml_lines(notes.iter().map(String::as_str))
        );
    }
    out.push_str("  </testsuite>\n");
}

fn write_case(out: &mut String, pin: &str, name: &str, outcome: &Outcome<'_>) {
    let _ = write!(
        out,
        "    <testcase classname=\"modelpin.{}\" name=\"{}\" time=\"0\"",
        xml(pin),
        xml(name)
    );
    match outcome {
        Outcome::Passed => out.push_str("/>\n"),
        Outcome::Failed(f) | Outcome::Errored(f) => {
            let tag = if matches!(outcome, Outcome::Failed(_)) {
                "failure"
            } else {
                "error"
            };
            let evidence = serde_json::to_string_pretty(&f.evidence).unwrap_or_default();
            // What to do first, as the CLI and the status page show it, then a blank line and
            // the evidence as JSON.
            let action = f.action.as_ref().map(|a| format!("→ {a}"));
            let lines = action
                .iter()
                .map(String::as_str)
                .chain(action.as_ref().map(|_| ""))
                .chain(evidence.lines());
            let _ = writeln!(
                out,
                ">\n      <{tag} message=\"{}\" type=\"{}\">{}</{tag}>\n    </testcase>",
                xml(&f.message),
                f.code,
                xml_lines(lines)
            );
        }
        Outcome::Skipped(why) => {
            let _ = writeln!(
                out,
                ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                xml(why)
            );
        }
    }
}

fn seconds(report: &Report) -> String {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    match (parse(&report.started_at), parse(&report.finished_at)) {
        (Some(a), Some(b)) => format!("{:.3}", (b - a).num_milliseconds() as f64 / 1000.0),
        _ => "0".to_owned(),
    }
}

/// Escapes text for XML attributes and content. Line breaks and tabs become character
/// references, so no outside text starts a line of the file; characters XML 1.0 cannot carry at
/// all (other C0 controls) are written as visible escapes (`\u{1b}`); C1 controls and characters
/// that reorder text become character references.
#[must_use]
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                out.push_str(&text::escape_char(c));
            }
            c if text::needs_escape(c) => {
                let _ = write!(out, "&#x{:x};", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `xml` for text that is ours and spans lines (pretty JSON, a list of notes): each line escaped,
/// the line breaks kept.
fn xml_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    lines.map(xml).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(xml(r#"a<b>&"c"'d"#), "a&lt;b&gt;&amp;&quot;c&quot;&apos;d");
        assert_eq!(xml("x\u{1}y\nz"), "x\\u{1}y&#10;z");
        assert_eq!(
            xml("m\r\n::error::x\u{1b}[2J\u{85}"),
            "m&#13;&#10;::error::x\\u{1b}[2J&#x85;"
        );
    }
}
