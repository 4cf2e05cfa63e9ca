//! Evidence as a person reads it in an email: one `name: value` line per fact, nested facts
//! indented, instead of a JSON blob that a length cap would cut mid-way (hiding the new answer
//! behind the old ones). Each value is escaped and bounded on its own, and when there are too
//! many lines the last one says how many were left out, so what is shown is always whole.

use serde_json::Value;

use crate::text::{bounded, terminal};

/// Lines of evidence per finding in an email; the webhook payload and history carry it all.
const MAX_LINES: usize = 40;

/// Longest value shown on one line, in characters.
const MAX_VALUE_CHARS: usize = 200;

/// Evidence fields shown before the others, as a person reads them first: what moved, in words.
const FIRST: [&str; 1] = [crate::finding::moved::WHAT_MOVED];

/// `evidence` as indented `name: value` lines (no trailing newline), each starting with `indent`.
#[must_use]
pub fn evidence_lines(evidence: &Value, indent: &str) -> Vec<String> {
    let mut lines = Vec::new();
    match evidence {
        Value::Object(fields) => {
            // Sentences, one a line: what moved reads as a list, not one cut-off line.
            for (name, field) in FIRST.iter().filter_map(|k| fields.get_key_value(*k)) {
                lines.push(format!("{indent}{}:", terminal(name)));
                match field {
                    Value::Array(items) => lines.extend(
                        items
                            .iter()
                            .map(|item| format!("{indent}  - {}", scalar(item))),
                    ),
                    other => lines.push(format!("{indent}  - {}", scalar(other))),
                }
            }
            for (name, field) in fields.iter().filter(|(k, _)| !FIRST.contains(&k.as_str())) {
                push_field(name, field, indent, &mut lines);
            }
        }
        other => walk(other, indent, &mut lines),
    }
    if lines.len() > MAX_LINES {
        let left_out = lines.len() - (MAX_LINES - 1);
        lines.truncate(MAX_LINES - 1);
        lines.push(format!(
            "{indent}… {left_out} more lines (the webhook payload and `modelpin history` have them all)"
        ));
    }
    lines
}

fn walk(value: &Value, indent: &str, lines: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                push_field(name, field, indent, lines);
            }
        }
        Value::Array(items) if items.iter().any(is_nested) => {
            for item in items {
                lines.push(format!("{indent}-"));
                walk(item, &format!("{indent}  "), lines);
            }
        }
        other => lines.push(format!("{indent}{}", scalar(other))),
    }
}

fn push_field(name: &str, field: &Value, indent: &str, lines: &mut Vec<String>) {
    let name = terminal(name);
    if is_nested(field) && !is_empty(field) {
        lines.push(format!("{indent}{name}:"));
        walk(field, &format!("{indent}  "), lines);
    } else {
        lines.push(format!("{indent}{name}: {}", scalar(field)));
    }
}

fn is_nested(value: &Value) -> bool {
    match value {
        Value::Object(_) => true,
        Value::Array(items) => items.iter().any(is_nested),
        _ => false,
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Object(fields) => fields.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// A value on one line: strings as they are, lists joined, empty things as `-`.
fn scalar(value: &Value) -> String {
    let text = match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "-".to_owned(),
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(", "),
        Value::Object(fields) if fields.is_empty() => "-".to_owned(),
        other => other.to_string(),
    };
    bounded(&terminal(&text), MAX_VALUE_CHARS).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{MAX_LINES, evidence_lines};
    use serde_json::json;

    #[test]
    fn nested_evidence_reads_as_indented_lines() {
        let evidence = json!({
            "requested": "gpt-4o",
            "accepted": ["gpt-4o", "gpt-4o-2024-08-06"],
            "served": { "gpt-5-mini\n::error::x": 3 },
            "probes": [{ "probe": "arith", "locked": [21, 21], "now": [19] }],
            "fallback_models": {}
        });
        let lines = evidence_lines(&evidence, "  ");
        assert_eq!(
            lines,
            [
                "  accepted: gpt-4o, gpt-4o-2024-08-06",
                "  fallback_models: -",
                "  probes:",
                "    -",
                "      locked: 21, 21",
                "      now: 19",
                "      probe: arith",
                "  requested: gpt-4o",
                "  served:",
                "    gpt-5-mini\\n::error::x: 3",
            ]
        );
    }

    /// A drift's evidence is hundreds of lines of statistics; what moved, in words, comes first
    /// so the line cap never hides it.
    #[test]
    fn what_moved_is_shown_before_the_statistics() {
        let tests: Vec<serde_json::Value> = (0..50).map(|i| json!({ "p_value": i })).collect();
        let evidence = json!({
            "alpha": 0.001,
            "tests": tests,
            "what_moved": ["arith: pass rate 90 % → 10 %", "capital: \"Perth\n\" 0 % → 50 %"],
        });
        let lines = evidence_lines(&evidence, "  ");
        assert_eq!(
            lines[..4],
            [
                "  what_moved:",
                "    - arith: pass rate 90 % → 10 %",
                "    - capital: \"Perth\\n\" 0 % → 50 %",
                "  alpha: 0.001"
            ]
        );
    }

    #[test]
    fn long_evidence_ends_with_a_whole_line_saying_what_was_left_out() {
        let many: serde_json::Map<String, serde_json::Value> = (0..100)
            .map(|i| (format!("k{i:03}"), json!("x".repeat(1000))))
            .collect();
        let lines = evidence_lines(&serde_json::Value::Object(many), "");
        assert_eq!(lines.len(), MAX_LINES);
        assert!(lines.last().unwrap().contains("61 more lines"), "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 210));
    }
}
