//! Is a model ID a value the program uses, code, or a remark? Decided per file type.
//!
//! A retired ID in a string literal breaks production; the same ID in a comment, a README or a
//! longer identifier does not. So only [`Kind::Literal`] occurrences may raise errors and warnings
//! (see `judge`). The lexers here are deliberately small: they know each syntax's comments and
//! string quotes, which is all the decision needs, and they run only on files with a hit.
//!
//! The rule per syntax: in code, a string is a literal, a comment is a comment and anything else
//! is code ([`Kind::Identifier`]); in config files (YAML, TOML, .env, INI, JSON) every value is a
//! literal and `#` comments are comments; in prose (Markdown, text, HTML) every mention is a
//! comment. An ID glued to a longer identifier, file name or URL is an identifier wherever it is.

use std::path::Path;

use serde::Serialize;

/// Where an occurrence sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A string literal in code, or a value in a config file: the ID is used.
    Literal,
    /// Code outside strings, or part of a longer identifier, file name, URL or path.
    Identifier,
    /// A comment, or prose in documentation.
    Comment,
}

impl Kind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Literal => "literal",
            Kind::Identifier => "identifier",
            Kind::Comment => "comment",
        }
    }

    /// "a comment", "an identifier", for messages.
    #[must_use]
    pub fn phrase(self) -> &'static str {
        match self {
            Kind::Literal => "a literal",
            Kind::Identifier => "an identifier",
            Kind::Comment => "a comment",
        }
    }
}

/// The lexical family of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `//` and `/* */` comments; `"`, `'` strings, and backtick strings when `backtick`.
    CLike { backtick: bool },
    /// `#` comments; `"`, `'` strings, triple-quoted ones when `triple`.
    Hash { triple: bool },
    /// Config files: `#` (and `;` at line start) comments, everything else is a value.
    Config,
    /// JSON: every string is a value.
    Json,
    /// Documentation: every mention is a remark.
    Prose,
}

/// The syntax of `path`, by extension or well-known name; unknown files are read as config.
#[must_use]
pub fn syntax_for(path: &Path) -> Syntax {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name == ".env" || name.starts_with(".env.") {
        return Syntax::Config;
    }
    let ext = name.rsplit_once('.').map_or("", |(_, ext)| ext);
    match ext {
        "js" | "mjs" | "cjs" | "jsx" | "ts" | "tsx" | "mts" | "cts" | "go" | "kt" | "kts"
        | "scala" | "groovy" => Syntax::CLike { backtick: true },
        "rs" | "java" | "c" | "h" | "cc" | "cpp" | "hpp" | "cs" | "swift" | "php" | "dart"
        | "zig" | "proto" => Syntax::CLike { backtick: false },
        "py" | "pyi" | "ipynb" => Syntax::Hash { triple: true },
        "rb" | "sh" | "bash" | "zsh" | "pl" | "r" | "ex" | "exs" | "jl" => {
            Syntax::Hash { triple: false }
        }
        "json" | "jsonl" | "ndjson" => Syntax::Json,
        "md" | "markdown" | "mdx" | "rst" | "txt" | "adoc" | "html" | "htm" => Syntax::Prose,
        _ => Syntax::Config,
    }
}

/// A string or comment, as a byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    comment: bool,
}

/// The strings and comments of one file, in order.
#[derive(Debug)]
pub struct Regions {
    syntax: Syntax,
    spans: Vec<Span>,
}

impl Regions {
    /// Lexes `text` once.
    #[must_use]
    pub fn new(syntax: Syntax, text: &[u8]) -> Regions {
        let spans = match syntax {
            Syntax::Prose => Vec::new(),
            _ => Lexer::new(syntax, text).run(),
        };
        Regions { syntax, spans }
    }

    /// The kind of an ID at `offset` that stands alone.
    #[must_use]
    pub fn kind_at(&self, offset: usize) -> Kind {
        let index = self.spans.partition_point(|s| s.end <= offset);
        let span = self.spans.get(index).filter(|s| s.start <= offset);
        match (self.syntax, span) {
            (Syntax::Prose, _) | (_, Some(Span { comment: true, .. })) => Kind::Comment,
            (Syntax::CLike { .. } | Syntax::Hash { .. }, None) => Kind::Identifier,
            _ => Kind::Literal,
        }
    }
}

struct Lexer<'t> {
    syntax: Syntax,
    text: &'t [u8],
    at: usize,
    spans: Vec<Span>,
}

impl<'t> Lexer<'t> {
    fn new(syntax: Syntax, text: &'t [u8]) -> Lexer<'t> {
        Lexer {
            syntax,
            text,
            at: 0,
            spans: Vec::new(),
        }
    }

    fn run(mut self) -> Vec<Span> {
        while self.at < self.text.len() {
            let start = self.at;
            match self.token() {
                Some((end, comment)) => {
                    self.spans.push(Span {
                        start,
                        end,
                        comment,
                    });
                    self.at = end.max(start + 1);
                }
                None => self.at += 1,
            }
        }
        self.spans
    }

    fn rest(&self) -> &'t [u8] {
        &self.text[self.at..]
    }

    /// The end of the string or comment starting here and whether it is a comment.
    fn token(&self) -> Option<(usize, bool)> {
        let rest = self.rest();
        let byte = rest[0];
        match self.syntax {
            Syntax::CLike { backtick } => match byte {
                b'/' if rest.starts_with(b"//") => Some((self.line_end(), true)),
                b'/' if rest.starts_with(b"/*") => Some((self.until(2, b"*/"), true)),
                b'`' if backtick => Some((self.until(1, b"`"), false)),
                b'"' | b'\'' => self.quoted(byte),
                _ => None,
            },
            Syntax::Hash { triple } => match byte {
                b'#' => Some((self.line_end(), true)),
                b'"' | b'\'' if triple && rest.starts_with(&[byte; 3]) => {
                    Some((self.until(3, &[byte; 3]), false))
                }
                b'"' | b'\'' => self.quoted(byte),
                _ => None,
            },
            Syntax::Config => match byte {
                b'#' if self.after_space() => Some((self.line_end(), true)),
                b';' if self.line_start() => Some((self.line_end(), true)),
                b'"' | b'\'' => self.quoted(byte),
                _ => None,
            },
            Syntax::Json => (byte == b'"').then(|| self.quoted(byte)).flatten(),
            Syntax::Prose => None,
        }
    }

    fn line_end(&self) -> usize {
        self.rest()
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.text.len(), |i| self.at + i)
    }

    /// After `skip` opening bytes, up to and including `close`, or the end of the file.
    fn until(&self, skip: usize, close: &[u8]) -> usize {
        let body = &self.rest()[skip.min(self.rest().len())..];
        let mut i = 0;
        while i < body.len() {
            if body[i] == b'\\' {
                i += 2;
                continue;
            }
            if body[i..].starts_with(close) {
                return self.at + skip + i + close.len();
            }
            i += 1;
        }
        self.text.len()
    }

    /// A one-line quoted string; a `'` that does not close on its line is an apostrophe or a
    /// Rust lifetime, not a string.
    fn quoted(&self, quote: u8) -> Option<(usize, bool)> {
        let body = &self.rest()[1..];
        let mut i = 0;
        while i < body.len() {
            match body[i] {
                b'\\' => i += 2,
                b'\n' => break,
                byte if byte == quote => return Some((self.at + 1 + i + 1, false)),
                _ => i += 1,
            }
        }
        (quote == b'"').then(|| (self.at + 1 + i.min(body.len()), false))
    }

    fn line_start(&self) -> bool {
        self.text[..self.at]
            .iter()
            .rev()
            .take_while(|&&b| b != b'\n')
            .all(u8::is_ascii_whitespace)
    }

    fn after_space(&self) -> bool {
        self.at == 0 || self.text[self.at - 1].is_ascii_whitespace()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{Kind, Regions, Syntax, syntax_for};

    /// The kind at the first `@` in each text (the `@` stands for the ID).
    fn kind(syntax: Syntax, text: &str) -> Kind {
        let at = text.find('@').expect("marker");
        Regions::new(syntax, text.as_bytes()).kind_at(at)
    }

    #[test]
    fn kinds_by_syntax() {
        use Kind::{Comment, Identifier, Literal};
        let c = Syntax::CLike { backtick: true };
        let py = Syntax::Hash { triple: true };
        let table = [
            (c, r#"const m = "@";"#, Literal),
            (c, "const m = `a\n@`;", Literal),
            (c, "// use @", Comment),
            (c, "/* a\n @ */ x", Comment),
            (c, "x = @;", Identifier),
            (c, r#"s = "a\"@";"#, Literal),
            (
                Syntax::CLike { backtick: false },
                "fn f<'a>(x: &'a u8) { @ }",
                Identifier,
            ),
            (py, "m = '@'", Literal),
            (py, "\"\"\"doc\n@\n\"\"\"", Literal),
            (py, "x = 1  # @", Comment),
            (py, "s = '#' + @", Identifier),
            (Syntax::Config, "model: @", Literal),
            (Syntax::Config, "model: x # @", Comment),
            (Syntax::Config, "url: a#@", Literal),
            (Syntax::Config, "; @", Comment),
            (Syntax::Json, r#"{"m": "@"}"#, Literal),
            (Syntax::Prose, "use @ today", Comment),
        ];
        for (syntax, text, want) in table {
            assert_eq!(kind(syntax, text), want, "{syntax:?} {text:?}");
        }
    }

    #[test]
    fn syntax_by_name() {
        for (name, want) in [
            ("a/b.py", Syntax::Hash { triple: true }),
            ("x.tsx", Syntax::CLike { backtick: true }),
            ("x.min.js", Syntax::CLike { backtick: true }),
            ("main.go", Syntax::CLike { backtick: true }),
            (".env", Syntax::Config),
            (".env.local", Syntax::Config),
            ("c.yaml", Syntax::Config),
            ("c.json", Syntax::Json),
            ("README.md", Syntax::Prose),
            ("Dockerfile", Syntax::Config),
        ] {
            assert_eq!(syntax_for(Path::new(name)), want, "{name}");
        }
    }

    #[test]
    fn unterminated_things_never_panic() {
        for syntax in [
            Syntax::CLike { backtick: true },
            Syntax::Hash { triple: true },
            Syntax::Config,
            Syntax::Json,
        ] {
            for text in ["\"", "'", "/*", "`", "\"\"\"", "\\", "\"\\", "#"] {
                let regions = Regions::new(syntax, text.as_bytes());
                let _ = regions.kind_at(text.len());
            }
        }
    }
}
