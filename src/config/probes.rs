//! The probe files pins refer to: globs expanded against pins.toml's directory, each file
//! loaded once however many pins name it, ids unique across files.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::Probe;
use super::check::Check;
use super::decode::decode;
use super::ident::{Named, Place};
use super::probe::probe;
use super::raw::{RawProbe, Str};
use super::source::Source;

/// How deep `**` looks.
const MAX_DEPTH: usize = 32;

/// Largest probe file read: a probe is a prompt and a few checks, kilobytes at most.
pub(crate) const MAX_PROBE_BYTES: u64 = 1024 * 1024;

pub(crate) struct Probes {
    base: PathBuf,
    /// Every file looked at: its probe id, or `None` when the file was rejected.
    files: BTreeMap<PathBuf, Option<String>>,
    /// Accepted probes by id, with their file's text (for the config digest) and where the id is.
    by_id: BTreeMap<String, Loaded>,
}

struct Loaded {
    probe: Probe,
    text: String,
    at: String,
}

impl Probes {
    pub fn new(base: &Path) -> Probes {
        Probes {
            base: base.to_path_buf(),
            files: BTreeMap::new(),
            by_id: BTreeMap::new(),
        }
    }

    /// The ids of the probes `pattern` names. Pattern problems are reported at the pattern in
    /// pins.toml; problems inside a probe file are reported at that file.
    pub fn resolve(&mut self, check: &mut Check, pattern: &Str) -> Vec<String> {
        let paths = match expand(&self.base, pattern.get_ref()) {
            Ok(paths) => paths,
            Err(err) => {
                check
                    .error(
                        pattern.span(),
                        format!("invalid glob `{}`", pattern.get_ref()),
                    )
                    .note(err);
                return Vec::new();
            }
        };
        if paths.is_empty() {
            check
                .error(
                    pattern.span(),
                    format!("no probe file matches `{}`", pattern.get_ref()),
                )
                .note("probe paths are relative to the directory of pins.toml");
        }
        paths
            .into_iter()
            .filter_map(|path| self.load(check, pattern, path))
            .collect()
    }

    fn load(&mut self, check: &mut Check, pattern: &Str, path: PathBuf) -> Option<String> {
        if let Some(id) = self.files.get(&path) {
            return id.clone();
        }
        let id = self.read(check, pattern, &path);
        self.files.insert(path, id.clone());
        id
    }

    fn read(&mut self, check: &mut Check, pattern: &Str, path: &Path) -> Option<String> {
        let bytes = match crate::files::read(path, &self.base, MAX_PROBE_BYTES) {
            Ok(bytes) => bytes,
            Err(refusal) => {
                check
                    .error(
                        pattern.span(),
                        format!("cannot read probe file `{}`: {refusal}", path.display()),
                    )
                    .help(refusal.help());
                return None;
            }
        };
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                check
                    .errors
                    .push(super::not_utf8(path, e.as_bytes(), e.utf8_error()));
                return None;
            }
        };
        let src = Source::parse(path, text.clone())
            .map_err(|d| check.errors.push(d))
            .ok()?;
        let raw: RawProbe = decode(&src).map_err(|d| check.errors.push(d)).ok()?;
        let id_span = raw.id.span();
        let mut file_check = Check::new(&src);
        let accepted = probe(&mut file_check, &src, raw);
        if let Some(probe) = &accepted
            && let Some(first) = self.by_id.get(&probe.id)
        {
            file_check
                .error(
                    id_span.clone(),
                    format!("duplicate probe id `{}`", probe.id),
                )
                .note(format!("first defined at {}", first.at));
        }
        check.errors.extend(file_check.finish());
        let probe = accepted.filter(|p| !self.by_id.contains_key(&p.id))?;
        let id = probe.id.clone();
        let at = src.location(id_span);
        check.names.push(Named {
            kind: "probe id",
            id: id.clone(),
            place: Place::Located(at.clone()),
        });
        self.by_id.insert(id.clone(), Loaded { probe, text, at });
        Some(id)
    }

    /// Probes sorted by id, and the bytes of their files in that order (for the config digest).
    pub fn finish(self) -> (Vec<Probe>, Vec<u8>) {
        let mut bytes = Vec::new();
        let mut probes = Vec::new();
        for loaded in self.by_id.into_values() {
            bytes.extend_from_slice(loaded.text.as_bytes());
            probes.push(loaded.probe);
        }
        (probes, bytes)
    }
}

fn has_glob_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Files matching `pattern` under `base`, sorted. A pattern without glob characters is a path.
fn expand(base: &Path, pattern: &str) -> Result<Vec<PathBuf>, String> {
    if !has_glob_meta(pattern) {
        // Whatever is there (a symlink, a FIFO) is handed on, so the read says why it is refused.
        let path = base.join(pattern);
        return Ok(match fs::symlink_metadata(&path) {
            Ok(meta) if !meta.is_dir() => vec![path],
            _ => Vec::new(),
        });
    }
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts.iter().take_while(|p| !has_glob_meta(p)).count();
    let root = base.join(parts[..literal].join("/"));
    let rest = parts[literal..].join("/");
    let matcher = GlobBuilder::new(&rest)
        .literal_separator(true)
        .build()
        .map_err(|e| e.kind().to_string())?
        .compile_matcher();
    let depth = if rest.contains("**") {
        MAX_DEPTH
    } else {
        parts.len() - literal
    };
    let mut found = Vec::new();
    walk(&root, "", depth, &matcher, &mut found);
    found.sort();
    Ok(found.into_iter().map(|rel| root.join(rel)).collect())
}

/// Collects paths relative to `root` (with `/` separators) that `matcher` accepts. Symlinked
/// directories are not entered (a link to `/` would walk the disk); symlinked files are collected
/// and judged when read.
fn walk(root: &Path, rel: &str, depth: usize, matcher: &GlobMatcher, found: &mut Vec<String>) {
    let dir = root.join(rel);
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        &dir
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if depth > 1 {
                walk(root, &child, depth - 1, matcher, found);
            }
        } else if matcher.is_match(&child) {
            found.push(child);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::expand;

    fn names(base: &Path, pattern: &str) -> Vec<String> {
        expand(base, pattern)
            .unwrap()
            .iter()
            .map(|p| p.strip_prefix(base).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn globs_match_files_below_pins_directory() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "probes/b.toml",
            "probes/a.toml",
            "probes/x.txt",
            "probes/deep/c.toml",
        ] {
            let path = dir.path().join(f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "").unwrap();
        }
        let base = dir.path();
        assert_eq!(
            names(base, "probes/*.toml"),
            ["probes/a.toml", "probes/b.toml"]
        );
        assert_eq!(
            names(base, "probes/**/*.toml"),
            ["probes/a.toml", "probes/b.toml", "probes/deep/c.toml"]
        );
        assert_eq!(names(base, "probes/deep/c.toml"), ["probes/deep/c.toml"]);
        assert_eq!(names(base, "*/a.toml"), ["probes/a.toml"]);
        assert!(names(base, "probes/*.tml").is_empty());
        assert!(names(base, "nope.toml").is_empty());
        assert!(expand(base, "probes/[a.toml").is_err());
    }
}
