//! serde's first complaint about a file, rephrased for the person editing it.
//!
//! serde says "unknown field `acept`, expected one of `id`, ..." or "invalid type: string, expected
//! u32"; the user wants the table it happened in, the key, words instead of Rust type names, and the
//! nearest valid key.

use std::ops::Range;

use serde::de::DeserializeOwned;

use super::diagnostic::{Diagnostic, backticked, suggest};
use super::source::Source;

/// Deserializes the raw mirror of `src`, or explains the first mismatch.
pub(crate) fn decode<T: DeserializeOwned>(src: &Source) -> Result<T, Diagnostic> {
    toml::from_str(&src.text).map_err(|err| explain(src, err.message(), err.span()))
}

fn explain(src: &Source, message: &str, span: Option<Range<usize>>) -> Diagnostic {
    let span = span.unwrap_or(0..0);
    let place = src.place(&span);
    let context = place.describe();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        return unknown_key(src, span, rest, &context);
    }
    if let Some(rest) = message.strip_prefix("missing field `") {
        let key = rest.trim_end_matches('`');
        // A table's span starts at its header; the top level's is the whole file, so point at
        // its start rather than underline the first line as if it were wrong.
        let span = if place.path.is_empty() { 0..0 } else { span };
        return src.error(span, format!("missing key `{key}` {context}"));
    }
    let key = place
        .key
        .map_or_else(String::new, |k| format!(" for `{k}`"));
    for (prefix, what) in [
        ("invalid type: ", "wrong type"),
        ("invalid value: ", "invalid value"),
    ] {
        if let Some((found, expected)) = message
            .strip_prefix(prefix)
            .and_then(|rest| rest.split_once(", expected "))
        {
            let found = if what == "wrong type" {
                describe_found(found)
            } else {
                found.to_string()
            };
            let expected = describe_expected(expected);
            return src.error(
                span,
                format!("{what}{key} {context}: expected {expected}, found {found}"),
            );
        }
    }
    let mut lines = message.lines();
    let mut d = src.error(
        span,
        format!("{} {context}", lines.next().unwrap_or("invalid")),
    );
    for line in lines {
        d.note(line);
    }
    d
}

/// `rest` is what follows "unknown field `": "acept`, expected one of `id`, `accept`".
fn unknown_key(src: &Source, span: Range<usize>, rest: &str, context: &str) -> Diagnostic {
    let (name, expected) = rest.split_once('`').unwrap_or((rest, ""));
    let valid: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let mut d = src.error(span, format!("unknown key `{name}` {context}"));
    match suggest(name, valid.iter().copied()) {
        Some(near) => d.help(format!("did you mean `{near}`?")),
        None if valid.is_empty() => d.note("this table takes no keys"),
        None => d.note(format!("valid keys: {}", backticked(valid))),
    };
    d
}

/// serde's name for what it got ("string \"ten\"", "integer `3`"), in the file's terms. The value
/// itself is left out: the caret shows it, and it may be something that should not be echoed.
fn describe_found(found: &str) -> String {
    let kind = found.split([' ', '`']).next().unwrap_or(found);
    match kind {
        "string" => "a string",
        "integer" => "an integer",
        "floating" => "a number",
        "boolean" => "a boolean",
        "sequence" => "an array",
        "map" => "a table",
        other => other,
    }
    .to_string()
}

/// serde's name for what it wanted ("u32", "a sequence", "struct ..."), in the file's terms.
fn describe_expected(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer",
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer",
        "f32" | "f64" => "a number",
        "a sequence" => "an array",
        "a map" | "map" => "a table",
        "a TOML datetime" | "a datetime" => "a date",
        s if s.starts_with("struct ") => "a table",
        s => s,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::{describe_expected, describe_found};

    #[test]
    fn rust_type_names_become_toml_words() {
        assert_eq!(describe_found("string \"ten\""), "a string");
        assert_eq!(describe_found("floating point `1.5`"), "a number");
        assert_eq!(describe_expected("u32"), "a non-negative integer");
        assert_eq!(describe_expected("struct RawPrice"), "a table");
    }
}
