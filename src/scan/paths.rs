//! A scanned file's name as the bytes it is, and as each output must write it.
//!
//! A file name is data from the tree like any line in it: it may hold a newline, a quote or bytes
//! that are not UTF-8. Reports once carried only a lossy `String`, so a newline split the `--fix`
//! patch header (and `git apply` refused the whole patch) and a non-UTF-8 name became U+FFFD,
//! naming no file. Here the name stays bytes until an output writes it: patches quote it the way
//! git does, SARIF percent-encodes it into a URI, and an output that cannot hold the bytes (a
//! GitHub annotation is UTF-8 text) says so instead of pointing at a file that does not exist.
//!
//! It also holds the one rule for what a test file is, which `scan --exclude-tests` and
//! `init --from-scan` share ([`is_test_path`]).

use std::fmt::Write as _;
use std::path::Path;

/// The name as reports show it: without a leading `./`, with `/` separators.
#[must_use]
pub fn bytes(path: &Path) -> Vec<u8> {
    let raw = raw(path);
    raw.strip_prefix(b"./").map_or(raw.clone(), <[u8]>::to_vec)
}

#[cfg(unix)]
fn raw(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt as _;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn raw(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

/// The name as git writes it in a patch header: as is when plain, otherwise in double quotes with
/// C-style escapes (`"nl\nb.py"`, `"\377.py"`), which `git apply` and `patch` read back.
#[must_use]
pub fn git_quoted(name: &[u8]) -> String {
    let plain = name
        .iter()
        .all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if plain {
        return String::from_utf8_lossy(name).into_owned();
    }
    let mut out = String::from("\"");
    for &b in name {
        match b {
            b'\x07' => out.push_str("\\a"),
            b'\x08' => out.push_str("\\b"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\x0b' => out.push_str("\\v"),
            b'\x0c' => out.push_str("\\f"),
            b'\r' => out.push_str("\\r"),
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..0x7f => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

/// Directory names that hold tests (compared without case).
pub const TEST_DIRS: [&str; 7] = [
    "tests",
    "test",
    "__tests__",
    "spec",
    "specs",
    "testdata",
    "testing",
];

/// A directory that holds tests: its name is one of [`TEST_DIRS`].
#[must_use]
pub fn is_test_dir(name: &str) -> bool {
    TEST_DIRS.iter().any(|dir| dir.eq_ignore_ascii_case(name))
}

/// A file named as test runners find tests: `test_*`, `*_test.*`, `*_spec.*`, `*.test.*`,
/// `*.spec.*` or `conftest.py` (compared without case).
#[must_use]
pub fn is_test_file(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let stem = name.split('.').next().unwrap_or_default();
    name == "conftest.py"
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || [".test.", ".spec."].iter().any(|m| name.contains(m))
}

/// A test file: `path` (`/`-separated, relative to the directory scanned) lies under a test
/// directory ([`is_test_dir`]) or its name is a test's ([`is_test_file`]).
#[must_use]
pub fn is_test_path(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    parts.iter().any(|dir| is_test_dir(dir)) || is_test_file(name)
}

/// A relative path as a URI reference: unreserved characters and `/` kept, every other byte
/// percent-encoded, so any name (newlines, non-UTF-8 bytes) decodes back to itself.
#[must_use]
pub fn uri(name: &[u8]) -> String {
    let mut out = String::new();
    for &byte in name {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{git_quoted, is_test_path, uri};

    #[test]
    fn names_are_quoted_as_git_quotes_them() {
        for (name, want) in [
            (&b"src/a.py"[..], "src/a.py"),
            (b"my dir/a.py", "my dir/a.py"),
            (b"nl\nb.py", "\"nl\\nb.py\""),
            (b"q\"\\.py", "\"q\\\"\\\\.py\""),
            (b"\xff\xfe.py", "\"\\377\\376.py\""),
            ("é.md".as_bytes(), "\"\\303\\251.md\""),
            (b"\x1b[2J", "\"\\033[2J\""),
        ] {
            assert_eq!(git_quoted(name), want, "{name:?}");
        }
    }

    /// The one test-file rule `scan --exclude-tests` and `init --from-scan` share.
    #[test]
    fn test_files_by_path() {
        for (path, want) in [
            ("tests/test_client.py", true),
            ("tests/helpers.py", true),
            ("test/a.js", true),
            ("src/app/tests/fixtures.py", true),
            ("web/__tests__/button.tsx", true),
            ("spec/models_spec.rb", true),
            ("specs/a.ts", true),
            ("pkg/testdata/models.json", true),
            ("src/testing/fake.py", true),
            ("Tests/Case.swift", true),
            ("test_client.py", true),
            ("src/test_client.py", true),
            ("pkg/client_test.go", true),
            ("lib/models_spec.rb", true),
            ("web/button.spec.ts", true),
            ("web/button.test.tsx", true),
            ("conftest.py", true),
            ("src/Conftest.py", true),
            ("src/client.py", false),
            ("src/x.py", false),
            ("src/attestation.py", false),
            ("src/contest/entry.py", false),
            ("src/latest/a.py", false),
            ("src/testutils.py", false),
            ("src/test.py", false),
            ("src/tests.py", false),
            ("docs/testing.md", false),
            ("latest.py", false),
            ("", false),
        ] {
            assert_eq!(is_test_path(path), want, "{path}");
        }
    }

    #[test]
    fn uris_encode_what_a_uri_cannot_hold() {
        for (path, want) in [
            (&b"src/a.py"[..], "src/a.py"),
            (b"my dir/a#b?.ts", "my%20dir/a%23b%3F.ts"),
            ("é.md".as_bytes(), "%C3%A9.md"),
            (b"nl\nb\xff.py", "nl%0Ab%FF.py"),
        ] {
            assert_eq!(uri(path), want, "{path:?}");
        }
    }
}
