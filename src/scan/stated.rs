//! A retirement date written on the same line as an ID: `# shutdown 2025-10-10`, `deprecated on
//! 2024-06-13`, `Announced shutdown date: 2025-10-10.`
//!
//! SDKs and configs often say when a model goes away right beside it, and that line may be the
//! only source that knows: the openai SDK's list of deprecated values gave a shutdown date for an
//! ID no feed listed. A date counts only after a lifecycle word on the same line, and not for an
//! ID the line names as the way out (`deprecated 2025-01-01, use gpt-5`).

use chrono::NaiveDate;

use crate::lifecycle::dates;

/// Words that say the date is the end of a model's life.
const LIFECYCLE: [&str; 9] = [
    "shutdown",
    "shut down",
    "shuts down",
    "deprecat",
    "retire",
    "sunset",
    "end of life",
    "end-of-life",
    "discontinu",
];

/// Words that introduce the successor: an ID after one of them is the way out, not the one going.
const SUCCESSOR: [&str; 9] = [
    "use ",
    "replac",
    "instead",
    "successor",
    "migrat",
    "switch",
    "move to",
    "upgrade",
    "->",
];

/// The longest line looked at, in bytes on each side of the ID.
const REACH: usize = 1024;

/// The retirement date the line around `start..end` states for the ID there, if any.
#[must_use]
pub fn stated(bytes: &[u8], start: usize, end: usize) -> Option<NaiveDate> {
    let from = bytes[start.saturating_sub(REACH)..start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(start.saturating_sub(REACH), |i| {
            start.saturating_sub(REACH) + i + 1
        });
    let to = bytes[end..bytes.len().min(end + REACH)]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len().min(end + REACH), |i| end + i);
    let line = String::from_utf8_lossy(&bytes[from..to]).to_ascii_lowercase();
    let (id_start, id_end) = (start - from, end - from);
    let keyword = LIFECYCLE.iter().filter_map(|w| line.find(w)).min()?;
    let (date_start, date_end, date) = first_date(&line, keyword)?;
    let before = id_end <= keyword;
    let between = id_start >= keyword && id_end <= date_start;
    let after = id_start >= date_end && {
        let gap = &line[date_end..id_start];
        !SUCCESSOR.iter().any(|w| gap.contains(w))
    };
    (before || between || after).then_some(date)
}

/// The first date at or after `from` that stands alone (not part of an ID such as
/// `gpt-4o-2024-08-06`): ISO `2025-10-10` or English `October 10, 2025`.
fn first_date(line: &str, from: usize) -> Option<(usize, usize, NaiveDate)> {
    let bytes = line.as_bytes();
    let glued =
        |i: usize| i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'-');
    for start in (from..line.len()).filter(|&i| line.is_char_boundary(i)) {
        if start > 0 && glued(start - 1) {
            continue;
        }
        let rest = &line[start..];
        if iso_shaped(rest.as_bytes())
            && !glued(start + 10)
            && let Some(date) = dates::day(&rest[..10])
        {
            return Some((start, start + 10, date));
        }
        if let Some((len, date)) = english(rest) {
            return Some((start, start + len, date));
        }
    }
    None
}

/// `dddd-dd-dd` at the start of `text`.
fn iso_shaped(text: &[u8]) -> bool {
    text.len() >= 10
        && text[..10].iter().enumerate().all(|(i, &b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

/// `october 10, 2025` (or `oct 10 2025`, `october 10th, 2025`) at the start of `text`.
fn english(text: &str) -> Option<(usize, NaiveDate)> {
    if !text.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let words: Vec<&str> = text.splitn(4, ' ').take(3).collect();
    if words.len() < 3 {
        return None;
    }
    let year: String = words[2].chars().take_while(char::is_ascii_digit).collect();
    if year.len() != 4 {
        return None;
    }
    let phrase = format!("{} {} {}", words[0], words[1], year);
    let date = dates::english(&phrase)?;
    Some((words[0].len() + words[1].len() + 2 + year.len(), date))
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::stated;

    /// The date stated for the ID marked `@@` (the marker is replaced by the ID).
    fn date_for(line: &str) -> Option<NaiveDate> {
        let id = "gpt-4o-audio-preview-2024-10-01";
        let at = line.find("@@").expect("marker");
        let text = line.replace("@@", id);
        stated(text.as_bytes(), at, at + id.len())
    }

    #[test]
    fn dates_beside_an_id() {
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d);
        let table = [
            ("M = '@@'  # shutdown 2025-10-10", day(2025, 10, 10)),
            (
                "- \"@@\": Announced shutdown date: 2025-10-10. See",
                day(2025, 10, 10),
            ),
            ("'@@',  # deprecated on October 10, 2025", day(2025, 10, 10)),
            ("# Retires Oct 10th, 2025: @@", day(2025, 10, 10)),
            ("# deprecated 2025-10-10, use @@ instead", None),
            ("# sunset 2025-10-10 -> @@", None),
            ("M = '@@'  # added 2025-10-10", None),
            ("M = '@@'  # shutdown soon", None),
            ("M = '@@'  # shutdown: see gpt-4o-2024-08-06", None),
            ("M = '@@'  # retired 2025-13-40", None),
            ("M = '@@'  # retired 2025-1-5 or 2025-10-1x", None),
            ("x\nM = '@@'\n# shutdown 2025-10-10", None),
        ];
        for (line, want) in table {
            assert_eq!(date_for(line), want, "{line}");
        }
    }

    #[test]
    fn odd_bytes_never_panic() {
        let text = "é shutdown ü\u{0} 2025-1é @".as_bytes();
        let at = text.len() - 1;
        let _ = stated(text, at, at + 1);
        let _ = stated(b"retire", 0, 6);
    }
}
