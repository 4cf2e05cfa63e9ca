//! Config errors that point at the input, rendered the way rustc and `just` render them.
//!
//! A user fixing `pins.toml` needs the file, the line, a caret under the offending text and, for a
//! typo, the key they meant. The rendering is pinned by golden tests: change it deliberately.

use std::fmt;

/// Everything wrong with a configuration, in the order it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.diagnostics))]
pub struct ConfigError {
    diagnostics: Vec<Diagnostic>,
}

impl ConfigError {
    /// Orders `diagnostics` as a reader meets them: by file (in order of first mention), then
    /// line and column.
    pub(crate) fn new(mut diagnostics: Vec<Diagnostic>) -> ConfigError {
        let mut files: Vec<String> = Vec::new();
        for s in diagnostics.iter().filter_map(|d| d.snippet.as_ref()) {
            if !files.contains(&s.path) {
                files.push(s.path.clone());
            }
        }
        diagnostics.sort_by_key(|d| {
            d.snippet.as_ref().map_or((0, 0, 0), |s| {
                let file = files.iter().position(|f| *f == s.path).unwrap_or(0);
                (file, s.line, s.column)
            })
        });
        ConfigError { diagnostics }
    }

    /// Every diagnostic with `redactor`'s secrets masked in its headline, snippet and notes.
    #[must_use]
    pub(crate) fn scrubbed(self, redactor: &crate::redact::Redactor) -> ConfigError {
        let diagnostics = self
            .diagnostics
            .into_iter()
            .map(|d| d.scrubbed(redactor))
            .collect();
        ConfigError { diagnostics }
    }

    /// One entry per problem; never empty.
    #[must_use]
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl From<Diagnostic> for ConfigError {
    fn from(diagnostic: Diagnostic) -> ConfigError {
        ConfigError::new(vec![diagnostic])
    }
}

fn render(diagnostics: &[Diagnostic]) -> String {
    let rendered: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    rendered.join("\n\n")
}

/// One problem: a headline, where it is, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    message: String,
    /// Boxed: most diagnostics travel in `Result`s, and the snippet is most of their size.
    snippet: Option<Box<Snippet>>,
    notes: Vec<(NoteKind, String)>,
}

/// The source line a diagnostic points at, already cut out of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snippet {
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    /// The whole line: masked whole (a secret cut by the excerpt would not be found), shown as
    /// at most `MAX_SNIPPET_CHARS` of it around the caret.
    pub text: String,
    /// Characters under the caret; at least one.
    pub width: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NoteKind {
    Note,
    Help,
}

impl Diagnostic {
    pub(crate) fn new(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            snippet: None,
            notes: Vec::new(),
        }
    }

    pub(crate) fn with_snippet(mut self, snippet: Snippet) -> Diagnostic {
        self.snippet = Some(Box::new(snippet));
        self
    }

    fn scrubbed(self, redactor: &crate::redact::Redactor) -> Diagnostic {
        let snippet = self.snippet.map(|s| {
            let s = *s;
            let text = redactor.scrub_owned(s.text);
            // A mask may shorten the line: the caret stays on it.
            let end = text.chars().count() + 1;
            Box::new(Snippet {
                column: s.column.min(end),
                width: s.width.min(end + 1 - s.column.min(end)).max(1),
                text,
                ..s
            })
        });
        Diagnostic {
            message: redactor.scrub_owned(self.message),
            snippet,
            notes: self
                .notes
                .into_iter()
                .map(|(kind, text)| (kind, redactor.scrub_owned(text)))
                .collect(),
        }
    }

    /// The headline, without the `error: ` prefix.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn note(&mut self, text: impl Into<String>) -> &mut Diagnostic {
        self.notes.push((NoteKind::Note, text.into()));
        self
    }

    pub(crate) fn help(&mut self, text: impl Into<String>) -> &mut Diagnostic {
        self.notes.push((NoteKind::Help, text.into()));
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        let pad = match &self.snippet {
            Some(snippet) => {
                let pad = " ".repeat(snippet.line.to_string().len());
                write_snippet(f, snippet, &pad)?;
                pad
            }
            None => String::new(),
        };
        for (kind, text) in &self.notes {
            let label = match kind {
                NoteKind::Note => "note",
                NoteKind::Help => "help",
            };
            write!(f, "\n{pad} = {label}: {text}")?;
        }
        Ok(())
    }
}

fn write_snippet(f: &mut fmt::Formatter<'_>, s: &Snippet, pad: &str) -> fmt::Result {
    // A character that would steer the terminal or reorder the line (a bidi override in an id)
    // is shown as its escape; tabs stay tabs under the caret so it lines up however the terminal
    // expands them.
    let shown = |c: char| {
        if c != '\t' && crate::text::needs_escape(c) {
            crate::text::escape_char(c)
        } else {
            c.to_string()
        }
    };
    let blank = |c: char| {
        if c == '\t' {
            "\t".to_owned()
        } else {
            " ".repeat(shown(c).chars().count())
        }
    };
    let (text, caret, width) = excerpt(&s.text, s.column, s.width.max(1));
    let indent: String = text.chars().take(caret - 1).map(blank).collect();
    let under: usize = text
        .chars()
        .skip(caret - 1)
        .take(width)
        .map(|c| shown(c).chars().count())
        .sum();
    let text: String = text.chars().map(shown).collect();
    let source_line = format!("{} | {text}", s.line);
    write!(f, "\n{pad}--> {}:{}:{}", s.path, s.line, s.column)?;
    write!(f, "\n{pad} |")?;
    write!(f, "\n{}", source_line.trim_end())?;
    write!(f, "\n{pad} | {indent}{}", "^".repeat(under.max(1)))
}

/// Longest stretch of a source line a snippet shows, in characters: enough for any line of a
/// config written by hand, and a bound on what a diagnostic can quote of a file that is not one.
const MAX_SNIPPET_CHARS: usize = 120;

/// Characters shown before the caret when a long line is cut.
const SNIPPET_LEAD: usize = 40;

/// At most `MAX_SNIPPET_CHARS` of `line` around the caret at `column` (1-based), `…` marking
/// each cut; the caret's column and width moved to match.
fn excerpt(line: &str, column: usize, width: usize) -> (String, usize, usize) {
    let total = line.chars().count();
    if total <= MAX_SNIPPET_CHARS {
        return (line.to_owned(), column, width);
    }
    let start = (column - 1)
        .saturating_sub(SNIPPET_LEAD)
        .min(total - MAX_SNIPPET_CHARS);
    let end = start + MAX_SNIPPET_CHARS;
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(line.chars().skip(start).take(MAX_SNIPPET_CHARS));
    if end < total {
        out.push('…');
    }
    let caret = column - 1;
    let width = width.min(end.saturating_sub(caret)).max(1);
    (out, caret - start + usize::from(start > 0) + 1, width)
}

/// The candidate closest to `word`, when it is close enough to be a plausible typo, or else the
/// shortest candidate `word` abbreviates (`warn` for `warning`).
pub(crate) fn suggest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let word = word.to_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    let candidates: Vec<&str> = candidates.into_iter().collect();
    let nearest = candidates
        .iter()
        .map(|c| (edit_distance(&word, &c.to_lowercase()), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    nearest.or_else(|| {
        candidates
            .into_iter()
            .filter(|c| word.chars().count() >= 3 && c.to_lowercase().starts_with(&word))
            .min_by_key(|c| c.len())
    })
}

/// Optimal string alignment distance: Levenshtein plus adjacent transpositions (`modle`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// `` `a`, `b`, `c` ``
pub(crate) fn backticked<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items.into_iter().map(|i| format!("`{i}`")).collect();
    quoted.join(", ")
}

#[cfg(test)]
mod tests {
    use super::{Diagnostic, Snippet, edit_distance, suggest};

    #[test]
    fn renders_like_rustc() {
        let mut d = Diagnostic::new("unknown key `acept` in [[pin]]").with_snippet(Snippet {
            path: "pins.toml".into(),
            line: 14,
            column: 1,
            text: "acept = [\"gpt-4o-2024-08-06\"]".into(),
            width: 5,
        });
        d.help("did you mean `accept`?");
        assert_eq!(
            d.to_string(),
            "error: unknown key `acept` in [[pin]]\n  --> pins.toml:14:1\n   |\n14 | acept = [\"gpt-4o-2024-08-06\"]\n   | ^^^^^\n   = help: did you mean `accept`?"
        );
    }

    #[test]
    fn caret_follows_tabs_and_is_never_empty() {
        let d = Diagnostic::new("x").with_snippet(Snippet {
            path: "p".into(),
            line: 3,
            column: 3,
            text: "\t a".into(),
            width: 0,
        });
        assert_eq!(
            d.to_string(),
            "error: x\n --> p:3:3\n  |\n3 | \t a\n  | \t ^"
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_caret() {
        let cases: [(usize, usize, usize, &str); 4] = [
            // line length, caret column, width, how the excerpt begins
            (100, 90, 3, "x"),
            (300, 10, 2, "x"),
            (300, 200, 500, "…"),
            (300, 301, 1, "…"),
        ];
        for (len, column, width, head) in cases {
            let line = "x".repeat(len);
            let (text, at, w) = super::excerpt(&line, column, width);
            let shown = text.chars().count();
            assert!(
                shown <= super::MAX_SNIPPET_CHARS + 2,
                "{len} {column}: {shown}"
            );
            assert!(text.starts_with(head), "{len} {column}: {text}");
            assert!(
                at >= 1 && at <= shown + 1,
                "{len} {column}: caret {at} of {shown}"
            );
            assert!(
                w >= 1 && at + w - 1 <= shown.max(at),
                "{len} {column}: width {w}"
            );
        }
        // The caret still lands on the same character.
        let line: String = (0..300)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let (text, at, _) = super::excerpt(&line, 200, 1);
        assert_eq!(text.chars().nth(at - 1), line.chars().nth(199));
    }

    #[test]
    fn a_secret_across_the_excerpt_s_edge_is_masked_whole() {
        let secret = "sk-live-0123456789abcdef";
        // The excerpt of a line cut at its start ends at character 120: the secret spans it.
        let line = format!("{}{secret}{}", "x".repeat(110), "y".repeat(100));
        let d = Diagnostic::new("x").with_snippet(Snippet {
            path: "p".into(),
            line: 1,
            column: 1,
            text: line,
            width: 1,
        });
        let shown = d
            .scrubbed(&crate::redact::Redactor::new([secret]))
            .to_string();
        assert!(!shown.contains("sk-live"), "{shown}");
        assert!(shown.contains("[redac"), "{shown}");
    }

    #[test]
    fn distance_counts_transpositions_once() {
        assert_eq!(edit_distance("modle", "model"), 1);
        assert_eq!(edit_distance("acept", "accept"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn suggests_only_close_keys() {
        let keys = ["id", "accept", "model", "samples"];
        assert_eq!(suggest("acept", keys), Some("accept"));
        assert_eq!(suggest("Samples", keys), Some("samples"));
        assert_eq!(suggest("colour", keys), None);
        assert_eq!(suggest("samp", keys), Some("samples"));
        assert_eq!(suggest("id", ["identity"]), None);
    }
}
