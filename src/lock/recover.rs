//! Reading back what an unreadable `modelpin.lock` still holds, so re-locking one pin never
//! drops another pin's baseline silently: Git merge-conflict markers found (and named by line),
//! each side of a conflict read on its own, and every pin entry that still reads kept.

use std::collections::BTreeMap;
use std::path::Path;

use super::{LockedPin, disk, read_bounded, within_bounds};

/// The 1-based line of the first Git merge-conflict marker (`<<<<<<<`, `=======`, `>>>>>>>` or
/// diff3's `|||||||` at the start of a line), if any. JSON never starts a line with these.
#[must_use]
pub fn conflict_marker(bytes: &[u8]) -> Option<usize> {
    bytes
        .split(|b| *b == b'\n')
        .position(|line| marker_of(line).is_some())
        .map(|i| i + 1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Ours,
    Base,
    Split,
    Theirs,
}

fn marker_of(line: &[u8]) -> Option<Marker> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let is = |prefix: &[u8]| {
        line.starts_with(prefix) && line.get(7).is_none_or(|b| *b == b' ' || *b == b'\t')
    };
    if is(b"<<<<<<<") {
        Some(Marker::Ours)
    } else if is(b"|||||||") {
        Some(Marker::Base)
    } else if line == b"=======" {
        Some(Marker::Split)
    } else if is(b">>>>>>>") {
        Some(Marker::Theirs)
    } else {
        None
    }
}

/// What could be read back from a lock that does not read as a whole.
#[derive(Debug, Clone, Default)]
pub struct Recovered {
    /// Pins whose entries read (on both sides of a conflict, equal), with their baselines.
    pub pins: BTreeMap<String, LockedPin>,
    /// Pins named in the file whose entries did not read.
    pub unreadable: Vec<String>,
    /// Pins the two sides of a merge conflict record differently.
    pub disagree: Vec<String>,
    /// Nothing of the file's structure could be read: which pins it held is unknown.
    pub unknown: bool,
}

/// Reads back every pin entry of an unreadable lock that still reads on its own; for a file with
/// merge-conflict markers, each side is read and a pin is kept when the sides agree on it (or
/// only one side has it).
#[must_use]
pub fn recover(path: &Path) -> Recovered {
    let Ok(Some(bytes)) = read_bounded(path) else {
        return Recovered {
            unknown: true,
            ..Recovered::default()
        };
    };
    if conflict_marker(&bytes).is_none() {
        return recover_document(&bytes);
    }
    let (ours, theirs) = sides(&bytes);
    let (ours, theirs) = (recover_document(&ours), recover_document(&theirs));
    let mut out = Recovered {
        unknown: ours.unknown && theirs.unknown,
        ..Recovered::default()
    };
    let ids: std::collections::BTreeSet<&String> =
        ours.pins.keys().chain(theirs.pins.keys()).collect();
    for id in ids {
        match (ours.pins.get(id), theirs.pins.get(id)) {
            (Some(a), Some(b)) if a != b => out.disagree.push(id.clone()),
            (Some(pin), _) | (None, Some(pin)) => {
                out.pins.insert(id.clone(), pin.clone());
            }
            (None, None) => {}
        }
    }
    let mut unreadable: Vec<String> = ours
        .unreadable
        .into_iter()
        .chain(theirs.unreadable)
        .collect();
    unreadable.sort();
    unreadable.dedup();
    unreadable.retain(|id| !out.pins.contains_key(id) && !out.disagree.contains(id));
    out.unreadable = unreadable;
    out
}

/// The two versions a conflicted file stands for: the lines outside conflicts plus, inside
/// each, the first (ours) or the last (theirs) side.
fn sides(bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut state: Option<Marker> = None;
    for line in bytes.split(|b| *b == b'\n') {
        match marker_of(line) {
            Some(Marker::Ours) => state = Some(Marker::Ours),
            Some(Marker::Base) if state.is_some() => state = Some(Marker::Base),
            Some(Marker::Split) if state.is_some() => state = Some(Marker::Theirs),
            Some(Marker::Theirs) => state = None,
            _ => {
                let (to_ours, to_theirs) = match state {
                    None => (true, true),
                    Some(Marker::Ours) => (true, false),
                    Some(Marker::Theirs) => (false, true),
                    Some(_) => (false, false),
                };
                for (keep, out) in [(to_ours, &mut ours), (to_theirs, &mut theirs)] {
                    if keep {
                        out.extend_from_slice(line);
                        out.push(b'\n');
                    }
                }
            }
        }
    }
    (ours, theirs)
}

/// Each pin entry of one JSON document that reads as a `LockedPin` within the bounds.
fn recover_document(bytes: &[u8]) -> Recovered {
    let value: Option<serde_json::Value> = serde_json::from_slice(bytes).ok();
    let Some(pins) = value
        .as_ref()
        .and_then(|v| v.get("pins"))
        .and_then(serde_json::Value::as_object)
    else {
        return Recovered {
            unknown: true,
            ..Recovered::default()
        };
    };
    let version = value
        .as_ref()
        .and_then(|v| v.get("lock_version"))
        .and_then(serde_json::Value::as_u64);
    let samples = value.as_ref().and_then(|v| v.get("samples"));
    let mut budget = disk::Budget(disk::MAX_SAMPLE_BYTES);
    let mut out = Recovered::default();
    for (id, entry) in pins {
        let pin = if version.is_some_and(|v| v >= 3) {
            let blobs = samples.and_then(|s| s.get(id)).cloned();
            let contract = serde_json::from_value::<disk::Pin>(entry.clone()).ok();
            let blobs = blobs.map(serde_json::from_value::<disk::PinSamples>);
            match (contract, blobs) {
                (Some(contract), Some(Ok(blobs))) => {
                    disk::join_pin(contract, &blobs, &mut budget).ok()
                }
                _ => None,
            }
        } else {
            serde_json::from_value::<LockedPin>(entry.clone()).ok()
        };
        match pin {
            Some(pin) if within_bounds(&pin).is_ok() => {
                out.pins.insert(id.clone(), pin);
            }
            _ => out.unreadable.push(id.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{conflict_marker, sides};

    #[test]
    fn markers_count_only_at_a_line_start_and_with_their_own_shape() {
        assert_eq!(conflict_marker(b"{\n<<<<<<< HEAD\n}"), Some(2));
        assert_eq!(conflict_marker(b"{\n=======\r\n}"), Some(2));
        assert_eq!(conflict_marker(b"{\n>>>>>>> theirs\n}"), Some(2));
        assert_eq!(conflict_marker(b"{\n  \"a\": \"<<<<<<< x\"\n}"), None);
        assert_eq!(conflict_marker(b"========\n<<<<<<<<\n"), None);
    }

    #[test]
    fn each_side_keeps_the_lines_outside_the_conflict_and_its_own_inside() {
        let text = b"a\n<<<<<<< HEAD\nours\n||||||| base\nbase\n=======\ntheirs\n>>>>>>> x\nz\n";
        let (ours, theirs) = sides(text);
        assert_eq!(ours, b"a\nours\nz\n\n");
        assert_eq!(theirs, b"a\ntheirs\nz\n\n");
    }
}
