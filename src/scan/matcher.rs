//! Where in a file's bytes a model ID is written, and whether it stands alone.
//!
//! One Aho-Corasick automaton holds the provider families' prefixes (`gpt-`, `claude-`,
//! `gemini-`, ...), a second every known ID that no family reaches (an Azure deployment name, a
//! feed's partner model), so a file is searched twice however many IDs are known, and the first
//! search keeps its SIMD prefilter. From each hit the token
//! is grown by the ID grammar: letters, digits and `-`; a `.` only before a digit (`gpt-3.5`, not
//! `gpt-4o.json`); `:` and `@` only before a letter or digit (`:free`, `-v1:0`, `@20240620`).
//! Before it, a known vendor (`openai/`), Gemini's `models/`, a Vertex resource path or a Bedrock
//! `us.anthropic.` form is taken into the ID. A token glued to more word characters, or sitting in
//! some other path or URL, is [`Form::Embedded`]: reported, never as a use.
//!
//! A token followed by a `-` it cannot use (`"claude-3-" + size`, `f"gpt-4o-{date}"`) is a
//! prefix being assembled, not an ID, and is dropped: a split ID cannot be seen.
//!
//! False positives are the enemy: a family token must carry a digit (`claude-3-haiku`, not
//! `claude-code`) unless the ID is known, and the reasoning-model names `o1`/`o3`/`o4-mini` follow
//! a closed grammar.

use std::collections::HashSet;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

pub(crate) use crate::lifecycle::core_of;

/// Prefixes of the provider families modelpin knows. Leftmost-longest matching makes
/// `chatgpt-` win over `gpt-` and `open-mistral-` over `mistral-`.
const FAMILIES: [&str; 36] = [
    "gpt-",
    "chatgpt-",
    "o1",
    "o3",
    "o4-",
    "text-davinci-",
    "text-embedding-",
    "davinci-",
    "babbage-",
    "claude-",
    "gemini-",
    "gemma-",
    "mistral-",
    "Mistral-",
    "codestral-",
    "ministral-",
    "pixtral-",
    "magistral-",
    "devstral-",
    "open-mistral-",
    "open-mixtral-",
    "mixtral-",
    "Mixtral-",
    "llama-",
    "llama3",
    "llama2",
    "Llama-",
    "Meta-Llama-",
    "deepseek-",
    "grok-",
    "command-r",
    "command-a",
    "qwen",
    "Qwen",
    "compound-",
    "kimi-",
];

/// OpenRouter / Together / Hugging Face vendor segments that are part of an ID.
pub(crate) const VENDORS: [&str; 17] = [
    "openai",
    "anthropic",
    "google",
    "meta-llama",
    "mistralai",
    "deepseek",
    "deepseek-ai",
    "x-ai",
    "qwen",
    "cohere",
    "microsoft",
    "nvidia",
    "perplexity",
    "amazon",
    "moonshotai",
    "z-ai",
    "ai21",
];

/// Gateway prefixes (LiteLLM's `provider/model` routing) that may stand before a vendor:
/// `openrouter/mistralai/mixtral-8x22b-instruct`, `gemini/gemini-1.5-flash`.
pub(crate) const ROUTERS: [&str; 9] = [
    "openrouter",
    "gemini",
    "vertex_ai",
    "bedrock",
    "azure",
    "groq",
    "together_ai",
    "mistral",
    "xai",
];

/// Bedrock model-ID vendors (`anthropic.claude-…`) and cross-region profiles (`us.anthropic.…`).
const BEDROCK_VENDORS: [&str; 9] = [
    "anthropic",
    "meta",
    "amazon",
    "mistral",
    "cohere",
    "ai21",
    "deepseek",
    "openai",
    "qwen",
];
pub(crate) const BEDROCK_PROFILES: [&str; 8] =
    ["us", "eu", "apac", "global", "us-gov", "jp", "au", "ca"];

/// Families too common as English to search for (`command`, `compound`): found only as known IDs.
const UNSEARCHED: [&str; 3] = ["command-r", "command-a", "compound-"];

/// Bare `o1` and `o3` are searched with the byte before them, so that no pattern is shorter than
/// three bytes: a two-byte pattern shortens the SIMD prefilter's fingerprints for all of them.
const REASONING_DELIMITERS: [u8; 7] = *b"\"'` =/:";

/// One literal of the automaton.
#[derive(Debug, Clone)]
enum Pattern {
    /// A family prefix (`gpt-`): the token is grown from it.
    Family,
    /// A delimiter then a reasoning-model prefix: the token starts one byte later.
    Delimited,
    /// A known ID outside the families: the token must be exactly this.
    Exact(String),
}

/// IDs longer than this are not IDs (minified or generated text).
const MAX_ID: usize = 120;

/// How a token sits in the text around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Delimited on both sides: a value someone wrote.
    Standalone,
    /// Part of a longer identifier, file name, URL or path.
    Embedded,
}

/// One model ID found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Byte range of `id` in the file.
    pub start: usize,
    pub end: usize,
    pub id: String,
    pub form: Form,
}

/// One automaton and what each of its patterns is.
#[derive(Debug)]
struct Search {
    automaton: AhoCorasick,
    patterns: Vec<Pattern>,
}

impl Search {
    fn new(patterns: Vec<(String, Pattern)>, kind: Option<AhoCorasickKind>) -> Search {
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .kind(kind)
            .build(patterns.iter().map(|(p, _)| p))
            .expect("a few hundred short literals always build");
        Search {
            automaton,
            patterns: patterns.into_iter().map(|(_, p)| p).collect(),
        }
    }
}

/// The compiled search for one scan: the families in one automaton, small enough for the SIMD
/// prefilter (Teddy takes at most 64 patterns), and the known IDs no family reaches in another
/// (the lifecycle feeds name a few hundred: Azure deployment names, Bedrock and Vertex partner
/// models), so one large set of exact IDs never costs every file its prefilter.
#[derive(Debug)]
pub struct Matcher {
    families: Search,
    exact: Option<Search>,
    /// Known IDs and their cores, lowercase.
    known: HashSet<String>,
}

impl Matcher {
    /// A matcher for the families plus `known` IDs (lifecycle table, feeds, pins, lock).
    #[must_use]
    pub fn new<'a>(known: impl IntoIterator<Item = &'a str>) -> Matcher {
        let ids: Vec<&str> = known
            .into_iter()
            .map(|id| id.trim().trim_end_matches('*'))
            .collect();
        let mut set = HashSet::new();
        for id in &ids {
            set.insert(id.to_ascii_lowercase());
            set.insert(core_of(id).to_ascii_lowercase());
        }
        // Only IDs the families cannot reach get a pattern of their own: every pattern over
        // Teddy's 64 costs the whole scan its SIMD prefilter.
        let families = Matcher::build(Vec::new(), set);
        let mut exact: Vec<String> = ids
            .iter()
            .filter(|id| !families.covers(core_of(id)) && plausible_exact(core_of(id)))
            .map(|id| core_of(id).to_owned())
            .collect();
        exact.sort();
        exact.dedup();
        Matcher::build(exact, families.known)
    }

    fn build(exact: Vec<String>, known: HashSet<String>) -> Matcher {
        let mut patterns: Vec<(String, Pattern)> = FAMILIES
            .iter()
            .filter(|f| !UNSEARCHED.contains(f) && !is_reasoning(f))
            .map(|f| ((*f).to_owned(), Pattern::Family))
            .collect();
        for name in ["o1-", "o3-", "o4-"] {
            patterns.push((name.to_owned(), Pattern::Family));
        }
        for delimiter in REASONING_DELIMITERS {
            for name in ["o1", "o3"] {
                patterns.push((
                    format!("{}{name}", char::from(delimiter)),
                    Pattern::Delimited,
                ));
            }
        }
        let exact: Vec<(String, Pattern)> = exact
            .into_iter()
            .map(|e| (e.clone(), Pattern::Exact(e)))
            .collect();
        Matcher {
            families: Search::new(patterns, None),
            exact: (!exact.is_empty()).then(|| Search::new(exact, Some(AhoCorasickKind::DFA))),
            known,
        }
    }

    /// Whether the family grammar alone finds all of `id`.
    fn covers(&self, id: &str) -> bool {
        let quoted = format!("\"{id}\"");
        let found = self.find(quoted.as_bytes());
        found.len() == 1 && found[0].start == 1 && found[0].end == id.len() + 1
    }

    /// Every model ID in `text`, in order; where a family token and a known ID overlap, the one
    /// that starts first (then the longer) is kept, as one leftmost-longest search would.
    #[must_use]
    pub fn find(&self, text: &[u8]) -> Vec<Candidate> {
        let mut found = self.search(&self.families, text);
        let Some(exact) = &self.exact else {
            return found;
        };
        let more = self.search(exact, text);
        if more.is_empty() {
            return found;
        }
        found.extend(more);
        found.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end)));
        let mut end = 0;
        found.retain(|c| {
            let keep = c.start >= end;
            if keep {
                end = c.end;
            }
            keep
        });
        found
    }

    fn search(&self, search: &Search, text: &[u8]) -> Vec<Candidate> {
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(hit) = search
            .automaton
            .find(aho_corasick::Input::new(text).range(from..))
        {
            let pattern = &search.patterns[hit.pattern().as_usize()];
            let start = hit.start() + usize::from(matches!(pattern, Pattern::Delimited));
            let core_end = fine_tune_base(text, start, grow(text, hit.end()));
            from = core_end.max(hit.end());
            let core = &text[start..core_end];
            let exact = match pattern {
                Pattern::Exact(exact) => Some(exact.as_str()),
                Pattern::Family | Pattern::Delimited => None,
            };
            // `"claude-3-" + size` or f"gpt-4o-{date}": a prefix being built, not an ID.
            let prefix_only = at(text, core_end) == Some(b'-');
            if prefix_only {
                continue;
            }
            if let Some(candidate) = self.candidate(text, start, core, exact) {
                out.push(candidate);
            }
        }
        out
    }

    fn candidate(
        &self,
        text: &[u8],
        start: usize,
        core: &[u8],
        exact: Option<&str>,
    ) -> Option<Candidate> {
        let core = std::str::from_utf8(core).ok()?;
        let end = start + core.len();
        let (start, form) = prefix(text, start);
        let form = if embedded_after(text, end) {
            Form::Embedded
        } else {
            form
        };
        let id = std::str::from_utf8(&text[start..end]).ok()?;
        let reasoning = is_reasoning(core);
        let accepted = exact.is_some_and(|exact| core == exact)
            || self.is_known(id, core)
            || (plausible_family(core) && !(reasoning && form == Form::Embedded));
        (accepted && id.len() <= MAX_ID).then(|| Candidate {
            start,
            end,
            id: id.to_owned(),
            form,
        })
    }

    fn is_known(&self, id: &str, core: &str) -> bool {
        self.known.contains(&id.to_ascii_lowercase())
            || self.known.contains(&core.to_ascii_lowercase())
    }
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn at(text: &[u8], index: usize) -> Option<u8> {
    text.get(index).copied()
}

/// End of the token that starts before `from`, by the ID grammar.
fn grow(text: &[u8], from: usize) -> usize {
    let mut end = from;
    while let Some(byte) = at(text, end) {
        let next = at(text, end + 1);
        let ok = match byte {
            b'-' => true,
            b'.' => next.is_some_and(|n| n.is_ascii_digit()),
            b':' | b'@' => next.is_some_and(|n| n.is_ascii_alphanumeric()),
            _ => byte.is_ascii_alphanumeric(),
        };
        if !ok {
            break;
        }
        end += 1;
    }
    while end > from && text[end - 1] == b'-' {
        end -= 1;
    }
    end
}

/// In an OpenAI fine-tuned ID (`ft:BASE:org:name:id`) the token ends with the base model.
fn fine_tune_base(text: &[u8], start: usize, end: usize) -> usize {
    if !text[..start].ends_with(b"ft:") {
        return end;
    }
    text[start..end]
        .iter()
        .position(|&b| b == b':')
        .map_or(end, |i| start + i)
}

/// Followed by more of a word, a file extension or a path segment.
fn embedded_after(text: &[u8], end: usize) -> bool {
    match at(text, end) {
        Some(b'_') => true,
        Some(b'.' | b'/' | b'-') => at(text, end + 1).is_some_and(is_word),
        // `gpt-4-https://…`: glued to a URL.
        Some(b':') => at(text, end + 1) == Some(b'/'),
        Some(byte) => byte.is_ascii_alphanumeric(),
        None => false,
    }
}

/// Where the ID starts once a vendor, `models/`, resource path or Bedrock prefix is taken in,
/// and whether what precedes it makes it part of something longer.
fn prefix(text: &[u8], start: usize) -> (usize, Form) {
    let Some(before) = start.checked_sub(1).map(|i| text[i]) else {
        return (start, Form::Standalone);
    };
    match before {
        b'/' => slash_prefix(text, start),
        b'.' => bedrock_prefix(text, start),
        b'-' | b'$' | b'@' | b'\\' => (start, Form::Embedded),
        // `ft:gpt-4o-mini-2024-07-18:org:name:id`: the base of a fine-tuned model.
        b':' if text[..start].ends_with(b"ft:") => (start, Form::Embedded),
        // `…/docs/models#gpt-4o`: a URL fragment.
        b'#' if start >= 2 && !text[start - 2].is_ascii_whitespace() => (start, Form::Embedded),
        byte if is_word(byte) => (start, Form::Embedded),
        _ => (start, Form::Standalone),
    }
}

fn extend_left(text: &[u8], end: usize, allowed: impl Fn(u8) -> bool) -> usize {
    let mut start = end;
    while start > 0 && allowed(text[start - 1]) {
        start -= 1;
    }
    start
}

fn slash_prefix(text: &[u8], start: usize) -> (usize, Form) {
    let left_start = extend_left(text, start - 1, |b| is_word(b) || b"./-".contains(&b));
    let left = String::from_utf8_lossy(&text[left_start..start - 1]).to_ascii_lowercase();
    let glued = left_start > 0 && matches!(text[left_start - 1], b':' | b'@' | b'~' | b'\\');
    let vendors = left
        .split('/')
        .all(|segment| VENDORS.contains(&segment) || ROUTERS.contains(&segment));
    let known = vendors
        || left == "models"
        || ((left.starts_with("projects/") || left.starts_with("publishers/"))
            && left.ends_with("/models"));
    if known && !glued {
        (left_start, Form::Standalone)
    } else {
        (start, Form::Embedded)
    }
}

fn bedrock_prefix(text: &[u8], start: usize) -> (usize, Form) {
    let left_start = extend_left(text, start - 1, |b| {
        b.is_ascii_lowercase() || b == b'.' || b == b'-'
    });
    let left = String::from_utf8_lossy(&text[left_start..start - 1]).into_owned();
    let segments: Vec<&str> = left.split('.').collect();
    let shaped = match segments.as_slice() {
        [vendor] => BEDROCK_VENDORS.contains(vendor),
        [profile, vendor] => BEDROCK_PROFILES.contains(profile) && BEDROCK_VENDORS.contains(vendor),
        _ => false,
    };
    let glued = left_start > 0 && (is_word(text[left_start - 1]) || text[left_start - 1] == b'/');
    if shaped && !glued {
        (left_start, Form::Standalone)
    } else {
        (start, Form::Embedded)
    }
}

fn is_reasoning(core: &str) -> bool {
    ["o1", "o3", "o4"].iter().any(|p| core.starts_with(p))
}

/// A family token without a known ID must carry a version; `o…` names follow a closed grammar.
fn plausible_family(core: &str) -> bool {
    if is_reasoning(core) {
        let rest = &core[2..];
        return reasoning_suffix(rest) && !(core.starts_with("o4") && rest.is_empty());
    }
    let Some(family) = FAMILIES
        .iter()
        .filter(|f| core.starts_with(**f))
        .map(|f| f.len())
        .max()
    else {
        return false;
    };
    let rest = &core[family..];
    // Llama names start with their version (`llama-3.1-8b`); `llama-vldb2013` is a paper.
    if core[..family].eq_ignore_ascii_case("llama-") || &core[..family] == "Meta-Llama-" {
        return rest.starts_with(|c: char| c.is_ascii_digit());
    }
    let versioned = core[..family].bytes().any(|b| b.is_ascii_digit())
        || rest.bytes().any(|b| b.is_ascii_digit());
    versioned
        && rest
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

/// `-mini`, `-pro`, `-preview`, `-deep-research`, then an optional `-YYYY-MM-DD`.
fn reasoning_suffix(rest: &str) -> bool {
    let mut words = rest.split('-').skip(1).peekable();
    if !rest.is_empty() && !rest.starts_with('-') {
        return false;
    }
    let mut date = Vec::new();
    while let Some(word) = words.next() {
        let named = ["mini", "pro", "preview", "deep", "research", "high", "low"].contains(&word);
        if named && date.is_empty() {
            continue;
        }
        if !word.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        date.push(word.len());
        if words.peek().is_none() {
            break;
        }
    }
    date.is_empty() || date == [4, 2, 2]
}

/// A known ID outside the families is searched for only when it cannot be an everyday word.
fn plausible_exact(core: &str) -> bool {
    core.len() >= 4
        && core
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:@".contains(&b))
        && core.bytes().any(|b| b == b'-' || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::{Form, Matcher, core_of};

    fn found(matcher: &Matcher, text: &str) -> Vec<(String, Form)> {
        matcher
            .find(text.as_bytes())
            .into_iter()
            .map(|c| (c.id, c.form))
            .collect()
    }

    #[test]
    fn ids_in_their_surroundings() {
        use Form::{Embedded as E, Standalone as S};
        let matcher = Matcher::new([
            "gemini-pro",
            "prod-chat-4o",
            "deepseek-chat",
            "ft:gpt-4o-2024-08-06",
        ]);
        let table: &[(&str, &[(&str, Form)])] = &[
            (r#"model="gpt-4o""#, &[("gpt-4o", S)]),
            ("gpt-3.5-turbo-0613.", &[("gpt-3.5-turbo-0613", S)]),
            ("chatgpt-4o-latest", &[("chatgpt-4o-latest", S)]),
            ("my_gpt-4o_helper_v2", &[("gpt-4o", E)]),
            ("gpt-4o.json", &[("gpt-4o", E)]),
            ("docs/gpt-4o/intro", &[("gpt-4o", E)]),
            ("https://openrouter.ai/openai/gpt-4o", &[("gpt-4o", E)]),
            ("'openai/gpt-4o:free'", &[("openai/gpt-4o:free", S)]),
            (
                "'gemini/gemini-1.5-flash'",
                &[("gemini/gemini-1.5-flash", S)],
            ),
            (
                "openrouter/mistralai/mixtral-8x22b",
                &[("openrouter/mistralai/mixtral-8x22b", S)],
            ),
            (
                "x.com/docs/models#gpt-4o # gpt-4o",
                &[("gpt-4o", E), ("gpt-4o", S)],
            ),
            ("models/gemini-2.5-pro", &[("models/gemini-2.5-pro", S)]),
            (
                "projects/p/locations/l/publishers/google/models/gemini-2.5-flash",
                &[(
                    "projects/p/locations/l/publishers/google/models/gemini-2.5-flash",
                    S,
                )],
            ),
            (
                "us.anthropic.claude-3-5-haiku-20241022-v1:0",
                &[("us.anthropic.claude-3-5-haiku-20241022-v1:0", S)],
            ),
            (
                "claude-3-5-sonnet@20240620",
                &[("claude-3-5-sonnet@20240620", S)],
            ),
            ("claude-code gemini-cli gpt-engineer", &[]),
            ("gemini-pro", &[("gemini-pro", S)]),
            ("deepseek-chat", &[("deepseek-chat", S)]),
            ("x = prod-chat-4o", &[("prod-chat-4o", S)]),
            (
                "'ft:gpt-4o-2024-08-06' 'gpt-4o' prod-chat-4o",
                &[
                    ("ft:gpt-4o-2024-08-06", S),
                    ("gpt-4o", S),
                    ("prod-chat-4o", S),
                ],
            ),
            (
                " o1 o3-mini o4-mini-2025-04-16 o4 o1x o3-large",
                &[("o1", S), ("o3-mini", S), ("o4-mini-2025-04-16", S)],
            ),
            (
                "proto1 foo3 llama-vldb2013 llama-3.1-8b",
                &[("llama-3.1-8b", S)],
            ),
            (
                "meta-llama/Llama-3.3-70B-Instruct-Turbo",
                &[("meta-llama/Llama-3.3-70B-Instruct-Turbo", S)],
            ),
            ("model: gpt-4o:", &[("gpt-4o", S)]),
            (
                "'ft:gpt-4o-mini-2024-07-18:org:weather:B7R9VjQd'",
                &[("gpt-4o-mini-2024-07-18", E)],
            ),
            ("'gpt-4-https://api.example.com/'", &[("gpt-4-https", E)]),
            (r#""claude-3-" "opus-20240229" f"gpt-4o-{d}""#, &[]),
            ("\u{0}\u{ff}gpt-4\u{fe}", &[("gpt-4", S)]),
        ];
        for (text, want) in table {
            let want: Vec<(String, Form)> =
                want.iter().map(|(id, f)| ((*id).to_owned(), *f)).collect();
            assert_eq!(found(&matcher, text), want, "{text}");
        }
    }

    #[test]
    fn cores_drop_vendor_path_and_bedrock_prefix() {
        for (id, core) in [
            ("openai/gpt-4o", "gpt-4o"),
            (
                "us.anthropic.claude-3-5-haiku-20241022-v1:0",
                "claude-3-5-haiku-20241022-v1:0",
            ),
            ("models/gemini-2.5-pro", "gemini-2.5-pro"),
            ("gpt-3.5-turbo", "gpt-3.5-turbo"),
        ] {
            assert_eq!(core_of(id), core, "{id}");
        }
    }

    #[test]
    fn byte_soup_never_panics() {
        let matcher = Matcher::new(["x-1"]);
        let soup: Vec<u8> = (0..20_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let _ = matcher.find(&soup);
        let _ = matcher.find(b"/gpt-4");
        let _ = matcher.find(b".claude-3");
        let _ = matcher.find(b"gpt-");
    }
}
