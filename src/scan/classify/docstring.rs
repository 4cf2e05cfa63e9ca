//! Documentation written as strings: Python docstrings, Elixir `@doc`, Julia docstrings, and the
//! block comments of Ruby and Perl.
//!
//! A docstring is prose even though the lexer sees a string: an ID in one is a remark about the
//! API, not a value sent to it, so it must not raise an error. The position decides. In Python,
//! a string that is a whole statement does nothing when the program runs: the docstring of a
//! module, class or function (its first statement), an attribute docstring after an assignment
//! (the SDKs list deprecated values that way), or any other bare string. In Elixir the string
//! follows `@moduledoc`/`@doc`/`@typedoc`; in Julia it stands alone just before a definition.
//! Anything else that is a string stays a literal, so a value assigned or passed is never hidden.

use crate::scan::classify::{Script, Span};

/// Whether the string at `start..end` documents something in `script`; `outside` says it sits
/// outside any bracket, where a newline ends a statement.
pub(super) fn documents(
    script: Script,
    text: &[u8],
    spans: &[Span],
    (start, end): (usize, usize),
    outside: bool,
) -> bool {
    match script {
        Script::Python => outside && python(text, spans, start, end),
        Script::Elixir => elixir(text, start),
        Script::Julia => julia(text, start, end),
        Script::Ruby | Script::Perl | Script::Plain => false,
    }
}

/// The end of a Ruby `=begin` … `=end` or Perl POD block starting at `at` (a line start), if
/// one starts there.
pub(super) fn block_comment(script: Script, text: &[u8], at: usize) -> Option<usize> {
    let rest = &text[at..];
    let close: &[u8] = match script {
        Script::Ruby if rest.starts_with(b"=begin") => b"\n=end",
        Script::Perl if rest.get(1).is_some_and(u8::is_ascii_alphabetic) => b"\n=cut",
        _ => return None,
    };
    let found = rest.windows(close.len()).position(|w| w == close);
    Some(found.map_or(text.len(), |i| {
        let after = at + i + close.len();
        text[after..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |j| after + j)
    }))
}

fn python(text: &[u8], spans: &[Span], start: usize, end: usize) -> bool {
    let mut open = start;
    while open > 0 && start - open < 2 && b"rRuU".contains(&text[open - 1]) {
        open -= 1;
    }
    if !alone_before(text, open) || !statement_ends(text, end) {
        return false;
    }
    // Outside brackets a newline ends the statement unless the line before ends with `\`.
    previous_significant(text, spans, open).is_none_or(|before| text[before] != b'\\')
}

fn elixir(text: &[u8], start: usize) -> bool {
    let before = text[line_start(text, start)..start].trim_ascii();
    let before = before
        .strip_suffix(b"~S")
        .or_else(|| before.strip_suffix(b"~s"))
        .unwrap_or(before)
        .trim_ascii_end();
    [&b"@moduledoc"[..], b"@doc", b"@typedoc"].contains(&before)
}

fn julia(text: &[u8], start: usize, end: usize) -> bool {
    const DEFINITIONS: [&str; 9] = [
        "function ",
        "macro ",
        "struct ",
        "mutable struct ",
        "abstract type ",
        "primitive type ",
        "module ",
        "baremodule ",
        "const ",
    ];
    if !alone_before(text, start) || !statement_ends(text, end) {
        return false;
    }
    let Some(next) = next_significant(text, end) else {
        return false;
    };
    DEFINITIONS
        .iter()
        .any(|d| text[next..].starts_with(d.as_bytes()))
}

fn line_start(text: &[u8], at: usize) -> usize {
    text[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1)
}

/// Only blanks between the start of the line and `at`.
fn alone_before(text: &[u8], at: usize) -> bool {
    text[line_start(text, at)..at]
        .iter()
        .all(|&b| b == b' ' || b == b'\t')
}

/// Only blanks or a comment after `end` on its line: the string is a whole statement.
fn statement_ends(text: &[u8], end: usize) -> bool {
    text[end..]
        .iter()
        .find(|&&b| b != b' ' && b != b'\t' && b != b'\r')
        .is_none_or(|&b| b == b'\n' || b == b'#')
}

/// The span holding `at`, if any.
fn span_at(spans: &[Span], at: usize) -> Option<&Span> {
    let index = spans.partition_point(|s| s.end <= at);
    spans.get(index).filter(|s| s.start <= at)
}

/// The last byte before `before` that is neither blank nor in a comment.
fn previous_significant(text: &[u8], spans: &[Span], before: usize) -> Option<usize> {
    let mut i = before;
    while i > 0 {
        i -= 1;
        match span_at(spans, i) {
            Some(span) if span.comment => i = span.start,
            _ if text[i].is_ascii_whitespace() => {}
            _ => return Some(i),
        }
    }
    None
}

/// The first byte after `after` that is neither blank nor in a `#` comment.
fn next_significant(text: &[u8], after: usize) -> Option<usize> {
    let mut i = after;
    while i < text.len() {
        if text[i] == b'#' {
            i = text[i..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |j| i + j);
        } else if text[i].is_ascii_whitespace() {
            i += 1;
        } else {
            return Some(i);
        }
    }
    None
}
