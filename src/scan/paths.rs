//! A scanned file's name as the bytes it is, and as each output must write it.
//!
//! A file name is data from the tree like any line in it: it may hold a newline, a quote or bytes
//! that are not UTF-8. Reports once carried only a lossy `String`, so a newline split the `--fix`
//! patch header (and `git apply` refused the whole patch) and a non-UTF-8 name became U+FFFD,
//! naming no file. Here the name stays bytes until an output writes it: patches quote it the way
//! git does, SARIF percent-encodes it into a URI, and an output that cannot hold the bytes (a
//! GitHub annotation is UTF-8 text) says so instead of pointing at a file that does not exist.

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
    use super::{git_quoted, uri};

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
