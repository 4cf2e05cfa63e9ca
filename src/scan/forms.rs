//! The written forms of a model ID, and a successor written in the form of the ID it replaces.
//!
//! `--fix` once spliced a successor into the ID's core, so `us.anthropic.claude-sonnet-4-…-v1:0`
//! with the successor `anthropic.claude-sonnet-5` became `us.anthropic.anthropic.claude-sonnet-5`,
//! which no API serves. The rule here: a successor is written only in the form of the ID it
//! replaces, and only when that form can be stated. A prefix that is pure syntax (Gemini's
//! `models/`, a Vertex resource path, a LiteLLM route such as `gemini/`) takes any ID of its
//! provider; a form that names a product of its own (a Bedrock ID with its region profile and
//! version, an OpenRouter slug and its `:variant`, a Vertex `@` version) is used only as the
//! source wrote it. Anything else gets no fix.

use crate::scan::matcher::{BEDROCK_PROFILES, ROUTERS, VENDORS, core_of};

/// How an ID is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form<'a> {
    /// `gpt-4o-2024-08-06`: the provider's own ID.
    Plain,
    /// `claude-3-5-sonnet@20240620`: Vertex's versioned partner-model ID.
    Versioned,
    /// `us.anthropic.claude-…-v1:0`, `anthropic.claude-v2:1`.
    Bedrock { profile: Option<&'a str> },
    /// `models/gemini-2.5-pro`.
    GeminiModels,
    /// `projects/p/locations/l/publishers/google/models/…`, up to and including `models/`.
    VertexPath { prefix: &'a str },
    /// `gemini/gemini-1.5-flash`: a LiteLLM route before the provider's own ID.
    Route { prefix: &'a str },
    /// `openai/gpt-4o:free`, `openrouter/mistralai/mixtral-8x22b`: a vendor slug, after an
    /// optional route, with an optional `:variant`.
    Slug {
        route: &'a str,
        variant: Option<&'a str>,
    },
}

fn form(id: &str) -> Form<'_> {
    let Some((prefix, tail)) = id.rsplit_once('/') else {
        return plain_form(id);
    };
    let prefix = &id[..=prefix.len()];
    if prefix == "models/" {
        return Form::GeminiModels;
    }
    if prefix.starts_with("projects/") || prefix.starts_with("publishers/") {
        return Form::VertexPath { prefix };
    }
    let segments: Vec<&str> = prefix.trim_end_matches('/').split('/').collect();
    let routed = ROUTERS.contains(&segments[0]);
    // `openrouter/` is followed by a slug, never by a provider's own ID.
    let single = segments.len() == 1 && segments[0] != "openrouter";
    if routed && single && !VENDORS.contains(&segments[0]) {
        return Form::Route { prefix };
    }
    let route = if routed && segments.len() > 1 {
        &prefix[..=segments[0].len()]
    } else {
        ""
    };
    let variant = tail
        .rsplit_once(':')
        .map(|(_, v)| v)
        .filter(|v| v.bytes().all(|b| b.is_ascii_alphabetic()));
    Form::Slug { route, variant }
}

fn plain_form(id: &str) -> Form<'_> {
    let core = core_of(id);
    if core.len() < id.len() {
        let prefix = &id[..id.len() - core.len() - 1];
        let profile = prefix
            .split_once('.')
            .map(|(profile, _)| profile)
            .filter(|p| BEDROCK_PROFILES.contains(p));
        return Form::Bedrock { profile };
    }
    if id.contains('@') {
        Form::Versioned
    } else {
        Form::Plain
    }
}

/// Letters, digits and the punctuation IDs use: never a display name such as `Claude Sonnet 4.5`.
fn id_shaped(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:@/".contains(&b))
}

/// `successor` written in the form of `found`, or `None` when that form cannot be stated.
#[must_use]
pub fn same_form(found: &str, successor: &str) -> Option<String> {
    if !id_shaped(successor) {
        return None;
    }
    let wanted = form(found);
    let given = form(successor);
    let written = match (wanted, given) {
        (a, b) if a == b => successor.to_owned(),
        (Form::GeminiModels, Form::Plain) => format!("models/{successor}"),
        (Form::VertexPath { prefix }, Form::Plain) if prefix.contains("/publishers/google/") => {
            format!("{prefix}{successor}")
        }
        (Form::VertexPath { prefix }, Form::Versioned)
            if !prefix.contains("/publishers/google/") =>
        {
            format!("{prefix}{successor}")
        }
        (Form::Route { prefix }, Form::Plain) => format!("{prefix}{successor}"),
        (
            Form::Slug { route, variant },
            Form::Slug {
                route: "",
                variant: given,
            },
        ) if variant == given => format!("{route}{successor}"),
        _ => return None,
    };
    (written != found).then_some(written)
}

#[cfg(test)]
mod tests {
    use super::same_form;

    /// Every form the matcher takes in, with a successor in each form: the fix is the successor
    /// in the found ID's form, or none.
    const TABLE: &[(&str, &str, Option<&str>)] = &[
        ("gpt-4-0613", "gpt-5", Some("gpt-5")),
        ("gpt-4-0613", "openai/gpt-5", None),
        ("gpt-4-0613", "Claude Sonnet 4.5", None),
        ("gpt-4-0613", "gpt-4-0613", None),
        (
            "claude-3-opus-20240229",
            "claude-opus-4-8",
            Some("claude-opus-4-8"),
        ),
        ("claude-3-opus-20240229", "claude-opus-4-1@20250805", None),
        (
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            "us.anthropic.claude-sonnet-5",
            Some("us.anthropic.claude-sonnet-5"),
        ),
        (
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            "anthropic.claude-sonnet-5",
            None,
        ),
        (
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            "claude-sonnet-5",
            None,
        ),
        (
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            "eu.anthropic.claude-sonnet-5",
            None,
        ),
        (
            "anthropic.claude-v2:1",
            "anthropic.claude-3-haiku-20240307-v1:0",
            Some("anthropic.claude-3-haiku-20240307-v1:0"),
        ),
        ("anthropic.claude-v2:1", "Claude Sonnet 4.5", None),
        (
            "claude-3-5-sonnet@20240620",
            "claude-sonnet-4-5@20250929",
            Some("claude-sonnet-4-5@20250929"),
        ),
        ("claude-3-5-sonnet@20240620", "claude-sonnet-4-5", None),
        (
            "models/gemini-2.0-flash-001",
            "gemini-2.5-flash",
            Some("models/gemini-2.5-flash"),
        ),
        (
            "models/gemini-2.0-flash-001",
            "models/gemini-2.5-flash",
            Some("models/gemini-2.5-flash"),
        ),
        (
            "models/gemini-2.0-flash-001",
            "google/gemini-2.5-flash",
            None,
        ),
        (
            "projects/p/locations/l/publishers/google/models/gemini-2.0-flash-001",
            "gemini-2.5-flash",
            Some("projects/p/locations/l/publishers/google/models/gemini-2.5-flash"),
        ),
        (
            "projects/p/locations/l/publishers/anthropic/models/claude-3-5-sonnet@20240620",
            "claude-sonnet-4-5@20250929",
            Some("projects/p/locations/l/publishers/anthropic/models/claude-sonnet-4-5@20250929"),
        ),
        (
            "projects/p/locations/l/publishers/anthropic/models/claude-3-5-sonnet@20240620",
            "claude-sonnet-4-5",
            None,
        ),
        (
            "gemini/gemini-1.5-flash",
            "gemini-2.5-flash",
            Some("gemini/gemini-2.5-flash"),
        ),
        (
            "google/gemini-2.0-flash-001",
            "google/gemini-2.5-flash",
            Some("google/gemini-2.5-flash"),
        ),
        ("google/gemini-2.0-flash-001", "gemini-2.5-flash", None),
        (
            "openai/gpt-4o:free",
            "openai/gpt-5:free",
            Some("openai/gpt-5:free"),
        ),
        ("openai/gpt-4o:free", "openai/gpt-5", None),
        (
            "openrouter/mistralai/mixtral-8x22b",
            "mistralai/mistral-large-2411",
            Some("openrouter/mistralai/mistral-large-2411"),
        ),
        (
            "openrouter/mistralai/mixtral-8x22b",
            "mistral-large-2411",
            None,
        ),
        (
            "meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "meta-models/Muse-Glimmer-30B",
            Some("meta-models/Muse-Glimmer-30B"),
        ),
    ];

    #[test]
    fn successors_are_written_in_the_found_form_or_not_at_all() {
        for (found, successor, want) in TABLE {
            assert_eq!(
                same_form(found, successor).as_deref(),
                *want,
                "{found} -> {successor}"
            );
        }
    }
}
