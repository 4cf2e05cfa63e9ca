//! Text from outside — model IDs, provider messages, upstream names — is data, never control.
//!
//! A provider controls what it reports as its model, and so what lands on a terminal, in a CI log
//! and in the files CI reads: an ESC sequence can rewrite the screen, a newline followed by
//! `::error::` becomes a GitHub workflow command, a 1 MB ID swells the store and the metrics.
//! Two rules keep that text inert. Where it enters (the provider parse path) it is bounded, with
//! a short hash so two long IDs stay distinct. Where it is written, each output format escapes it
//! its own way: `terminal` here for human text, JSON by serde, GitHub's workflow commands by
//! `github` here (for `check`'s and `scan`'s annotations alike), XML in its renderer (which uses
//! `escape_char` for what XML cannot carry).

use std::borrow::Cow;
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// Longest model ID, upstream or fingerprint kept from a response, in characters.
pub const MAX_ID_CHARS: usize = 256;

/// Longest provider message kept (error text, lifecycle warnings), in characters.
pub const MAX_MESSAGE_CHARS: usize = 2048;

/// Longest answer text kept per call: probes ask for a few tokens.
pub const MAX_ANSWER_CHARS: usize = 16 * 1024;

/// Longest ID shown in a table or a progress line, in characters.
pub const DISPLAY_ID_CHARS: usize = 64;

/// `text` cut to at most `max` characters: the head, `…`, and a 12-hex-digit hash of the whole,
/// so different long values stay different. Short text is returned as it is.
#[must_use]
pub fn bounded(text: &str, max: usize) -> Cow<'_, str> {
    if text.chars().count() <= max {
        return Cow::Borrowed(text);
    }
    let tag = format!("…#{}", short_hash(text));
    let keep = max.saturating_sub(tag.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(&tag);
    Cow::Owned(out.chars().take(max).collect())
}

/// `bounded` for an owned string.
#[must_use]
pub fn bounded_owned(text: String, max: usize) -> String {
    match bounded(&text, max) {
        Cow::Borrowed(_) => text,
        Cow::Owned(cut) => cut,
    }
}

/// The width in characters of each column of a table: its widest cell, the header included.
#[must_use]
pub fn column_widths<const N: usize>(header: &[String; N], rows: &[[String; N]]) -> [usize; N] {
    std::array::from_fn(|i| {
        rows.iter()
            .chain([header])
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
    })
}

/// One table row: each cell padded to its column's width, two spaces apart, no trailing spaces,
/// safe to begin an output line (`line_start`).
#[must_use]
pub fn table_row(row: &[String], widths: &[usize]) -> String {
    let mut line = String::new();
    for (cell, width) in row.iter().zip(widths) {
        line.push_str(cell);
        line.extend(std::iter::repeat_n(
            ' ',
            width.saturating_sub(cell.chars().count()) + 2,
        ));
    }
    line_start(line.trim_end()).into_owned()
}

/// An ID as a table cell or progress line shows it: escaped for a terminal, and shortened with
/// a hash when it is longer than `DISPLAY_ID_CHARS`.
#[must_use]
pub fn display_id(id: &str) -> String {
    bounded(&terminal(id), DISPLAY_ID_CHARS).into_owned()
}

/// Text that begins an output line: a leading `::` has its first colon escaped, since the GitHub
/// Actions runner reads any step output line that starts with `::` (after blanks) as a workflow
/// command (<https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands>).
#[must_use]
pub fn line_start(text: &str) -> Cow<'_, str> {
    let blanks = text.len() - text.trim_start().len();
    if text[blanks..].starts_with("::") {
        Cow::Owned(format!(
            "{}{}{}",
            &text[..blanks],
            escape_char(':'),
            &text[blanks + 1..]
        ))
    } else {
        Cow::Borrowed(text)
    }
}

/// Text safe to print on a terminal: every control character (newlines included) and every
/// character that reorders or hides text is shown as an escape, so nothing from outside can
/// start a line, move the cursor or change colours.
#[must_use]
pub fn terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.push_str(&escape_char(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `c` must not reach an output raw: C0 and C1 controls, DEL, bidirectional marks,
/// overrides and isolates, line and paragraph separators, interlinear annotation marks, and every
/// other character Unicode says to render invisibly (Default_Ignorable_Code_Point of Unicode
/// 16.0's DerivedCoreProperties.txt: zero-width marks, the soft hyphen, fillers, variation
/// selectors, tags), since any of them makes text read other than it is.
#[must_use]
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'..='\u{1160}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// A Prometheus label value as the text exposition format writes it: backslash, double quote
/// and newline escaped as the format defines, and every other character `needs_escape` flags
/// written as a visible `\u{…}` (its backslash escaped, so the value a scraper reads is the
/// six-character escape, never the raw control or bidirectional character).
#[must_use]
pub fn metric_label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `\n`, `\r`, `\t`, or `\u{1b}`: how a character that must not be written raw is shown.
#[must_use]
pub fn escape_char(c: char) -> String {
    match c {
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        c => format!("\\u{{{:x}}}", u32::from(c)),
    }
}

/// Serialised JSON with every character `needs_escape` flags written as a `\uXXXX` escape.
/// serde escapes C0 controls already; C1 controls and bidirectional marks it leaves raw, and a
/// report printed on a terminal must not carry them. Outside strings JSON is ASCII, so only
/// string contents change, and the value read back is the same.
#[must_use]
pub fn json_inert(json: String) -> String {
    if !json.chars().any(|c| c != '\n' && needs_escape(c)) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c != '\n' && needs_escape(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn short_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(12);
    for byte in &digest[..6] {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// A URL path segment: every byte but RFC 3986's unreserved characters percent-encoded, so no
/// text (a model ID, a pin id) can add a path, a query or a fragment.
#[must_use]
pub fn path_segment(raw: &str) -> String {
    let mut encoded = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// GitHub Actions workflow commands: messages escaped as the runner's toolkit does (`%`, CR and
/// LF; also `:` and `,` in properties), every other control character as a visible escape.
pub mod github {
    use super::{escape_char, needs_escape};

    /// Annotations GitHub shows per kind per step.
    pub const LIMIT: usize = 10;

    /// Escapes an annotation's message: the runner's `%`, CR and LF encoding, and other control
    /// characters as visible escapes, so nothing from outside reaches the log raw.
    #[must_use]
    pub fn escape_data(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            match c {
                '%' => out.push_str("%25"),
                '\r' => out.push_str("%0D"),
                '\n' => out.push_str("%0A"),
                c if needs_escape(c) => out.push_str(&escape_char(c)),
                c => out.push(c),
            }
        }
        out
    }

    /// Escapes an annotation property value (`title`, `file`).
    #[must_use]
    pub fn escape_property(text: &str) -> String {
        escape_data(text).replace(':', "%3A").replace(',', "%2C")
    }
}

#[cfg(test)]
mod tests {
    use super::{DISPLAY_ID_CHARS, bounded, display_id, json_inert, line_start, terminal};

    #[test]
    fn a_line_never_begins_with_a_workflow_command() {
        for (text, want) in [
            ("::error::x", "\\u{3a}:error::x"),
            ("  ::set-output", "  \\u{3a}:set-output"),
            (":one colon", ":one colon"),
            ("gpt-4o ::x", "gpt-4o ::x"),
            ("", ""),
        ] {
            assert_eq!(line_start(text), want, "{text:?}");
        }
    }

    #[test]
    fn json_inert_escapes_what_serde_leaves_raw_and_reads_back_the_same() {
        let value = serde_json::json!({ "id": "a\u{9b}1m\u{202e}b\u{1b}\n" });
        let text = json_inert(serde_json::to_string_pretty(&value).unwrap());
        assert!(
            !text.contains('\u{9b}') && !text.contains('\u{202e}'),
            "{text}"
        );
        assert!(text.contains("\\u009b"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn terminal_escapes_what_could_steer_a_terminal_or_a_log() {
        for (raw, want) in [
            ("gpt-4o", "gpt-4o"),
            ("a\nb", "a\\nb"),
            ("x\r\n::error::pwned", "x\\r\\n::error::pwned"),
            ("\u{1b}]8;;http://x\u{7}", "\\u{1b}]8;;http://x\\u{7}"),
            ("tab\there", "tab\\there"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("abc\u{202e}fed", "abc\\u{202e}fed"),
            ("zero\u{200b}width", "zero\\u{200b}width"),
            ("naïve 模型", "naïve 模型"),
        ] {
            assert_eq!(terminal(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn metric_label_values_carry_no_raw_control_or_bidi_character() {
        for (raw, want) in [
            ("gpt-4o", "gpt-4o"),
            ("a\"b\\c\nd", "a\\\"b\\\\c\\nd"),
            ("y\u{202e}gnp.exe", "y\\\\u{202e}gnp.exe"),
            ("zero\u{200b}w\u{1b}", "zero\\\\u{200b}w\\\\u{1b}"),
            (
                "soft\u{ad}hyphen\u{e0041}",
                "soft\\\\u{ad}hyphen\\\\u{e0041}",
            ),
            ("naïve 模型", "naïve 模型"),
        ] {
            assert_eq!(super::metric_label_value(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn bounded_keeps_short_text_and_tags_long_text_with_a_hash() {
        assert_eq!(bounded("short", 10), "short");
        let a = "m".repeat(1000);
        let b = format!("{}x", "m".repeat(999));
        let (ca, cb) = (bounded(&a, 40), bounded(&b, 40));
        assert_eq!(ca.chars().count(), 40);
        assert!(ca.starts_with("mmmm") && ca.contains("…#"), "{ca}");
        assert_ne!(ca, cb, "different long values stay different");
        assert_eq!(bounded("ééé", 2).chars().count(), 2, "never more than max");
    }

    #[test]
    fn display_id_is_short_and_inert() {
        let id = format!("model\n::error::{}", "z".repeat(70_000));
        let shown = display_id(&id);
        assert_eq!(shown.chars().count(), DISPLAY_ID_CHARS, "{shown}");
        assert!(!shown.contains('\n'));
    }
}
