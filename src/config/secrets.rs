//! Refuses credentials written into pins.toml.
//!
//! pins.toml is meant to be committed, so a key in it is a leaked key. The scan walks every value
//! of the document, before any other check, and looks for two things: a key whose name says it
//! holds a secret (`api_key`, `password`, ...) and a string shaped like a provider credential
//! (`sk-...`, `AIza...`, `Bearer ...`). The diagnostics mask what they found, since they end up in
//! CI logs.

use std::ops::Range;

use toml_edit::{Item, TableLike, Value};

use super::diagnostic::Diagnostic;
use super::source::Source;

/// Key names that can only mean a literal secret; compared lower-case with `-` read as `_`.
const SECRET_KEYS: [&str; 12] = [
    "api_key",
    "apikey",
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "x_api_key",
    "x_goog_api_key",
    "access_token",
    "auth_token",
];

/// Credential prefixes, longest first so the note names the most specific one.
const CREDENTIAL_PREFIXES: [&str; 7] =
    ["sk-ant-", "sk-or-", "whsec_", "AIza", "gsk_", "xai-", "sk-"];

/// Characters a credential has after its prefix; shorter strings are names, not keys.
const MIN_CREDENTIAL_BODY: usize = 8;

struct Found {
    /// The value's span, masked in every snippet.
    span: Range<usize>,
    /// What stays readable at the start of the value (`sk-`, `Bearer `).
    visible: String,
    /// The top-level table it is in, for the help line.
    section: String,
    /// The key holding it.
    key: String,
    why: Option<String>,
}

/// Every literal secret in `src`, masked in the diagnostics.
pub(crate) fn scan(src: &Source) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    walk_table(src.root(), "", &mut found);
    let masked = mask(&src.text, &found);
    found
        .iter()
        .map(|f| {
            let mut d = Diagnostic::new("literal secrets are not allowed in pins.toml")
                .with_snippet(src.masked_snippet(&masked, f.span.clone()));
            if let Some(why) = &f.why {
                d.note(why.clone());
            }
            d.help(format!(
                "put it in an environment variable and name it with `{}`",
                env_key_for(&f.section, &f.key, &f.visible)
            ));
            d
        })
        .collect()
}

fn walk_table(table: &dyn TableLike, section: &str, found: &mut Vec<Found>) {
    for (key, item) in table.iter() {
        let section = if section.is_empty() { key } else { section };
        if is_secret_key(key)
            && let Some(span) = item.span()
        {
            found.push(Found {
                span,
                visible: String::new(),
                section: section.to_string(),
                key: key.to_string(),
                why: None,
            });
            continue;
        }
        walk_item(item, section, key, found);
    }
}

fn walk_item(item: &Item, section: &str, key: &str, found: &mut Vec<Found>) {
    match item {
        Item::Value(value) => walk_value(value, section, key, found),
        Item::Table(table) => walk_table(table, section, found),
        Item::ArrayOfTables(tables) => {
            for table in tables {
                walk_table(table, section, found);
            }
        }
        Item::None => {}
    }
}

fn walk_value(value: &Value, section: &str, key: &str, found: &mut Vec<Found>) {
    match value {
        Value::String(s) => {
            if let (Some(prefix), Some(span)) = (credential_prefix(s.value()), value.span()) {
                found.push(Found {
                    span,
                    visible: prefix.to_string(),
                    section: section.to_string(),
                    key: key.to_string(),
                    why: Some(why(prefix)),
                });
            }
        }
        Value::Array(array) => {
            for v in array {
                walk_value(v, section, key, found);
            }
        }
        Value::InlineTable(table) => walk_table(table, section, found),
        _ => {}
    }
}

fn why(prefix: &str) -> String {
    if prefix == "Bearer " {
        "this value is a `Bearer` token".to_string()
    } else {
        format!("this value looks like a credential (it starts with `{prefix}`)")
    }
}

fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEYS.contains(&key.as_str())
}

/// The prefix that makes `s` look like a credential, if any.
fn credential_prefix(s: &str) -> Option<&'static str> {
    let s = s.trim();
    if let (Some(head), Some(rest)) = (s.get(..7), s.get(7..))
        && head.eq_ignore_ascii_case("bearer ")
        && !rest.trim().is_empty()
    {
        return Some("Bearer ");
    }
    if s.chars().any(char::is_whitespace) {
        return None;
    }
    CREDENTIAL_PREFIXES
        .into_iter()
        .find(|p| s.starts_with(p) && s.len() >= p.len() + MIN_CREDENTIAL_BODY)
}

/// Which `*_env` key the user should use instead.
fn env_key_for(section: &str, key: &str, visible: &str) -> &'static str {
    if section != "alerts" {
        return "api_key_env";
    }
    match key {
        "password" | "passwd" => "password_env",
        _ if key == "secret" || key == "secret_env" || visible == "whsec_" => "secret_env",
        "url" | "url_env" => "url_env",
        _ => "password_env",
    }
}

/// `text` with every found value replaced, character for character, by `*` after its visible
/// prefix and opening quote, so line and column arithmetic on the original still holds.
fn mask(text: &str, found: &[Found]) -> String {
    let mut out = String::with_capacity(text.len());
    for (offset, c) in text.char_indices() {
        let hidden = found.iter().any(|f| {
            let keep = f.span.start + 1 + f.visible.len();
            f.span.contains(&offset) && offset >= keep && offset + c.len_utf8() < f.span.end
        });
        out.push(if hidden && c != '\n' { '*' } else { c });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::credential_prefix;

    #[test]
    fn recognises_credential_shapes() {
        assert_eq!(credential_prefix("sk-proj-abcdefgh1234"), Some("sk-"));
        assert_eq!(credential_prefix("sk-ant-api03-abcdefgh"), Some("sk-ant-"));
        assert_eq!(credential_prefix("AIzaSyA1234567890"), Some("AIza"));
        assert_eq!(credential_prefix("bearer abc"), Some("Bearer "));
        assert_eq!(credential_prefix("sk-short"), None);
        assert_eq!(credential_prefix("gpt-4o-2024-08-06"), None);
        assert_eq!(credential_prefix("OPENAI_API_KEY"), None);
        assert_eq!(credential_prefix("Bearer"), None);
        // Multi-byte text across the seventh byte is read, not sliced mid-character.
        assert_eq!(credential_prefix("\u{1cc00}\u{1cc00}x"), None);
        assert_eq!(credential_prefix("Beare\u{e9} token"), None);
    }
}
