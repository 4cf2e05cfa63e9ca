//! The user's documents as the tests read them: the files, their headings' anchors, their
//! relative links, and the `modelpin` command lines of their code blocks.

use std::path::{Path, PathBuf};

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A document: its path from the repository root and its text.
pub struct Document {
    pub path: PathBuf,
    pub text: String,
}

/// README.md, every page under docs/ and the other documents they link to that a user reads.
pub fn documents() -> Vec<Document> {
    let mut paths: Vec<PathBuf> = [
        "README.md",
        "SECURITY.md",
        "BENCHMARKS.md",
        "examples/kubernetes/README.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(ROOT).expect("under the root").to_owned())
        .collect();
    pages.sort();
    paths.extend(pages);
    paths
        .into_iter()
        .map(|path| Document {
            text: std::fs::read_to_string(Path::new(ROOT).join(&path)).expect("document"),
            path,
        })
        .collect()
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped, each
/// space a `-`.
pub fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A line with its 1-based number and whether it sits in a code block (fenced or indented), with
/// the fence's language.
pub struct Line<'a> {
    pub number: usize,
    pub text: &'a str,
    /// `Some(lang)` inside a code block (`""` for an indented block or an untagged fence).
    pub code: Option<&'a str>,
}

pub fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut blank_before = true;
    let mut indented = false;
    for (i, text) in text.lines().enumerate() {
        if let Some(rest) = text.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(rest.trim()),
            };
            blank_before = false;
            continue;
        }
        // An indented block starts after a blank line and ends at the first unindented line.
        indented = fence.is_none()
            && text.starts_with("    ")
            && (indented || blank_before)
            && !text.trim_start().starts_with(['-', '*', '|']);
        out.push(Line {
            number: i + 1,
            text,
            code: fence.or(indented.then_some("")),
        });
        blank_before = text.trim().is_empty();
    }
    out
}

/// The anchors of a document's headings.
pub fn anchors(text: &str) -> Vec<String> {
    lines(text)
        .iter()
        .filter(|l| l.code.is_none())
        .filter_map(|l| {
            let hashes = l.text.len() - l.text.trim_start_matches('#').len();
            (1..=6)
                .contains(&hashes)
                .then(|| l.text[hashes..].strip_prefix(' '))
                .flatten()
                .map(anchor)
        })
        .collect()
}

/// Relative link targets outside code (`[text](target)`, `<img src="target">`), with their
/// line numbers.
pub fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for line in lines(text).iter().filter(|l| l.code.is_none()) {
        let mut rest = line.text;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].trim();
            if !(target.contains("://") || target.starts_with("mailto:") || target.is_empty()) {
                out.push((line.number, target.to_owned()));
            }
            rest = &rest[end..];
        }
        // An HTML image's source is a link too.
        let mut rest = line.text;
        while let Some(at) = rest.find("src=\"") {
            rest = &rest[at + 5..];
            let end = rest.find('"').unwrap_or(rest.len());
            if !rest[..end].contains("://") {
                out.push((line.number, rest[..end].to_owned()));
            }
            rest = &rest[end..];
        }
    }
    out
}

/// Shell words of one command line, split the way sh would for what the documents hold: quotes
/// kept together, `#` starting a comment at a word's start, and `|`, `;`, `&&`, `<(`, `)` and
/// redirections as separators (a redirection's target dropped).
fn words(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    let mut redirect = false;
    let mut chars = line.chars().peekable();
    let end_word = |word: &mut String,
                    in_word: &mut bool,
                    redirect: &mut bool,
                    commands: &mut Vec<Vec<String>>| {
        if *in_word {
            if *redirect {
                *redirect = false;
            } else {
                commands.last_mut().unwrap().push(std::mem::take(word));
            }
            word.clear();
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else {
                word.push(c);
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                in_word = true;
            }
            '#' if !in_word => break,
            ' ' | '\t' => end_word(&mut word, &mut in_word, &mut redirect, &mut commands),
            '|' | ';' | '&' | ')' => {
                end_word(&mut word, &mut in_word, &mut redirect, &mut commands);
                commands.push(Vec::new());
            }
            '<' if chars.peek() == Some(&'(') => {
                chars.next();
                end_word(&mut word, &mut in_word, &mut redirect, &mut commands);
                commands.push(Vec::new());
            }
            '>' | '<' => {
                // `2>` is a redirection of stderr: its digit is no word.
                if word == "2" || word == "1" {
                    word.clear();
                    in_word = false;
                }
                end_word(&mut word, &mut in_word, &mut redirect, &mut commands);
                if chars.peek() == Some(&'>') {
                    chars.next();
                }
                redirect = true;
            }
            _ => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut redirect, &mut commands);
    commands.retain(|c| !c.is_empty());
    commands
}

/// A `modelpin` invocation a document shows, as the arguments after the program name.
pub struct Example {
    pub at: String,
    pub args: Vec<String>,
}

/// Every `modelpin` invocation in the documents' shell code blocks: `modelpin …`,
/// `cargo run --release -- …` and the image's `docker run … IMAGE …`, a line ending in `\`
/// joined to the next; in `console` blocks only the lines after a `$ ` prompt.
pub fn examples(documents: &[Document]) -> Vec<Example> {
    let mut out = Vec::new();
    for doc in documents {
        let mut pending: Option<(usize, String)> = None;
        for line in lines(&doc.text) {
            let Some(lang) = line.code else { continue };
            let text = match lang {
                "sh" | "bash" | "shell" | "" => line.text.trim(),
                "console" => match line.text.strip_prefix("$ ") {
                    Some(t) => t,
                    None if pending.is_some() => line.text.trim(),
                    None => continue,
                },
                _ => continue,
            };
            let (number, text) = match pending.take() {
                Some((number, head)) => (number, format!("{head} {text}")),
                None => (line.number, text.to_owned()),
            };
            if let Some(head) = text.strip_suffix('\\') {
                pending = Some((number, head.trim_end().to_owned()));
                continue;
            }
            for command in words(&text) {
                let args: Option<Vec<String>> = match command.first().map(String::as_str) {
                    Some("modelpin") => Some(command[1..].to_vec()),
                    Some("cargo") if command.get(1).map(String::as_str) == Some("run") => command
                        .iter()
                        .position(|w| w == "--")
                        .map(|at| command[at + 1..].to_vec()),
                    Some("docker") => command
                        .iter()
                        .position(|w| w.starts_with("ghcr.io/modelpin/modelpin:"))
                        .map(|at| command[at + 1..].to_vec()),
                    _ => None,
                };
                if let Some(args) = args {
                    out.push(Example {
                        at: format!("{}:{number}", doc.path.display()),
                        args,
                    });
                }
            }
        }
    }
    out
}

#[test]
fn shell_words_split_as_sh_would_for_the_documents() {
    let cases: [(&str, &[&[&str]]); 6] = [
        (
            "modelpin check --format json > report.json",
            &[&["modelpin", "check", "--format", "json"]],
        ),
        (
            "source <(modelpin completions bash)   # this shell",
            &[&["source"], &["modelpin", "completions", "bash"]],
        ),
        (
            "modelpin man check | man -l -",
            &[&["modelpin", "man", "check"], &["man", "-l", "-"]],
        ),
        (
            "cd tour && export K=v && modelpin check   # exit 0",
            &[&["cd", "tour"], &["export", "K=v"], &["modelpin", "check"]],
        ),
        (
            "modelpin completions zsh > \"${fpath[1]}/_modelpin\"",
            &[&["modelpin", "completions", "zsh"]],
        ),
        (
            "curl -X POST 'http://h/_sim/swap?model=a#b' 2>/dev/null",
            &[&["curl", "-X", "POST", "http://h/_sim/swap?model=a#b"]],
        ),
    ];
    for (line, want) in cases {
        let got = words(line);
        let want: Vec<Vec<String>> = want
            .iter()
            .map(|c| c.iter().map(|w| (*w).to_owned()).collect())
            .collect();
        assert_eq!(got, want, "{line}");
    }
}

#[test]
fn anchors_are_githubs() {
    for (heading, want) in [
        (
            "JSON report (`check --format json`)",
            "json-report-check---format-json",
        ),
        ("Scanning code (`scan`)", "scanning-code-scan"),
        (
            "The first-token tier: border inputs, logprobs, sampling",
            "the-first-token-tier-border-inputs-logprobs-sampling",
        ),
        (
            "`modelpin check`, `modelpin traffic`",
            "modelpin-check-modelpin-traffic",
        ),
    ] {
        assert_eq!(anchor(heading), want);
    }
}
