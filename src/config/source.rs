//! One TOML file kept whole, so any byte span can become a line, a column and a caret.
//!
//! serde reports spans but not which table a span sits in, and it cannot see the keys of implicit
//! tables (`[providers.openai]` makes `providers` implicit). The `toml_edit` document can, so it
//! answers "where is this" for every diagnostic and walks every value for the secret scan.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml_edit::{ImDocument, Item, Table, TableLike, Value};

use super::diagnostic::{Diagnostic, Snippet};

pub(crate) struct Source {
    /// The path as the user wrote it (or as joined from pins.toml's directory).
    pub path: PathBuf,
    pub text: String,
    doc: ImDocument<String>,
}

/// Where a span sits: the table path leading to it and, inside that table, the key it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    pub path: Vec<Segment>,
    pub key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

impl Source {
    /// Rejects TOML syntax errors; accepts any well-formed document. A control character no TOML
    /// file holds (a NUL, an ESC) means the path names some other file: it is refused by position
    /// alone, without quoting a line of it.
    pub fn parse(path: &Path, text: String) -> Result<Source, Diagnostic> {
        if let Some(at) =
            text.find(|c: char| c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r'))
        {
            let s = snippet_in(path, &text, "", at..at + 1);
            let mut d = Diagnostic::new(format!(
                "`{}` is not a TOML file: control character 0x{:02x} at {}:{}",
                path.display(),
                text.as_bytes()[at],
                s.line,
                s.column
            ));
            d.help("TOML holds no control characters but tab and line breaks: check that the path names the right file");
            return Err(d);
        }
        match ImDocument::parse(text.clone()) {
            Ok(doc) => Ok(Source {
                path: path.to_path_buf(),
                text,
                doc,
            }),
            Err(err) => Err(syntax_error(path, &text, err.message(), err.span())),
        }
    }

    pub fn root(&self) -> &Table {
        self.doc.as_table()
    }

    /// A diagnostic pointing at `span`.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(message).with_snippet(self.snippet(span))
    }

    /// `path:line:column` of the start of `span`.
    pub fn location(&self, span: Range<usize>) -> String {
        let s = self.snippet(span);
        format!("{}:{}:{}", s.path, s.line, s.column)
    }

    pub fn snippet(&self, span: Range<usize>) -> Snippet {
        snippet_in(&self.path, &self.text, &self.text, span)
    }

    /// Like `snippet`, but the line is taken from `shown`, a copy of the text of the same length
    /// in characters with secrets masked.
    pub fn masked_snippet(&self, shown: &str, span: Range<usize>) -> Snippet {
        snippet_in(&self.path, &self.text, shown, span)
    }

    /// Which table `span` lies in and under which key; the top level when nothing encloses it.
    pub fn place(&self, span: &Range<usize>) -> Place {
        let mut path = Vec::new();
        place_in(self.root(), span, &mut path).unwrap_or(Place { path, key: None })
    }
}

fn syntax_error(path: &Path, text: &str, message: &str, span: Option<Range<usize>>) -> Diagnostic {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let headline = lines.next().unwrap_or("syntax error");
    let mut d = Diagnostic::new(format!("invalid TOML: {headline}"));
    if let Some(span) = span {
        d = d.with_snippet(snippet_in(path, text, text, span));
    }
    for line in lines {
        d.note(line);
    }
    d
}

fn snippet_in(path: &Path, text: &str, shown: &str, span: Range<usize>) -> Snippet {
    let start = floor_char(text, span.start);
    let end = floor_char(text, span.end.max(start));
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line_index = text[..start].matches('\n').count();
    let column = text[line_start..start].chars().count() + 1;
    let width = text[start..end.min(line_end)].chars().count();
    let line = shown.split('\n').nth(line_index).unwrap_or("");
    Snippet {
        path: path.display().to_string(),
        line: line_index + 1,
        column,
        text: line.strip_suffix('\r').unwrap_or(line).to_string(),
        width: width.max(1),
    }
}

fn floor_char(text: &str, offset: usize) -> usize {
    let mut i = offset.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn contains(outer: Option<Range<usize>>, inner: &Range<usize>) -> bool {
    outer.is_some_and(|o| o.start <= inner.start && inner.end <= o.end)
}

fn place_in(table: &dyn TableLike, span: &Range<usize>, path: &mut Vec<Segment>) -> Option<Place> {
    for (key, item) in table.iter() {
        path.push(Segment::Key(key.to_string()));
        let deeper = place_in_item(item, span, path);
        path.pop();
        if deeper.is_some() {
            return deeper;
        }
        let key_span = table.get_key_value(key).and_then(|(k, _)| k.span());
        if contains(key_span, span) || contains(item.span(), span) {
            return Some(Place {
                path: path.clone(),
                key: Some(key.to_string()),
            });
        }
    }
    None
}

/// Searches the tables inside `item`; a table whose own span (its header) holds `span` is the
/// place itself, as for serde's "missing field" errors.
fn place_in_item(item: &Item, span: &Range<usize>, path: &mut Vec<Segment>) -> Option<Place> {
    match item {
        Item::Table(table) => place_in_table(table, table.span(), span, path),
        Item::Value(Value::InlineTable(table)) => place_in_table(table, table.span(), span, path),
        Item::ArrayOfTables(tables) => tables.iter().enumerate().find_map(|(i, table)| {
            path.push(Segment::Index(i));
            let found = place_in_table(table, table.span(), span, path);
            path.pop();
            found
        }),
        Item::Value(Value::Array(array)) => array.iter().enumerate().find_map(|(i, value)| {
            let Value::InlineTable(table) = value else {
                return None;
            };
            path.push(Segment::Index(i));
            let found = place_in_table(table, table.span(), span, path);
            path.pop();
            found
        }),
        _ => None,
    }
}

fn place_in_table(
    table: &dyn TableLike,
    own: Option<Range<usize>>,
    span: &Range<usize>,
    path: &mut Vec<Segment>,
) -> Option<Place> {
    if let Some(found) = place_in(table, span, path) {
        return Some(found);
    }
    contains(own, span).then(|| Place {
        path: path.clone(),
        key: None,
    })
}

impl Place {
    /// `in [[pin]]`, `in [providers.openai]`, `in `price` of [[pin]]`, `at the top level`.
    pub fn describe(&self) -> String {
        let last_index = self
            .path
            .iter()
            .rposition(|s| matches!(s, Segment::Index(_)));
        let keys = |segments: &[Segment]| {
            let names: Vec<&str> = segments
                .iter()
                .filter_map(|s| match s {
                    Segment::Key(k) => Some(k.as_str()),
                    Segment::Index(_) => None,
                })
                .collect();
            names.join(".")
        };
        match last_index {
            _ if self.path.is_empty() => "at the top level".to_string(),
            None => format!("in [{}]", keys(&self.path)),
            Some(i) if i + 1 == self.path.len() => format!("in [[{}]]", keys(&self.path)),
            Some(i) => format!(
                "in `{}` of [[{}]]",
                keys(&self.path[i + 1..]),
                keys(&self.path[..i])
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::Source;

    const DOC: &str = "version = 1\n[providers.openai]\nkind = \"openai\"\n\n[[pin]]\nid = \"a\"\nprice = { input = 1 }\n\n[[pin]]\nid = \"b\"\n";

    fn describe(needle: &str) -> String {
        let src = Source::parse(Path::new("pins.toml"), DOC.to_string()).unwrap();
        let start = DOC.rfind(needle).unwrap();
        let place = src.place(&(start..start + needle.len()));
        format!("{} {:?}", place.describe(), place.key)
    }

    #[test]
    fn places_keys_and_values_in_their_tables() {
        assert_eq!(describe("version"), "at the top level Some(\"version\")");
        assert_eq!(
            describe("\"openai\""),
            "in [providers.openai] Some(\"kind\")"
        );
        assert_eq!(describe("\"b\""), "in [[pin]] Some(\"id\")");
        assert_eq!(describe("input"), "in `price` of [[pin]] Some(\"input\")");
        assert_eq!(describe("[[pin]]\nid = \"b\""), "in [[pin]] None");
    }

    #[test]
    fn snippet_columns_count_characters() {
        let text = "a = \"é\" # x\nb = 1\n".to_string();
        let src = Source::parse(Path::new("f.toml"), text).unwrap();
        let s = src.snippet(9..10);
        assert_eq!((s.line, s.column, s.width), (1, 9, 1));
        let s = src.snippet(13..14);
        assert_eq!((s.line, s.column, s.text.as_str()), (2, 1, "b = 1"));
    }

    #[test]
    fn a_file_with_control_characters_is_refused_without_a_quote() {
        let text = "PATH=/usr/bin\0OPENAI_API_KEY=sk-live-0123456789\0".to_string();
        let err = Source::parse(Path::new("probes/env.toml"), text)
            .err()
            .unwrap();
        let shown = err.to_string();
        assert!(
            shown.contains("not a TOML file: control character 0x00 at 1:14"),
            "{shown}"
        );
        assert!(
            !shown.contains("sk-live") && !shown.contains("PATH"),
            "{shown}"
        );
    }

    #[test]
    fn syntax_errors_point_at_the_problem() {
        let err = Source::parse(Path::new("pins.toml"), "version = 1\nx = [1\n".into())
            .err()
            .unwrap();
        assert!(
            err.to_string().starts_with("error: invalid TOML: "),
            "{err}"
        );
        assert!(err.to_string().contains("--> pins.toml:"), "{err}");
    }
}
