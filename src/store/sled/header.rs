//! The store's header: a small file beside sled's own (`<store>/header`) that says which format
//! the store is in and, once it was closed cleanly, what it held then.
//!
//! sled recovers whatever valid prefix of its log it finds and silently drops the rest (seen
//! with sled 0.34: a log cut to 1000 bytes opens as an empty database, 4 KiB of noise in the
//! middle of a 200-audit log opens with 102 audits), and that recovery rewrites the files. So the
//! store cannot ask sled whether it lost history: at a clean close the header records the number
//! of audits and the length and SHA-256 of every file sled keeps (`conf`, `db`, `snap.*`,
//! `blobs/*`), and the next open compares them before sled touches anything. A store whose bytes
//! changed since, whose header is missing while it holds a database, or whose format is unknown
//! is refused and left exactly as it is. While the store is open the header says so (`open`):
//! after a crash the next open has sled's own crash recovery to rely on, and nothing to compare.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The header file, in the store's directory.
pub(super) const HEADER_FILE: &str = "header";

/// Whether `name` is one of the files sled 0.34 keeps in its directory (as found in a store:
/// `conf`, `db`, `snap.<lsn>`, and `blobs/` for large values). Only these are compared; anything
/// else beside them (modelpin's `header` and `holder`, a file of the user's) is not sled's.
fn sleds(name: &str) -> bool {
    matches!(name, "conf" | "db" | "blobs") || name.starts_with("snap.")
}

/// The header's format; a newer one is refused, not misread.
pub const HEADER_FORMAT: u32 = 1;

/// The header as stored (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Header {
    pub format: u32,
    /// `None` while a process has the store open (or crashed with it open).
    #[serde(default)]
    pub closed: Option<Closed>,
}

/// Only the header's format, read before the rest.
#[derive(Deserialize)]
struct Format {
    format: u32,
}

/// What the store held when it was closed cleanly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Closed {
    pub at: DateTime<Utc>,
    pub audits: u64,
    pub files: Vec<FileDigest>,
}

/// One of sled's files: its path in the store and its length and SHA-256 (hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDigest {
    pub name: String,
    pub len: u64,
    pub sha256: String,
}

/// What the directory holds before sled opens it.
#[derive(Debug)]
pub(super) enum Found {
    /// Nothing yet (no directory, or an empty one): a new store is created.
    Fresh,
    /// sled's files without a header: a store from a modelpin before headers, checked by sled.
    Unheaded,
    /// A header that matches the files (or says the store was left open).
    Headed(Header),
}

/// Why the store is refused before sled opens it.
#[derive(Debug)]
pub(super) enum Refusal {
    /// The header's format is newer than this modelpin reads.
    Newer(u32),
    /// Damage: what is wrong, in words.
    Damaged(String),
    /// The directory could not be read.
    Io(std::io::Error),
}

/// Reads the directory and its header and compares a cleanly closed store with its files.
pub(super) fn inspect(path: &Path) -> Result<Found, Refusal> {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Fresh),
        Err(e) => return Err(Refusal::Io(e)),
    };
    let names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let header = match std::fs::read(path.join(HEADER_FILE)) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Refusal::Io(e)),
    };
    let header = judge(&names, header.as_deref())?;
    if let Found::Headed(Header {
        closed: Some(closed),
        ..
    }) = &header
    {
        let now = digest(path).map_err(Refusal::Io)?;
        if let Some(change) = changed(&closed.files, &now) {
            return Err(Refusal::Damaged(format!(
                "{change} since it was closed at {}",
                closed.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )));
        }
    }
    Ok(header)
}

/// What the directory's names and header bytes say, before any file is compared.
fn judge(names: &[String], header: Option<&[u8]>) -> Result<Found, Refusal> {
    let sled_files = names.iter().any(|n| sleds(n));
    let Some(bytes) = header else {
        return match (sled_files, names.iter().any(|n| n == "db")) {
            (false, _) => Ok(Found::Fresh),
            (true, true) => Ok(Found::Unheaded),
            (true, false) => Err(Refusal::Damaged(
                "its database file `db` is missing and it has no header".to_owned(),
            )),
        };
    };
    let unreadable = |e: serde_json::Error| {
        Refusal::Damaged(format!("its header `{HEADER_FILE}` cannot be read: {e}"))
    };
    // The format alone first: a newer header may have fields this one does not know.
    let format = serde_json::from_slice::<Format>(bytes)
        .map_err(unreadable)?
        .format;
    if format > HEADER_FORMAT {
        return Err(Refusal::Newer(format));
    }
    if format != HEADER_FORMAT {
        return Err(Refusal::Damaged(format!(
            "its header `{HEADER_FILE}` has the unknown format {format}"
        )));
    }
    let header: Header = serde_json::from_slice(bytes).map_err(unreadable)?;
    if !names.iter().any(|n| n == "db") && (header.closed.is_some() || sled_files) {
        return Err(Refusal::Damaged(
            "its database file `db` is missing".to_owned(),
        ));
    }
    Ok(Found::Headed(header))
}

/// The first difference between the files at close and now, in words.
fn changed(then: &[FileDigest], now: &[FileDigest]) -> Option<String> {
    for was in then {
        let Some(is) = now.iter().find(|f| f.name == was.name) else {
            return Some(format!("its file `{}` is missing", was.name));
        };
        if is.len != was.len {
            return Some(format!(
                "its file `{}` went from {} to {} bytes",
                was.name, was.len, is.len
            ));
        }
        if is.sha256 != was.sha256 {
            return Some(format!("the bytes of its file `{}` changed", was.name));
        }
    }
    now.iter()
        .find(|f| !then.iter().any(|t| t.name == f.name))
        .map(|f| format!("a file `{}` appeared in it", f.name))
}

/// Length and SHA-256 of every file sled keeps in `path` (and `blobs/`), in name order.
pub(super) fn digest(path: &Path) -> std::io::Result<Vec<FileDigest>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !sleds(&name) {
            continue;
        }
        if entry.file_type()?.is_dir() {
            for inner in std::fs::read_dir(entry.path())? {
                let inner = inner?;
                let inner_name = inner.file_name().to_string_lossy().into_owned();
                files.push(file_digest(&format!("{name}/{inner_name}"), &inner.path())?);
            }
        } else {
            files.push(file_digest(&name, &entry.path())?);
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// Streams the file through SHA-256 in 64 KiB reads: memory stays flat whatever its size.
fn file_digest(name: &str, path: &Path) -> std::io::Result<FileDigest> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        len += n as u64;
    }
    let sha256 = hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        });
    Ok(FileDigest {
        name: name.to_owned(),
        len,
        sha256,
    })
}

/// Writes the header atomically: a new file, synced, renamed over the old one.
pub(super) fn write(path: &Path, header: &Header) -> std::io::Result<()> {
    std::fs::create_dir_all(path)?;
    let bytes = serde_json::to_vec_pretty(header).map_err(std::io::Error::other)?;
    let new: PathBuf = path.join("header.new");
    let mut file = std::fs::File::create(&new)?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    std::fs::rename(&new, path.join(HEADER_FILE))
}

/// The header of a store being opened now.
pub(super) fn open() -> Header {
    Header {
        format: HEADER_FORMAT,
        closed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names in the directory, the header's bytes, what is found.
    type Case<'a> = (&'a [&'a str], Option<&'a [u8]>, &'a str);

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn file(name: &str, len: u64, sha: &str) -> FileDigest {
        FileDigest {
            name: name.into(),
            len,
            sha256: sha.into(),
        }
    }

    #[test]
    fn the_header_and_the_names_decide_what_the_directory_holds() {
        let ok = br#"{"format":1,"closed":null}"#.as_slice();
        let newer = br#"{"format":7,"unknown_to_us":true}"#.as_slice();
        let zero = br#"{"format":0}"#.as_slice();
        let garbage = b"\x00not json".as_slice();
        let sled = ["conf", "db", "blobs"];
        let cases: [Case; 10] = [
            (&[], None, "fresh"),
            (&["holder", "filler"], None, "fresh"),
            (&sled, None, "unheaded"),
            (
                &["conf", "blobs"],
                None,
                "damaged: its database file `db` is missing",
            ),
            (&["conf", "db", "header"], Some(ok), "headed"),
            (
                &["conf", "header"],
                Some(ok),
                "damaged: its database file `db` is missing",
            ),
            (&["header"], Some(ok), "headed"),
            (&sled, Some(newer), "newer 7"),
            (
                &sled,
                Some(zero),
                "damaged: its header `header` has the unknown format 0",
            ),
            (
                &sled,
                Some(garbage),
                "damaged: its header `header` cannot be read",
            ),
        ];
        for (list, header, want) in cases {
            let got = match judge(&names(list), header) {
                Ok(Found::Fresh) => "fresh".to_owned(),
                Ok(Found::Unheaded) => "unheaded".to_owned(),
                Ok(Found::Headed(_)) => "headed".to_owned(),
                Err(Refusal::Newer(n)) => format!("newer {n}"),
                Err(Refusal::Damaged(why)) => format!("damaged: {why}"),
                Err(Refusal::Io(e)) => format!("io {e}"),
            };
            assert!(got.starts_with(want), "{list:?}: {got}");
        }
    }

    #[test]
    fn every_change_to_the_files_since_the_close_is_named() {
        let then = vec![file("conf", 62, "a"), file("db", 900, "b")];
        let cases = [
            (vec![file("conf", 62, "a"), file("db", 900, "b")], None),
            (
                vec![file("conf", 62, "a")],
                Some("its file `db` is missing"),
            ),
            (
                vec![file("conf", 62, "a"), file("db", 100, "b")],
                Some("its file `db` went from 900 to 100 bytes"),
            ),
            (
                vec![file("conf", 62, "a"), file("db", 900, "c")],
                Some("the bytes of its file `db` changed"),
            ),
            (
                vec![
                    file("conf", 62, "a"),
                    file("db", 900, "b"),
                    file("snap.1", 9, "d"),
                ],
                Some("a file `snap.1` appeared in it"),
            ),
        ];
        for (now, want) in cases {
            assert_eq!(changed(&then, &now).as_deref(), want, "{now:?}");
        }
    }

    #[test]
    fn a_closed_store_whose_bytes_changed_is_refused_before_it_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        std::fs::write(path.join("conf"), b"conf").unwrap();
        std::fs::write(path.join("db"), b"0123456789").unwrap();
        let closed = Closed {
            at: Utc::now(),
            audits: 0,
            files: digest(path).unwrap(),
        };
        let header = Header {
            format: HEADER_FORMAT,
            closed: Some(closed),
        };
        write(path, &header).unwrap();
        assert!(matches!(inspect(path), Ok(Found::Headed(h)) if h == header));
        std::fs::write(path.join("db"), b"0123456780").unwrap();
        let Err(Refusal::Damaged(why)) = inspect(path) else {
            panic!("a changed db is refused");
        };
        assert!(why.starts_with("the bytes of its file `db` changed since it was closed at "));
    }
}
