//! `modelpin scan`: every model ID written in a source tree, judged before it retires.
//!
//! A pin protects only the IDs in pins.toml; the IDs that break production are the ones
//! hard-coded across a codebase. This module walks a tree the way ripgrep does (gitignore, hidden
//! and binary files skipped, in parallel), finds model IDs with one automaton ([`matcher`]),
//! decides whether each is used or only mentioned ([`classify`]), and judges each distinct ID once
//! against the lifecycle table, the pins and the lock ([`judge`]), plus any retirement date its
//! own line states ([`stated`]). Rendering is in [`render`] and [`sarif`]; a successor is written
//! only in the form of the ID it replaces ([`forms`]) and file names keep their bytes until each
//! output writes them ([`paths`]). Nothing here edits a file: `--fix` only prints a patch.

pub mod classify;
pub mod code;
pub mod forms;
pub mod judge;
pub mod matcher;
pub mod paths;
pub mod render;
pub mod sarif;
pub mod stated;
mod walk;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::scan::classify::{Kind, Regions, syntax_for};
use crate::scan::judge::{Finding, Knowledge, Level};
use crate::scan::matcher::Matcher;

/// Longest context line shown, in characters.
pub const CONTEXT_CHARS: usize = 160;

/// What to walk and what to skip.
#[derive(Debug, Clone)]
pub struct Options {
    pub paths: Vec<PathBuf>,
    /// Only files matching one of these globs (gitignore syntax).
    pub include: Vec<String>,
    /// Skip files matching these globs.
    pub exclude: Vec<String>,
    pub hidden: bool,
    /// Ignore files and the vendored-directory rule are not applied.
    pub no_ignore: bool,
    /// Test directories and files ([`paths::is_test_path`]) below the paths named are skipped.
    pub exclude_tests: bool,
    /// Files larger than this many bytes are skipped and counted.
    pub max_filesize: u64,
    /// modelpin's own files (pins.toml, the lock), canonical: their IDs are the pins, not uses.
    pub own_files: Vec<PathBuf>,
}

/// One model ID at one place.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occurrence {
    /// The path for reading, as walked.
    #[serde(skip)]
    pub file: PathBuf,
    /// The path as text (bytes that are not UTF-8 shown as U+FFFD; see [`paths`] for the exact
    /// forms each output writes).
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in Unicode code points.
    pub column: usize,
    /// Exclusive, in Unicode code points.
    pub end_column: usize,
    pub id: String,
    pub kind: Kind,
    /// A retirement date the same line states for the ID (see [`stated`]).
    #[serde(skip)]
    pub stated: Option<chrono::NaiveDate>,
    /// The line, control characters escaped, bounded to [`CONTEXT_CHARS`].
    #[serde(skip)]
    pub context: String,
    /// Byte range of the whole ID in the file, for `--fix`.
    #[serde(skip)]
    pub span: (usize, usize),
    pub findings: Vec<Finding>,
}

impl Occurrence {
    /// The highest level among its findings.
    #[must_use]
    pub fn level(&self) -> Option<Level> {
        self.findings.iter().map(|f| f.level).max()
    }
}

/// What a scan saw.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub files: usize,
    pub bytes: u64,
    pub skipped_large: usize,
    pub skipped_binary: usize,
    /// Findings left out by `--min-level`.
    pub below_min_level: usize,
    /// Paths that could not be read, with the reason.
    pub unreadable: Vec<Unreadable>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    pub path: String,
    pub reason: String,
}

/// The scan's result: occurrences sorted by path, line and column.
#[derive(Debug, Default)]
pub struct Scan {
    pub occurrences: Vec<Occurrence>,
    pub summary: Summary,
}

impl Scan {
    /// Drops findings below `level`; above `info`, also the occurrences left with none, so a
    /// report holds only what was asked for.
    pub fn keep_at_least(&mut self, level: Level) {
        if level == Level::Info {
            return;
        }
        for o in &mut self.occurrences {
            let before = o.findings.len();
            o.findings.retain(|f| f.level >= level);
            self.summary.below_min_level += before - o.findings.len();
        }
        self.occurrences.retain(|o| !o.findings.is_empty());
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("invalid glob `{glob}`: {reason}")]
    Glob { glob: String, reason: String },
}

/// Walks `options.paths` and returns every occurrence with its findings.
pub fn scan(
    options: &Options,
    matcher: &Matcher,
    knowledge: &Knowledge<'_>,
) -> Result<Scan, ScanError> {
    let mut scan = walk::walk(options, matcher)?;
    let mut verdicts: HashMap<String, Vec<Finding>> = HashMap::new();
    for occurrence in &mut scan.occurrences {
        let verdict = verdicts
            .entry(occurrence.id.clone())
            .or_insert_with(|| knowledge.judge(&occurrence.id));
        occurrence.findings = match occurrence.stated {
            Some(date) => {
                let with_line = knowledge.with_stated(&occurrence.id, date, verdict);
                Knowledge::for_kind(&with_line, occurrence.kind)
            }
            None => Knowledge::for_kind(verdict, occurrence.kind),
        };
    }
    Ok(scan)
}

/// A path as reports show it: without a leading `./`, with `/` separators.
#[must_use]
pub fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    text.strip_prefix("./").map(str::to_owned).unwrap_or(text)
}

pub(crate) fn occurrences(
    path: &Path,
    bytes: &[u8],
    found: Vec<matcher::Candidate>,
) -> Vec<Occurrence> {
    let regions = Regions::new(syntax_for(path), bytes);
    let shown = display_path(path);
    let mut lines = LineIndex::default();
    found
        .into_iter()
        .filter_map(|c| {
            let kind = match c.form {
                matcher::Form::Embedded => Kind::Identifier,
                matcher::Form::Standalone => regions.kind_at(c.start),
            };
            if matches!(c.id.as_str(), "o1" | "o3") && !reasoning_model(kind, bytes, c.start) {
                return None;
            }
            let (line, line_start, column) = lines.locate(bytes, c.start);
            Some(Occurrence {
                file: path.to_path_buf(),
                path: shown.clone(),
                line,
                column,
                end_column: column + chars(&bytes[c.start..c.end]),
                context: context(bytes, line_start, c.start),
                span: (c.start, c.end),
                stated: stated::stated(bytes, c.start, c.end),
                id: c.id,
                kind,
                findings: Vec::new(),
            })
        })
        .collect()
}

/// A bare `o1` or `o3` is far more often a variable or a format argument than a model: it counts
/// only as a literal on a line that says `model`, `engine` or `reasoning`.
fn reasoning_model(kind: Kind, bytes: &[u8], at: usize) -> bool {
    const REACH: usize = 200;
    let floor = at.saturating_sub(REACH);
    let start = bytes[floor..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(floor, |i| floor + i + 1);
    let ceiling = bytes.len().min(at + REACH);
    let end = bytes[at..ceiling]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(ceiling, |i| at + i);
    let line = String::from_utf8_lossy(&bytes[start..end]).to_ascii_lowercase();
    kind == Kind::Literal
        && ["model", "engine", "reasoning"]
            .iter()
            .any(|w| line.contains(w))
}

/// Lines and columns over ascending offsets; incremental, so a minified file's one long line with
/// many IDs is counted once.
#[derive(Default)]
struct LineIndex {
    offset: usize,
    line: usize,
    line_start: usize,
    /// Code points from `line_start` to `offset`.
    column: usize,
}

impl LineIndex {
    /// 1-based line of `offset`, the byte where that line starts, and the 1-based column.
    fn locate(&mut self, bytes: &[u8], offset: usize) -> (usize, usize, usize) {
        let from = self.offset.min(offset);
        for (i, &b) in bytes[from..offset].iter().enumerate() {
            if b == b'\n' {
                self.line += 1;
                self.line_start = from + i + 1;
                self.column = 0;
            } else if (b & 0xC0) != 0x80 {
                self.column += 1;
            }
        }
        self.offset = offset;
        (self.line + 1, self.line_start, self.column + 1)
    }
}

/// Unicode code points in UTF-8 bytes (each invalid byte counts as one).
fn chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// The line around `at`, bounded and with control characters escaped.
fn context(bytes: &[u8], line_start: usize, at: usize) -> String {
    // Bounded: what is shown is bounded too, and a minified line can be megabytes long.
    let window = &bytes[at..bytes.len().min(at + 4 * CONTEXT_CHARS)];
    let line_end = window
        .iter()
        .position(|&b| b == b'\n')
        .map_or(at + window.len(), |i| at + i);
    let from = if at - line_start > CONTEXT_CHARS / 2 {
        at - CONTEXT_CHARS / 2
    } else {
        line_start
    };
    let text = String::from_utf8_lossy(&bytes[from..line_end]);
    let mut out = if from > line_start {
        "…".to_owned()
    } else {
        String::new()
    };
    out.push_str(&render::printable(
        text.trim_end_matches('\r'),
        CONTEXT_CHARS,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::{LineIndex, chars, context};

    #[test]
    fn lines_and_columns_count_code_points() {
        let text = "a\né gpt\n\nx".as_bytes();
        let mut index = LineIndex::default();
        assert_eq!(index.locate(text, 0), (1, 0, 1));
        assert_eq!(index.locate(text, 5), (2, 2, 3));
        assert_eq!(index.locate(text, 5), (2, 2, 3));
        assert_eq!(chars(&text[2..5]), 2);
        assert_eq!(index.locate(text, 10), (4, 10, 1));
    }

    #[test]
    fn context_is_bounded_and_escaped() {
        let long = format!("{}\u{1b}[31mgpt-4o{}", "x".repeat(500), "y".repeat(500));
        let got = context(long.as_bytes(), 0, 505);
        assert!(got.chars().count() <= super::CONTEXT_CHARS + 10, "{got}");
        assert!(!got.contains('\u{1b}'), "{got}");
    }
}
