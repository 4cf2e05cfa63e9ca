//! Is a model ID a value the program uses, code, or a remark? Decided per file type.
//!
//! A retired ID in a string literal breaks production; the same ID in a comment, a README or a
//! longer identifier does not. So only [`Kind::Literal`] occurrences may raise errors and warnings
//! (see `judge`). The lexers here are deliberately small: they know each syntax's comments and
//! string quotes, which is all the decision needs, and they run only on files with a hit.
//!
//! The rule per syntax: in code, a string is a literal, a comment is a comment and anything else
//! is code ([`Kind::Identifier`]), except documentation written as a string (a docstring, see
//! [`docstring`]), which is a comment like a doc comment; in config files (YAML, TOML, .env, INI, JSON) every value is a
//! literal and `#` comments are comments; in prose (Markdown, text, HTML, and package metadata
//! whose body is a README: `PKG-INFO`, `METADATA`) every mention is a comment. An ID glued to a longer identifier, file name or URL is an identifier wherever it is.

mod docstring;

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
    /// `//` and `/* */` comments (doc comments `///`, `//!`, `/** */` among them); `"`, `'`
    /// strings, and backtick strings when `backtick`.
    CLike { backtick: bool },
    /// `#` comments; `"`, `'` strings; the language decides triple quotes and documentation.
    Hash(Script),
    /// Config files: `#` (and `;` at line start) comments, everything else is a value.
    Config,
    /// JSON: every string is a value.
    Json,
    /// Documentation: every mention is a remark.
    Prose,
}

/// A language with `#` comments, for what it writes as documentation rather than code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// A string that is the first statement of a module, class or function is its docstring.
    Python,
    /// `@moduledoc`, `@doc` and `@typedoc` strings.
    Elixir,
    /// A string standing alone on the lines before a definition documents it.
    Julia,
    /// `=begin` … `=end` blocks are comments.
    Ruby,
    /// POD blocks (`=pod`, `=head1`, … up to `=cut`) are comments.
    Perl,
    /// Shell, R: `#` comments only.
    Plain,
}

impl Script {
    fn triple(self) -> bool {
        matches!(self, Script::Python | Script::Elixir | Script::Julia)
    }
}

/// Files read as prose by their whole name (compared without case): Python package metadata,
/// whose body is the package's README (`PKG-INFO` of an sdist or an `*.egg-info` directory, as
/// RFC 822 headers and then the long description), and the documents written without an
/// extension. A wheel's `*.dist-info/METADATA` is the same format; that name is taken only as
/// written, in capitals, since a lower-case `metadata` file may well be configuration.
const PROSE_NAMES: [&str; 5] = ["pkg-info", "readme", "changelog", "changes", "news"];

/// The syntax of `path`, by extension or well-known name; unknown files are read as config.
#[must_use]
pub fn syntax_for(path: &Path) -> Syntax {
    let written = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let name = written.to_ascii_lowercase();
    if name == ".env" || name.starts_with(".env.") {
        return Syntax::Config;
    }
    if PROSE_NAMES.contains(&name.as_str()) || written == "METADATA" {
        return Syntax::Prose;
    }
    let ext = name.rsplit_once('.').map_or("", |(_, ext)| ext);
    match ext {
        "js" | "mjs" | "cjs" | "jsx" | "ts" | "tsx" | "mts" | "cts" | "go" | "kt" | "kts"
        | "scala" | "groovy" => Syntax::CLike { backtick: true },
        "rs" | "java" | "c" | "h" | "cc" | "cpp" | "hpp" | "cs" | "swift" | "php" | "dart"
        | "zig" | "proto" => Syntax::CLike { backtick: false },
        "py" | "pyi" | "ipynb" => Syntax::Hash(Script::Python),
        "ex" | "exs" => Syntax::Hash(Script::Elixir),
        "jl" => Syntax::Hash(Script::Julia),
        "rb" => Syntax::Hash(Script::Ruby),
        "pl" | "pm" => Syntax::Hash(Script::Perl),
        "sh" | "bash" | "zsh" | "r" => Syntax::Hash(Script::Plain),
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
            (Syntax::CLike { .. } | Syntax::Hash(_), None) => Kind::Identifier,
            _ => Kind::Literal,
        }
    }
}

struct Lexer<'t> {
    syntax: Syntax,
    text: &'t [u8],
    at: usize,
    spans: Vec<Span>,
    /// Open brackets outside strings and comments: inside them a newline ends no statement.
    depth: usize,
}

impl<'t> Lexer<'t> {
    fn new(syntax: Syntax, text: &'t [u8]) -> Lexer<'t> {
        Lexer {
            syntax,
            text,
            at: 0,
            spans: Vec::new(),
            depth: 0,
        }
    }

    fn run(mut self) -> Vec<Span> {
        while self.at < self.text.len() {
            let start = self.at;
            match self.token() {
                Some((end, comment)) => {
                    let comment = comment || self.documents(start, end);
                    self.spans.push(Span {
                        start,
                        end,
                        comment,
                    });
                    self.at = end.max(start + 1);
                }
                None => self.code_byte(),
            }
        }
        self.spans
    }

    /// A byte of code: brackets are counted, so a string knows whether it is a statement.
    fn code_byte(&mut self) {
        match self.text[self.at] {
            b'(' | b'[' | b'{' => self.depth += 1,
            b')' | b']' | b'}' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        self.at += 1;
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
            Syntax::Hash(script) => match byte {
                b'#' => Some((self.line_end(), true)),
                b'"' | b'\'' if script.triple() && rest.starts_with(&[byte; 3]) => {
                    Some((self.until(3, &[byte; 3]), false))
                }
                b'=' if self.line_start() => self.block_comment(script),
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

    /// A string in the position where the language writes documentation.
    fn documents(&self, start: usize, end: usize) -> bool {
        match self.syntax {
            Syntax::Hash(script) if self.text[start] != b'#' => {
                let statement = self.depth == 0;
                docstring::documents(script, self.text, &self.spans, (start, end), statement)
            }
            _ => false,
        }
    }

    fn block_comment(&self, script: Script) -> Option<(usize, bool)> {
        docstring::block_comment(script, self.text, self.at).map(|end| (end, true))
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

    use super::{Kind, Regions, Script, Syntax, syntax_for};

    /// The kind at the last `@` in each text (the `@` stands for the ID).
    fn kind(syntax: Syntax, text: &str) -> Kind {
        let at = text.rfind('@').expect("marker");
        Regions::new(syntax, text.as_bytes()).kind_at(at)
    }

    #[test]
    fn kinds_by_syntax() {
        use Kind::{Comment, Identifier, Literal};
        let c = Syntax::CLike { backtick: true };
        let py = Syntax::Hash(Script::Python);
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
            (py, "x = \"\"\"doc\n@\n\"\"\"", Literal),
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

    /// Docstrings and doc comments are prose; a string in any other position is a value.
    #[test]
    fn documentation_is_prose() {
        use Kind::{Comment, Literal};
        let py = Syntax::Hash(Script::Python);
        let ex = Syntax::Hash(Script::Elixir);
        let jl = Syntax::Hash(Script::Julia);
        let js = Syntax::CLike { backtick: true };
        let rs = Syntax::CLike { backtick: false };
        let table = [
            (
                py,
                "#!/usr/bin/env python\n# coding: utf-8\n\"\"\"Uses @.\"\"\"\n",
                Comment,
            ),
            (py, "class A:\n    '''Talks to @.'''\n", Comment),
            (
                py,
                "def f(x):\n    # why\n    r\"\"\"@ only\"\"\"\n    return x\n",
                Comment,
            ),
            (
                py,
                "async def f(\n    model: str = \"x\",\n) -> Dict[str, int]:\n    \"\"\"\n    model: e.g. @\n    \"\"\"\n",
                Comment,
            ),
            (py, "class A(B):  # c\n    \"@\"\n", Comment),
            (
                py,
                "def f():\n    \"\"\"doc\"\"\"\n    m = \"\"\"@\"\"\"\n",
                Literal,
            ),
            (py, "if x:\n    \"\"\"@\"\"\"\n", Comment),
            (
                py,
                "X = Literal[\n    \"a\",\n]\n\"\"\"Deprecated: @\"\"\"\n",
                Comment,
            ),
            (py, "x = \\\n    \"\"\"@\"\"\"\n", Literal),
            (py, "X = Literal[\n    \"@\",\n]\n", Literal),
            (py, "call(\n    \"\"\"@\"\"\"\n)", Literal),
            (py, "d = {\n  'k':\n    '@'\n}", Literal),
            (py, "def f(): return '@'", Literal),
            (py, "import x\n\"\"\"@\"\"\"\n", Comment),
            (py, "def f():\n    \"\"\"@\"\"\".format(1)\n", Literal),
            (ex, "  @doc \"\"\"\n  Calls @.\n  \"\"\"\n", Comment),
            (ex, "  @moduledoc ~S\"\"\"\n  @\n  \"\"\"\n", Comment),
            (ex, "  @model \"\"\"\n@\n\"\"\"\n", Literal),
            (
                jl,
                "\"\"\"\n    ask(m)\n\nUses @.\n\"\"\"\nfunction ask(m)\n",
                Comment,
            ),
            (jl, "m = \"\"\"@\"\"\"\nfunction ask(m)\n", Literal),
            (
                Syntax::Hash(Script::Ruby),
                "=begin\nuses @\n=end\nM = 'x'\n",
                Comment,
            ),
            (
                Syntax::Hash(Script::Ruby),
                "=begin\nx\n=end\nM = '@'\n",
                Literal,
            ),
            (
                Syntax::Hash(Script::Perl),
                "=head1 NAME\n\n@\n\n=cut\n",
                Comment,
            ),
            (rs, "/// Calls @.\nfn f() {}", Comment),
            (rs, "//! Talks to @.\n", Comment),
            (js, "/**\n * @param model e.g. @\n */\n", Comment),
            (js, "/** @deprecated use @ */ const m = 1;", Comment),
        ];
        for (syntax, text, want) in table {
            assert_eq!(kind(syntax, text), want, "{syntax:?} {text:?}");
        }
    }

    #[test]
    fn syntax_by_name() {
        for (name, want) in [
            ("a/b.py", Syntax::Hash(Script::Python)),
            ("lib/a.ex", Syntax::Hash(Script::Elixir)),
            ("run.sh", Syntax::Hash(Script::Plain)),
            ("x.tsx", Syntax::CLike { backtick: true }),
            ("x.min.js", Syntax::CLike { backtick: true }),
            ("main.go", Syntax::CLike { backtick: true }),
            (".env", Syntax::Config),
            (".env.local", Syntax::Config),
            ("c.yaml", Syntax::Config),
            ("c.json", Syntax::Json),
            ("README.md", Syntax::Prose),
            ("Dockerfile", Syntax::Config),
            // Package metadata whose body is the README is prose like the README.
            ("openai-1.51.0/PKG-INFO", Syntax::Prose),
            ("src/openai.egg-info/PKG-INFO", Syntax::Prose),
            ("openai-1.51.0.dist-info/METADATA", Syntax::Prose),
            ("pkg.dist-info/DESCRIPTION.rst", Syntax::Prose),
            ("README", Syntax::Prose),
            ("CHANGELOG", Syntax::Prose),
            ("NEWS", Syntax::Prose),
            ("docs/index.rst", Syntax::Prose),
            ("notes.txt", Syntax::Prose),
            ("deploy/metadata", Syntax::Config),
            ("x.egg-info/requires.txt", Syntax::Prose),
            ("pkg-info.yaml", Syntax::Config),
        ] {
            assert_eq!(syntax_for(Path::new(name)), want, "{name}");
        }
    }

    #[test]
    fn unterminated_things_never_panic() {
        for syntax in [
            Syntax::CLike { backtick: true },
            Syntax::Hash(Script::Python),
            Syntax::Hash(Script::Elixir),
            Syntax::Hash(Script::Julia),
            Syntax::Hash(Script::Ruby),
            Syntax::Hash(Script::Perl),
            Syntax::Config,
            Syntax::Json,
        ] {
            for text in [
                "\"",
                "'",
                "/*",
                "`",
                "\"\"\"",
                "\\",
                "\"\\",
                "#",
                "=",
                "=begin",
                "=pod\n",
                "\"\"\"\n",
                "r\"\"\"",
                ":\n\"\"\"",
                "def f(:\n'''x",
                "@doc \"\"\"",
            ] {
                let regions = Regions::new(syntax, text.as_bytes());
                let _ = regions.kind_at(text.len());
            }
        }
    }
}
