//! The scan's human, JSON and GitHub outputs, and the `--fix` patch.
//!
//! Every byte that came from a scanned file (the ID's line, file names) is data: JSON and SARIF
//! escape it through serde, GitHub annotations through the escaping in `report::github`, and the
//! human output through [`printable`], so no file can move the cursor, recolour the terminal or
//! start a line with `::`. File names are written from their bytes (`paths`): git-quoted in the
//! patch and in the human output when they are not UTF-8, and an annotation that cannot carry a
//! name says it in its message instead.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::scan::judge::{Code, Finding, Level};
use crate::scan::{Occurrence, Scan, Summary, paths};
use crate::text::github::{LIMIT, escape_data, escape_property};

/// `text` with control and bidirectional-override characters escaped, at most `max` characters.
#[must_use]
pub fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count >= max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push(' '),
            c if c.is_control() || is_bidi(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// Distinct IDs with findings, most urgent first.
fn groups(scan: &Scan) -> Vec<(&str, Vec<&Occurrence>)> {
    let mut by_id: BTreeMap<&str, Vec<&Occurrence>> = BTreeMap::new();
    for occurrence in scan.occurrences.iter().filter(|o| !o.findings.is_empty()) {
        by_id.entry(&occurrence.id).or_default().push(occurrence);
    }
    let mut groups: Vec<_> = by_id.into_iter().collect();
    let urgency = |list: &Vec<&Occurrence>| list.iter().filter_map(|o| o.level()).max();
    groups.sort_by(|a, b| urgency(&b.1).cmp(&urgency(&a.1)).then(a.0.cmp(b.0)));
    groups
}

/// Grouped by ID, sorted by urgency, then a summary line.
#[must_use]
pub fn human(scan: &Scan) -> String {
    let mut out = String::new();
    for (id, list) in groups(scan) {
        let _ = writeln!(out, "{} ({} found)", printable(id, 120), list.len());
        let mut findings: Vec<&Finding> = list.iter().flat_map(|o| &o.findings).collect();
        findings.sort_by_key(|f| (std::cmp::Reverse(f.level), f.code));
        findings.dedup_by_key(|f| (f.level, f.code));
        for finding in findings {
            let _ = writeln!(
                out,
                "  {:<7} {}: {}",
                finding.level.as_str(),
                finding.code.as_str(),
                printable(&finding.message, 400)
            );
            if let Some(suggestion) = &finding.suggestion {
                for line in suggestion.lines() {
                    let _ = writeln!(out, "      {}", printable(line, 200));
                }
            }
        }
        for o in &list {
            let _ = writeln!(
                out,
                "    {}:{}:{} [{}]  {}",
                shown_path(o),
                o.line,
                o.column,
                o.kind.as_str(),
                o.context.trim()
            );
        }
    }
    out.push_str(&summary_line(scan));
    out.push('\n');
    out
}

/// The path for a terminal: escaped, and quoted as git quotes it when it is not UTF-8.
fn shown_path(o: &Occurrence) -> String {
    let name = paths::bytes(&o.file);
    match std::str::from_utf8(&name) {
        Ok(name) => printable(name, 200),
        Err(_) => paths::git_quoted(&name),
    }
}

/// One line: files, findings by level, skipped and unreadable paths.
#[must_use]
pub fn summary_line(scan: &Scan) -> String {
    let s = &scan.summary;
    let count = |level| {
        scan.occurrences
            .iter()
            .flat_map(|o| &o.findings)
            .filter(|f| f.level == level)
            .count()
    };
    let mut line = format!(
        "scanned {} files ({}): {} errors, {} warnings, {} info in {} occurrences",
        s.files,
        size(s.bytes),
        count(Level::Error),
        count(Level::Warning),
        count(Level::Info),
        scan.occurrences.len()
    );
    let _ = write!(
        line,
        "; skipped {} over the size limit, {} binary",
        s.skipped_large, s.skipped_binary
    );
    if s.below_min_level > 0 {
        let _ = write!(
            line,
            "; {} below the minimum level left out",
            s.below_min_level
        );
    }
    if !s.unreadable.is_empty() {
        let list: Vec<String> = s
            .unreadable
            .iter()
            .map(|u| {
                format!(
                    "{} ({})",
                    printable(&u.path, 200),
                    printable(&u.reason, 200)
                )
            })
            .collect();
        let _ = write!(line, "; could not read: {}", list.join(", "));
    }
    line
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    schema: &'static str,
    modelpin_version: &'static str,
    exit_code: crate::exit::Exit,
    summary: &'a Summary,
    occurrences: &'a [Occurrence],
}

/// The whole scan as one JSON document (`modelpin.scan/v1`).
#[must_use]
pub fn json(scan: &Scan, exit_code: crate::exit::Exit) -> String {
    let report = JsonReport {
        schema: "modelpin.scan/v1",
        modelpin_version: env!("CARGO_PKG_VERSION"),
        exit_code,
        summary: &scan.summary,
        occurrences: &scan.occurrences,
    };
    let mut text = serde_json::to_string_pretty(&report).expect("scan types serialise");
    text.push('\n');
    text
}

/// GitHub workflow commands: one annotation per finding at its line, at most [`LIMIT`] of each
/// kind (the last saying how many more).
#[must_use]
pub fn github(scan: &Scan) -> String {
    let mut kinds: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for o in &scan.occurrences {
        for f in &o.findings {
            let kind = match f.level {
                Level::Error => "error",
                Level::Warning => "warning",
                Level::Info => "notice",
            };
            let title = escape_property(&format!("modelpin scan: {}", f.code.as_str()));
            let name = paths::bytes(&o.file);
            let annotation = match std::str::from_utf8(&name) {
                Ok(name) => format!(
                    "::{kind} file={},line={},col={},endColumn={},title={title}::{}",
                    escape_property(name),
                    o.line,
                    o.column,
                    o.end_column,
                    escape_data(&f.message)
                ),
                // An annotation is UTF-8 text: a name that is not cannot be pointed at, so the
                // message names it, quoted as git quotes it.
                Err(_) => format!(
                    "::{kind} title={title}::{}",
                    escape_data(&format!(
                        "{}:{}:{}: {}",
                        paths::git_quoted(&name),
                        o.line,
                        o.column,
                        f.message
                    ))
                ),
            };
            kinds.entry(kind).or_default().push(annotation);
        }
    }
    let mut out = String::new();
    for (kind, items) in kinds {
        let shown = if items.len() > LIMIT {
            LIMIT - 1
        } else {
            items.len()
        };
        for item in &items[..shown] {
            let _ = writeln!(out, "{item}");
        }
        if items.len() > shown {
            let more = format!(
                "{} more {kind} findings; run `modelpin scan` locally or upload SARIF to see them all",
                items.len() - shown
            );
            let _ = writeln!(out, "::{kind} title=modelpin scan::{}", escape_data(&more));
        }
    }
    out
}

/// A unified diff replacing each retired or retiring literal whose successor can be written in
/// the form of the ID found (see `forms` and the fix chain in `judge`), with three lines of
/// context like `git diff`: `git apply` and `patch -p1` take it as it is. A line that changed
/// since the scan is left alone.
#[must_use]
pub fn patch(scan: &Scan, read: &dyn Fn(&Path) -> Option<Vec<u8>>) -> String {
    let mut by_file: BTreeMap<&Path, Vec<(&Occurrence, &str)>> = BTreeMap::new();
    for o in &scan.occurrences {
        let replacement = o
            .findings
            .iter()
            .filter(|f| matches!(f.code, Code::Retired | Code::Retiring) && f.level > Level::Info)
            .find_map(|f| f.replacement.as_deref());
        if let Some(replacement) = replacement {
            by_file.entry(&o.file).or_default().push((o, replacement));
        }
    }
    let mut out = String::new();
    for (path, edits) in by_file {
        if let Some(bytes) = read(path) {
            out.push_str(&file_patch(path, &bytes, &edits));
        }
    }
    out
}

/// Lines of unchanged text around each change.
const CONTEXT: usize = 3;

fn file_patch(path: &Path, bytes: &[u8], edits: &[(&Occurrence, &str)]) -> String {
    let mut parts: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let ends_in_newline = bytes.ends_with(b"\n");
    if ends_in_newline || bytes.is_empty() {
        parts.pop();
    }
    let mut changed: BTreeMap<usize, String> = BTreeMap::new();
    let mut by_line: BTreeMap<usize, Vec<(&Occurrence, &str)>> = BTreeMap::new();
    for edit in edits {
        by_line.entry(edit.0.line).or_default().push(*edit);
    }
    for (number, edits) in by_line {
        if let Some(new) = changed_line(bytes, &edits) {
            changed.insert(number - 1, new);
        }
    }
    let last = parts.len().saturating_sub(1);
    let line = |i: usize, sign: char, text: &str| {
        let eof = if i == last && !ends_in_newline {
            "\n\\ No newline at end of file"
        } else {
            ""
        };
        format!("{sign}{text}{eof}\n")
    };
    let mut hunks = String::new();
    let mut indices = changed.keys().copied().peekable();
    while let Some(first) = indices.next() {
        let start = first.saturating_sub(CONTEXT);
        let mut end = (first + CONTEXT + 1).min(parts.len());
        while let Some(&next) = indices.peek() {
            if next.saturating_sub(CONTEXT) > end {
                break;
            }
            end = (next + CONTEXT + 1).min(parts.len());
            indices.next();
        }
        let Ok(old): Result<Vec<&str>, _> = parts[start..end]
            .iter()
            .map(|l| std::str::from_utf8(l))
            .collect()
        else {
            continue;
        };
        let mut body = String::new();
        for (i, text) in (start..end).zip(old) {
            match changed.get(&i) {
                Some(new) => {
                    body.push_str(&line(i, '-', text));
                    body.push_str(&line(i, '+', new));
                }
                None => body.push_str(&line(i, ' ', text)),
            }
        }
        let span = end - start;
        let _ = write!(hunks, "@@ -{0},{span} +{0},{span} @@\n{body}", start + 1);
    }
    if hunks.is_empty() {
        return hunks;
    }
    let name = paths::bytes(path);
    let side = |prefix: &[u8]| paths::git_quoted(&[prefix, &name].concat());
    format!("--- {}\n+++ {}\n{hunks}", side(b"a/"), side(b"b/"))
}

/// The line holding `edits` (all on one line) with each ID replaced; `None` when the file no
/// longer holds the ID found there (it changed since the scan) or the line is not UTF-8.
fn changed_line(bytes: &[u8], edits: &[(&Occurrence, &str)]) -> Option<String> {
    let unchanged = edits
        .iter()
        .all(|(o, _)| bytes.get(o.span.0..o.span.1) == Some(o.id.as_bytes()));
    if !unchanged {
        return None;
    }
    let start = line_start(bytes, edits[0].0.span.0);
    let end = bytes[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| start + i);
    let mut new = bytes[start..end].to_vec();
    for (o, replacement) in edits.iter().rev() {
        let (from, to) = (o.span.0 - start, o.span.1 - start);
        new.splice(from..to, replacement.bytes());
    }
    std::str::from_utf8(&bytes[start..end]).ok()?;
    String::from_utf8(new).ok()
}

/// The start of the line holding `offset`.
fn line_start(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{patch, printable};
    use crate::scan::classify::Kind;
    use crate::scan::judge::{Code, Finding, Level};
    use crate::scan::{Occurrence, Scan};

    fn retired_at(line: usize, span: (usize, usize)) -> Scan {
        let finding = Finding {
            code: Code::Retired,
            level: Level::Error,
            message: "m".to_owned(),
            replacement: Some("gpt-5".to_owned()),
            suggestion: None,
        };
        Scan {
            occurrences: vec![Occurrence {
                file: "a.py".into(),
                path: "a.py".to_owned(),
                line,
                column: 6,
                end_column: 16,
                id: "gpt-4-0613".to_owned(),
                kind: Kind::Literal,
                context: String::new(),
                span,
                stated: None,
                findings: vec![finding],
            }],
            summary: crate::scan::Summary::default(),
        }
    }

    #[test]
    fn patch_replaces_the_id_and_skips_files_that_changed() {
        let scan = retired_at(2, (11, 21));
        let text = b"x = 1\nM = 'gpt-4-0613'\n".to_vec();
        let read = |_: &Path| Some(text.clone());
        assert_eq!(
            patch(&scan, &read),
            "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-M = 'gpt-4-0613'\n+M = 'gpt-5'\n"
        );
        for changed in [&b"x"[..], b"x = 1\nM = 'gpt-4-0614'\n"] {
            let read = |_: &Path| Some(changed.to_vec());
            assert_eq!(patch(&scan, &read), "", "{changed:?}");
        }
    }

    #[test]
    fn printable_escapes_and_bounds() {
        let table = [
            ("plain", 10, "plain"),
            ("a\u{1b}[2Jb", 10, "a\\u{1b}[2Jb"),
            ("x\n::error ::y", 20, "x\\n::error ::y"),
            ("\u{202e}evil", 10, "\\u{202e}evil"),
            ("abcdef", 3, "abc…"),
        ];
        for (text, max, want) in table {
            assert_eq!(printable(text, max), want, "{text:?}");
        }
    }
}
