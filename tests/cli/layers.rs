//! The modules depend one way: each may use the modules of its own layer and the layers below,
//! never one above (docs/development.md, "Layers"). Read from the source, so a `use` that
//! turns an arrow around fails here, not in a review.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Lowest first. A module's submodules share its layer.
const LAYERS: &[&[&str]] = &[
    &[
        "closed", "fault", "text", "words", "redact", "severity", "problem",
    ],
    &["files", "logging", "provider", "stats"],
    &["config", "sim"],
    &["breaker", "lifecycle", "lock"],
    &["transport"],
    &["retry"],
    &["finding"],
    &["exit"],
    &["report", "scan"],
    &["audit", "store"],
    &["alert", "traffic"],
    &["daemon"],
    &["cli", "cmd"],
    &["app"],
];

/// Files compiled only into the unit tests, which may reach up to build what they check.
const TEST_ONLY: &[&str] = &[
    "redact/sinks.rs",
    "fixtures.rs",
    "fixtures/",
    "provider/fixture_table.rs",
];

/// The unit tests' own module (`#[cfg(test)]`), named from test-only lines anywhere.
const TEST_MODULE: &str = "fixtures";

fn layer_of() -> BTreeMap<&'static str, usize> {
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, names)| names.iter().map(move |n| (*n, i)))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's production code: each `#[cfg(test)]` item taken out, a `mod x;` or `use …;` to
/// its `;`, a body to its closing brace (counted; the rest of the file when they never balance).
fn production(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut kept = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        kept.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let semicolon = item.find(';');
        let brace = item.find('{');
        let end = match (semicolon, brace) {
            (Some(s), b) if b.is_none_or(|b| s < b) => Some(s + 1),
            (_, Some(open)) => {
                let mut depth = 0usize;
                item[open..].char_indices().find_map(|(i, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth = depth.saturating_sub(1),
                        _ => return None,
                    }
                    (depth == 0).then_some(open + i + 1)
                })
            }
            _ => None,
        };
        let Some(end) = end else {
            return kept;
        };
        rest = &item[end..];
    }
    kept.push_str(rest);
    kept
}

/// Every top-level module a file names as `crate::NAME`, or inside `crate::{A, B::…}`.
fn used(text: &str) -> Vec<&str> {
    fn ident(s: &str) -> &str {
        let s = s.trim_start();
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        &s[..end]
    }
    let mut names = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inside = &group[..group.find('}').unwrap_or(group.len())];
            names.extend(inside.split(',').map(ident).filter(|n| !n.is_empty()));
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    names
}

#[test]
fn no_module_uses_one_above_its_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers = layer_of();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    let mut unplaced = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = relative.split('/').next().unwrap().trim_end_matches(".rs");
        if matches!(name, "lib" | "main") {
            continue;
        }
        let test_only = relative.ends_with("_tests.rs")
            || relative.ends_with("/tests.rs")
            || relative.contains("/tests/")
            || TEST_ONLY.iter().any(|t| relative.starts_with(t));
        if test_only {
            continue;
        }
        let Some(&own) = layers.get(name) else {
            unplaced.push(relative);
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for other in used(&production(&text)) {
            if other == TEST_MODULE {
                continue;
            }
            match layers.get(other) {
                Some(&theirs) if theirs > own => {
                    upward.push(format!(
                        "{relative} (layer {own}) uses crate::{other} (layer {theirs})"
                    ));
                }
                Some(_) => {}
                None => unplaced.push(format!("{relative} names crate::{other}")),
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "uses that point up:\n{}",
        upward.join("\n")
    );
    assert!(
        unplaced.is_empty(),
        "modules with no layer (add them to LAYERS):\n{}",
        unplaced.join("\n")
    );
}
