//! Walking a tree the way ripgrep does, in parallel, and reading each file once.
//!
//! The `ignore` crate (ripgrep's walker) applies `.gitignore` and `.ignore` files, also outside
//! a git checkout; on top of it, hidden entries are skipped except `.env` files, vendored
//! directories are skipped (and, with `--exclude-tests`, test directories and files), and files over the size limit or binary (a NUL byte in the first
//! 8 KiB) are counted rather than read or searched. Each walker thread keeps its own tally and
//! merges it into the shared one in batches.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::overrides::OverrideBuilder;
use ignore::{WalkBuilder, WalkState};

use crate::scan::matcher::Matcher;
use crate::scan::paths::{is_test_dir, is_test_file};
use crate::scan::{
    Occurrence, Options, Scan, ScanError, Summary, Unreadable, display_path, occurrences,
};

/// Directories of other people's code, skipped unless `--no-ignore`.
pub const VENDORED: [&str; 8] = [
    "node_modules",
    "vendor",
    "third_party",
    "bower_components",
    ".venv",
    "venv",
    "site-packages",
    "__pycache__",
];

/// The per-thread tally, merged at the end.
#[derive(Default)]
struct Tally {
    occurrences: Vec<Occurrence>,
    summary: Summary,
}

pub(super) fn walk(options: &Options, matcher: &Matcher) -> Result<Scan, ScanError> {
    let total = Mutex::new(Tally::default());
    let walker = builder(options)?.build_parallel();
    walker.run(|| {
        let mut mine = Local {
            total: &total,
            tally: Tally::default(),
        };
        Box::new(move |entry| {
            match entry {
                Ok(entry)
                    if entry.file_type().is_some_and(|t| t.is_file())
                        && !is_own(entry.path(), &options.own_files) =>
                {
                    visit(entry.path(), options.max_filesize, matcher, &mut mine.tally);
                }
                Ok(_) => {}
                Err(err) => mine.tally.summary.unreadable.push(unreadable_entry(&err)),
            }
            if mine.tally.occurrences.len() + mine.tally.summary.files >= 256 {
                merge(mine.total, &mut mine.tally);
            }
            WalkState::Continue
        })
    });
    let mut tally = total
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    tally
        .occurrences
        .sort_by(|a, b| (&a.path, a.line, a.column).cmp(&(&b.path, b.line, b.column)));
    tally.summary.unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Scan {
        occurrences: tally.occurrences,
        summary: tally.summary,
    })
}

/// One walker thread's tally; whatever it still holds is merged when the thread's visitor is
/// dropped at the end of the walk.
struct Local<'a> {
    total: &'a Mutex<Tally>,
    tally: Tally,
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        merge(self.total, &mut self.tally);
    }
}

fn merge(total: &Mutex<Tally>, mine: &mut Tally) {
    let mut total = total
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    total.occurrences.append(&mut mine.occurrences);
    let s = &mut mine.summary;
    total.summary.files += std::mem::take(&mut s.files);
    total.summary.bytes += std::mem::take(&mut s.bytes);
    total.summary.skipped_large += std::mem::take(&mut s.skipped_large);
    total.summary.skipped_binary += std::mem::take(&mut s.skipped_binary);
    total.summary.unreadable.append(&mut s.unreadable);
}

fn builder(options: &Options) -> Result<WalkBuilder, ScanError> {
    let first = options
        .paths
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from("."));
    let mut builder = WalkBuilder::new(&first);
    for path in options.paths.iter().skip(1) {
        builder.add(path);
    }
    let skips = Skips {
        hidden: !options.hidden,
        ignored: !options.no_ignore,
        tests: options.exclude_tests,
    };
    builder
        .standard_filters(skips.ignored)
        .hidden(false)
        .require_git(false)
        .overrides(overrides(options)?)
        .filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let name = entry.file_name().to_string_lossy();
            keep(&name, is_dir, entry.depth(), skips)
        });
    Ok(builder)
}

/// What the walk leaves out, besides ignore files' rules.
#[derive(Debug, Clone, Copy)]
struct Skips {
    /// Hidden entries (not `--hidden`).
    hidden: bool,
    /// Vendored directories (not `--no-ignore`).
    ignored: bool,
    /// Test directories and files (`--exclude-tests`).
    tests: bool,
}

/// Hidden entries are skipped unless `--hidden`, except `.env` files, where model IDs are often
/// configured; `.git` always; vendored directories unless `--no-ignore`; test directories and
/// files with `--exclude-tests` (judged by the names below the root, so a project that lies
/// under a `test` directory is not all tests). The roots named on the command line are always
/// walked.
fn keep(name: &str, is_dir: bool, depth: usize, skips: Skips) -> bool {
    if depth == 0 {
        return true;
    }
    if name == ".git" {
        return false;
    }
    if is_dir && skips.ignored && VENDORED.contains(&name) {
        return false;
    }
    if skips.tests
        && (if is_dir {
            is_test_dir(name)
        } else {
            is_test_file(name)
        })
    {
        return false;
    }
    let env_file = !is_dir && (name == ".env" || name.starts_with(".env."));
    !skips.hidden || !name.starts_with('.') || env_file
}

fn overrides(options: &Options) -> Result<ignore::overrides::Override, ScanError> {
    let mut builder = OverrideBuilder::new(".");
    let add = |builder: &mut OverrideBuilder, glob: &str, pattern: String| {
        builder
            .add(&pattern)
            .map(|_| ())
            .map_err(|e| ScanError::Glob {
                glob: glob.to_owned(),
                reason: e.to_string(),
            })
    };
    for glob in &options.include {
        add(&mut builder, glob, glob.clone())?;
    }
    for glob in &options.exclude {
        add(&mut builder, glob, format!("!{glob}"))?;
    }
    builder.build().map_err(|e| ScanError::Glob {
        glob: String::new(),
        reason: e.to_string(),
    })
}

fn unreadable_entry(err: &ignore::Error) -> Unreadable {
    let path = error_path(err).map_or_else(|| "(walk)".to_owned(), |p| display_path(&p));
    let reason = io_reason(err);
    Unreadable { path, reason }
}

fn error_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        _ => None,
    }
}

fn io_reason(err: &ignore::Error) -> String {
    match err {
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => io_reason(err),
        other => other.to_string(),
    }
}

fn is_own(path: &Path, own: &[PathBuf]) -> bool {
    own.iter().any(|file| {
        file.file_name() == path.file_name()
            && std::fs::canonicalize(path).is_ok_and(|path| &path == file)
    })
}

/// Reads and searches one file; large, binary and unreadable files are counted, not searched.
fn visit(path: &Path, max: u64, matcher: &Matcher, tally: &mut Tally) {
    let summary = &mut tally.summary;
    let size = match std::fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(err) => return summary.unreadable.push(unreadable(path, &err)),
    };
    if size > max {
        summary.skipped_large += 1;
        return;
    }
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) => return summary.unreadable.push(unreadable(path, &err)),
    };
    if is_binary(&bytes) {
        summary.skipped_binary += 1;
        return;
    }
    summary.files += 1;
    summary.bytes += bytes.len() as u64;
    let found = matcher.find(&bytes);
    if !found.is_empty() {
        tally.occurrences.extend(occurrences(path, &bytes, found));
    }
}

fn unreadable(path: &Path, err: &std::io::Error) -> Unreadable {
    Unreadable {
        path: display_path(path),
        reason: err.to_string(),
    }
}

/// A NUL byte in the first 8 KiB, as ripgrep and git decide.
fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::{Skips, keep};

    #[test]
    fn which_entries_are_walked() {
        // (name, is_dir, depth, --hidden, --no-ignore, --exclude-tests) -> walked
        let table = [
            ("src", true, 1, false, false, false, true),
            (".hidden", true, 1, false, false, false, false),
            (".hidden", true, 1, true, false, false, true),
            (".env", false, 2, false, false, false, true),
            (".env.local", false, 1, false, false, false, true),
            (".env", true, 1, false, false, false, false),
            (".git", true, 1, true, true, false, false),
            ("node_modules", true, 3, false, false, false, false),
            ("node_modules", true, 3, false, true, false, true),
            (".", true, 0, false, false, false, true),
            ("tests", true, 1, false, false, false, true),
            ("tests", true, 1, false, false, true, false),
            ("__tests__", true, 2, false, false, true, false),
            ("tests", true, 0, false, false, true, true),
            ("tests", false, 1, false, false, true, true),
            ("test_x.py", false, 2, false, false, true, false),
            ("test_x.py", false, 0, false, false, true, true),
            ("test_x.py", true, 1, false, false, true, true),
            ("x.py", false, 2, false, false, true, true),
            ("conftest.py", false, 1, false, false, true, false),
        ];
        for (name, is_dir, depth, hidden, no_ignore, tests, want) in table {
            let skips = Skips {
                hidden: !hidden,
                ignored: !no_ignore,
                tests,
            };
            assert_eq!(
                keep(name, is_dir, depth, skips),
                want,
                "{name} {is_dir} {depth}"
            );
        }
    }
}
