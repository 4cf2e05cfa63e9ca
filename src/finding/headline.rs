//! The few evidence lines that decide a finding, most telling first: what a report shows of it
//! before `-v`. They are chosen here, beside the evidence's JSON shape, so no renderer needs to
//! know where a finding keeps what decides it.

use serde_json::Value;

use crate::finding::{Code, Finding};

/// Lines a finding's headline holds at most.
pub const HEADLINE_LINES: usize = 3;

impl Finding {
    /// At most `HEADLINE_LINES` of the finding's evidence `lines` (`evidence_lines`, as the
    /// renderer flattened them to show) that decide it; the first lines with a value when its
    /// decisive ones are absent (evidence stored by an older modelpin).
    #[must_use]
    pub fn headline(&self, lines: &[(String, String)]) -> Vec<String> {
        decisive(self.code, &self.evidence, lines)
    }
}

/// Evidence as (`path`, value) lines: objects by key, lists of plain values on one line.
#[must_use]
pub fn evidence_lines(value: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    flatten(value, "", &mut out);
    out
}

fn flatten(value: &Value, path: &str, out: &mut Vec<(String, String)>) {
    let key = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    match value {
        Value::Object(map) if map.is_empty() => {}
        Value::Object(map) => {
            for (k, v) in map {
                flatten(v, &key(k), out);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let joined: Vec<String> = items.iter().map(scalar).collect();
            let text = if joined.is_empty() {
                "none".to_owned()
            } else {
                joined.join(", ")
            };
            out.push((path.to_owned(), text));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(item, &format!("{path}[{i}]"), out);
            }
        }
        other => out.push((path.to_owned(), scalar(other))),
    }
}

/// The evidence paths that decide a finding of `code`, most telling first. A path ending in
/// `.` is a prefix (`unexpected.` is every unexpected ID with its count).
fn decisive_paths(code: Code, evidence: &Value) -> Vec<String> {
    let fixed: &[&str] = match code {
        Code::ServedModelMismatch | Code::UpstreamMismatch => &[
            "unexpected.",
            "accepted",
            "fallback_models.",
            "public_names.",
        ],
        Code::TokenizerChanged => &["probes[0].probe", "probes[0].locked", "probes[0].now"],
        Code::CostChanged => &[
            "billed_vs_price.ratio",
            "input_cost_per_call.change",
            "billed_vs_price.reported_usd",
            "billed_vs_price.expected_usd",
            "input_cost_per_call.locked_usd",
            "input_cost_per_call.now_usd",
        ],
        Code::BehaviorDrift if evidence["tests"].is_null() => &[
            "accumulated.statistic",
            "accumulated.threshold",
            "accumulated.audits_at_alarm",
            "accumulated.since",
        ],
        Code::BehaviorDrift => {
            // The first test that rejected: which, on which probes, at what adjusted p.
            let k = evidence["tests"]
                .as_array()
                .and_then(|t| t.iter().position(|t| t["rejected"] == true))
                .unwrap_or(0);
            return ["test", "probes", "adjusted_p"]
                .iter()
                .map(|field| format!("tests[{k}].{field}"))
                .collect();
        }
        Code::ModelNotFound => &["status", "provider_message", "lifecycle.replacement"],
        Code::RetiredStillServed | Code::DeprecationScheduled => &[
            "retirement.on",
            "replacement",
            "days_left",
            "sources[0].source",
        ],
        Code::SunsetAnnounced => &["signals[0]."],
        Code::FingerprintChanged => &["locked", "new"],
        Code::ScriptChanged => &["new[0].script", "new[0].answers", "new[0].characters"],
        Code::MaxTokensExceeded => &[
            "probes[0].probe",
            "probes[0].max_tokens",
            "probes[0].completion_tokens",
        ],
        Code::NoBaseline | Code::ProbeChanged => &["locked_model", "probes[0].probe", "model"],
        Code::Inconclusive => &["reasons.", "planned", "answered", "retries.attempts"],
    };
    fixed.iter().map(|p| (*p).to_owned()).collect()
}

/// Up to `HEADLINE_LINES` lines that decide the finding, in the order of `decisive_paths`,
/// leaving out empty values; the first lines with a value when none of the paths is there.
fn decisive(code: Code, evidence: &Value, all: &[(String, String)]) -> Vec<String> {
    let has_value = |(_, v): &&(String, String)| v != "none";
    let mut picked: Vec<&(String, String)> = Vec::new();
    for pattern in decisive_paths(code, evidence) {
        let hits = all.iter().filter(has_value).filter(|(path, _)| {
            if pattern.ends_with('.') {
                path.starts_with(&pattern)
            } else {
                *path == pattern
            }
        });
        for hit in hits {
            if picked.len() < HEADLINE_LINES && !picked.contains(&hit) {
                picked.push(hit);
            }
        }
    }
    if picked.is_empty() {
        picked = all.iter().filter(has_value).take(HEADLINE_LINES).collect();
    }
    picked
        .into_iter()
        .map(|(path, value)| format!("{path}: {value}"))
        .collect()
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "none".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn evidence_reads_as_key_value_lines() {
        let lines = evidence_lines(
            &json!({"served": {"a": 3}, "locked": [20, 21], "probes": [{"probe": "x"}], "none": [], "n": null}),
        );
        let lines: Vec<String> = lines.iter().map(|(p, v)| format!("{p}: {v}")).collect();
        assert_eq!(
            lines,
            [
                "locked: 20, 21",
                "n: none",
                "none: none",
                "probes[0].probe: x",
                "served.a: 3"
            ]
        );
    }

    #[test]
    fn the_default_view_keeps_the_lines_that_decide_each_finding() {
        let table = [
            (
                Code::ServedModelMismatch,
                json!({"accepted": ["m"], "examples": ["s1", "s2"], "requested": "m", "served": {"x": 3}, "unexpected": {"x": 3}}),
                vec!["unexpected.x: 3", "accepted: m"],
            ),
            (
                Code::TokenizerChanged,
                json!({"probes": [{"probe": "arith", "locked": [15], "now": [21], "examples": ["a"]}, {"probe": "b", "locked": [1], "now": [2]}]}),
                vec![
                    "probes[0].probe: arith",
                    "probes[0].locked: 15",
                    "probes[0].now: 21",
                ],
            ),
            (
                Code::BehaviorDrift,
                json!({"alpha": 0.001, "seed": 7, "tests": [{"test": "length", "probes": ["a"], "adjusted_p": 1.0, "rejected": false}, {"test": "answers", "probes": ["prime"], "adjusted_p": 0.0001, "rejected": true}]}),
                vec![
                    "tests[1].test: answers",
                    "tests[1].probes: prime",
                    "tests[1].adjusted_p: 0.0001",
                ],
            ),
            (
                Code::DeprecationScheduled,
                json!({"days_left": 30, "model": "g", "replacement": ["h"], "retirement": {"on": "2027-01-01"}, "sources": [{"captured": null, "announced": null, "source": "pins.toml `retires_on`"}]}),
                vec![
                    "retirement.on: 2027-01-01",
                    "replacement: h",
                    "days_left: 30",
                ],
            ),
            (
                Code::FingerprintChanged,
                json!({"other": null, "z": 1}),
                vec!["z: 1"],
            ),
        ];
        for (code, evidence, want) in table {
            let all = evidence_lines(&evidence);
            assert_eq!(decisive(code, &evidence, &all), want, "{code:?}");
        }
    }
}
