//! SARIF 2.1.0 output, so code scanning (GitHub and others) shows each finding at its line.
//!
//! Shape and field names follow the OASIS SARIF 2.1.0 standard; the tests validate the output
//! against the standard's JSON schema (release rtm.5, vendored under tests/fixtures/sarif/ with
//! its provenance). One rule per finding code with help text; one result per finding, at
//! the ID's region in Unicode code points (`columnKind`); a `fixes` entry where exactly one
//! successor can be written in the ID's form; `partialFingerprints` that survive edits elsewhere
//! in the file, so code scanning tracks a result from commit to commit. Paths are relative URIs
//! against `%SRCROOT%`, percent-encoded byte by byte, so any file name round-trips.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::scan::judge::{Code, Finding, Level};
use crate::scan::{Occurrence, Scan, paths};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Log {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run {
    tool: Tool,
    column_kind: &'static str,
    results: Vec<SarifResult>,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    semantic_version: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: &'static str,
    name: String,
    short_description: Text,
    full_description: Text,
    help: Help,
    default_configuration: Configuration,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Help {
    text: String,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: Text,
    locations: [Location; 1],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<Fix>,
    partial_fingerprints: BTreeMap<&'static str, String>,
    properties: Properties,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: PhysicalLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    uri_base_id: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
    end_column: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    snippet: Option<Text>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Fix {
    description: Text,
    artifact_changes: [ArtifactChange; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange {
    artifact_location: ArtifactLocation,
    replacements: [Replacement; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement {
    deleted_region: Region,
    inserted_content: Text,
}

#[derive(Serialize)]
struct Properties {
    #[serde(rename = "modelId")]
    model_id: String,
    kind: &'static str,
}

/// The SARIF level of a finding level.
#[must_use]
pub fn level(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Info => "note",
    }
}

/// The `partialFingerprints` key. Not GitHub's `primaryLocationLineHash`, which GitHub computes
/// itself and reports as inconsistent when a tool sends another value under it.
pub const FINGERPRINT: &str = "modelpinFinding/v1";

/// The scan as one SARIF 2.1.0 log.
#[must_use]
pub fn render(scan: &Scan) -> String {
    let mut seen: HashMap<(String, &str, String), usize> = HashMap::new();
    let results = scan
        .occurrences
        .iter()
        .flat_map(|o| o.findings.iter().map(move |f| (o, f)))
        .map(|(o, f)| {
            let line = normalised(&o.context);
            let index = seen
                .entry((o.path.clone(), f.code.as_str(), line.clone()))
                .or_default();
            let fingerprint = fingerprint(f.code.as_str(), &o.id, &line, *index);
            *index += 1;
            result(o, f, fingerprint)
        })
        .collect();
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "modelpin",
                    version: env!("CARGO_PKG_VERSION"),
                    semantic_version: env!("CARGO_PKG_VERSION"),
                    rules: Code::ALL.iter().map(|c| rule(*c)).collect(),
                },
            },
            column_kind: "unicodeCodePoints",
            results,
        }],
    };
    let mut text = serde_json::to_string_pretty(&log).expect("SARIF types serialise");
    text.push('\n');
    text
}

fn rule(code: Code) -> Rule {
    Rule {
        id: code.as_str(),
        name: code
            .as_str()
            .split('_')
            .map(|w| w[..1].to_ascii_uppercase() + &w[1..])
            .collect(),
        short_description: Text {
            text: code.summary().to_owned(),
        },
        full_description: Text {
            text: format!("{}.", code.summary()),
        },
        help: Help {
            text: code.help().to_owned(),
            markdown: format!("**{}.** {}", code.summary(), code.help()),
        },
        default_configuration: Configuration {
            level: level(code.level()),
        },
    }
}

/// The line's text with runs of whitespace as one space: re-indenting does not move a result.
fn normalised(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Stable across commits: the rule, the ID, the line's text and how many results with the same
/// rule and text come before it in the file; never the line number, so an edit above the line
/// does not make every result below it new.
fn fingerprint(rule: &str, id: &str, line: &str, index: usize) -> String {
    let mut hash = Sha256::new();
    for part in [rule, id, line, &index.to_string()] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let digest = hash.finalize();
    digest[..16].iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn result(o: &Occurrence, f: &Finding, fingerprint: String) -> SarifResult {
    let artifact = ArtifactLocation {
        uri: paths::uri(&paths::bytes(&o.file)),
        uri_base_id: "%SRCROOT%",
    };
    let fixes = fix(o, f, &artifact).into_iter().collect();
    SarifResult {
        rule_id: f.code.as_str(),
        rule_index: Code::ALL.iter().position(|c| *c == f.code).unwrap_or(0),
        level: level(f.level),
        message: Text {
            text: f.message.clone(),
        },
        locations: [Location {
            physical_location: PhysicalLocation {
                artifact_location: artifact,
                region: Region {
                    start_line: o.line,
                    start_column: o.column,
                    end_column: o.end_column,
                    snippet: Some(Text { text: o.id.clone() }),
                },
            },
        }],
        fixes,
        partial_fingerprints: BTreeMap::from([(FINGERPRINT, fingerprint)]),
        properties: Properties {
            model_id: o.id.clone(),
            kind: o.kind.as_str(),
        },
    }
}

fn fix(o: &Occurrence, f: &Finding, artifact: &ArtifactLocation) -> Option<Fix> {
    let replacement = f.replacement.as_ref().filter(|_| f.level > Level::Info)?;
    Some(Fix {
        description: Text {
            text: format!("Replace with `{replacement}`"),
        },
        artifact_changes: [ArtifactChange {
            artifact_location: artifact.clone(),
            replacements: [Replacement {
                deleted_region: Region {
                    start_line: o.line,
                    start_column: o.column,
                    end_column: o.end_column,
                    snippet: None,
                },
                inserted_content: Text {
                    text: replacement.clone(),
                },
            }],
        }],
    })
}
