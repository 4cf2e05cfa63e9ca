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

/// The file's production code: without its trailing `#[cfg(test)] mod tests { … }`.
fn production(text: &str) -> &str {
    ["#[cfg(test)]\nmod tests {", "#[cfg(test)]\nmod "]
        .iter()
        .filter_map(|marker| text.find(marker))
        .min()
        .map_or(text, |at| &text[..at])
}

/// Every top-level module a file names as `crate::NAME`.
fn used(text: &str) -> Vec<&str> {
    text.match_indices("crate::")
        .filter_map(|(at, _)| {
            let rest = &text[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
        .collect()
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
        for other in used(production(&text)) {
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
