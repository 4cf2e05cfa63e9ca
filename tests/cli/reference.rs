//! The reference pages name everything the code has: every finding code (docs/findings.md),
//! every pins.toml key of every table (docs/configuration.md; a probe's in docs/probes.md),
//! every metric (with the help text `/metrics` gives it) and every HTTP endpoint of the daemon
//! (docs/daemon.md). Read from the source, so a new code, key, metric or route without its line
//! in the docs fails here.

use std::path::Path;

fn source(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `CamelCase` as `snake_case`, as serde's `rename_all = "snake_case"` writes it.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The body of `enum NAME { … }` or `struct NAME { … }` in `text`.
fn body<'a>(text: &'a str, item: &str) -> &'a str {
    let start = text
        .find(item)
        .unwrap_or_else(|| panic!("`{item}` not found"));
    let open = start + text[start..].find('{').expect("a body");
    let close = open + text[open..].find("\n}").expect("the body's end");
    &text[open + 1..close]
}

/// The variant names of an enum body (attributes and doc comments left out).
fn variants(body: &str) -> Vec<String> {
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with("#[") && !l.is_empty())
        .filter_map(|l| {
            let name: String = l.chars().take_while(char::is_ascii_alphanumeric).collect();
            (!name.is_empty() && name.starts_with(|c: char| c.is_ascii_uppercase())).then_some(name)
        })
        .collect()
}

/// The `pub NAME:` fields of a struct body.
fn fields(body: &str) -> Vec<String> {
    body.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub "))
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_owned()))
        .collect()
}

/// The keys a page's TOML examples set (`key = …`), or set commented out (`# key = …`), and
/// the tables they open (`[name]`).
fn toml_keys(text: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("```") {
            inside = line == "```toml";
            continue;
        }
        if !inside {
            continue;
        }
        let (code, comment) = line.split_once('#').unwrap_or((line, ""));
        if let Some(table) = code.trim().strip_prefix('[') {
            keys.push(table.trim_end_matches(']').to_owned());
        }
        // Every `key =` of the line, inline tables' included.
        let mut before = code;
        while let Some(at) = before.find('=') {
            let key: String = before[..at]
                .trim_end()
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            keys.push(key.chars().rev().collect());
            before = &before[at + 1..];
        }
        // A commented-out setting: `# key = …`.
        if let Some((key, _)) = comment.split_once('=') {
            let key = key.trim();
            if !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                keys.push(key.to_owned());
            }
        }
    }
    keys
}

/// Each of `names` that `page` neither mentions as `` `name` `` nor sets in a TOML example.
fn missing<'a>(page: &str, names: &'a [String]) -> Vec<&'a str> {
    let text = source(page);
    let set = toml_keys(&text);
    names
        .iter()
        .filter(|n| {
            ["`{n}`", "`{n}{{", "`[{n}]`", "`{n} ="]
                .iter()
                .all(|form| !text.contains(&form.replace("{n}", n).replace("{{", "{")))
                && !set.contains(n)
        })
        .map(String::as_str)
        .collect()
}

#[test]
fn every_finding_code_has_its_entry() {
    let codes: Vec<String> = variants(body(&source("src/finding/mod.rs"), "pub enum Code"))
        .iter()
        .map(|v| snake(v))
        .collect();
    assert!(codes.len() >= 15, "the reader found {codes:?}");
    let gone = missing("docs/findings.md", &codes);
    assert!(gone.is_empty(), "docs/findings.md lacks {gone:?}");
}

#[test]
fn every_pins_toml_key_has_its_entry() {
    let raw = source("src/config/raw.rs");
    for (table, page) in [
        ("pub(crate) struct RawSettings", "docs/configuration.md"),
        ("pub(crate) struct RawProvider", "docs/configuration.md"),
        ("pub(crate) struct RawPin ", "docs/configuration.md"),
        ("pub(crate) struct RawPrice", "docs/configuration.md"),
        ("pub(crate) struct RawAlert", "docs/alerts.md"),
        ("pub(crate) struct RawTraffic", "docs/traffic.md"),
        ("pub(crate) struct RawScan", "docs/scan.md"),
        ("pub(crate) struct RawProbe", "docs/probes.md"),
        ("pub(crate) struct RawExpect", "docs/probes.md"),
    ] {
        let keys = fields(body(&raw, table));
        assert!(!keys.is_empty(), "{table}: the reader found no keys");
        let gone = missing(page, &keys);
        assert!(gone.is_empty(), "{page} lacks the keys {gone:?} of {table}");
    }
}

#[test]
fn every_metric_and_endpoint_of_the_daemon_has_its_entry() {
    // (name, help) of each family, as `/metrics` gives them.
    let metrics: Vec<(String, String)> = source("src/daemon/metrics/mod.rs")
        .split("Family::new(")
        .skip(1)
        .filter_map(|rest| {
            let mut quoted = rest.split('"');
            let name = quoted.nth(1)?.to_owned();
            let help = quoted.nth(1)?.to_owned();
            Some((name, help))
        })
        .collect();
    assert!(metrics.len() >= 20, "the reader found {metrics:?}");
    let page = source("docs/daemon.md");
    let gone: Vec<&str> = metrics
        .iter()
        .filter(|(name, help)| !page.contains(&format!("| `{name}` | {help} |")))
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        gone.is_empty(),
        "docs/daemon.md's metrics table lacks (or words otherwise than /metrics) {gone:?}"
    );
    // (method, path) of each route: `.route("/path", get(…))`.
    let routes: Vec<String> = source("src/daemon/http.rs")
        .split(".route(\"")
        .skip(1)
        .filter_map(|rest| {
            let close = rest.find('"')?;
            let path = rest[..close].replace("{id}", "ID");
            let method = rest[close + 1..]
                .trim_start_matches([',', ' '])
                .split('(')
                .next()?
                .trim()
                .to_ascii_uppercase();
            Some(format!("{method} {path}"))
        })
        .collect();
    assert!(routes.len() >= 6, "the reader found {routes:?}");
    let gone: Vec<&String> = routes
        .iter()
        .filter(|route| !page.contains(&format!("| `{route}` |")))
        .collect();
    assert!(
        gone.is_empty(),
        "docs/daemon.md lacks the endpoints {gone:?}"
    );
}
