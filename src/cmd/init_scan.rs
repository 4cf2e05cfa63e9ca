//! `modelpin init --from-scan`: a pins.toml with one pin per model ID the code uses.
//!
//! Only literals count (a comment or an identifier is not a use), and only outside test files
//! unless `--include-tests`: an ID that only a test names is a fixture, not production. Pins are
//! written for the providers modelpin has a kind for; an ID of another API (Bedrock, DeepSeek,
//! Mistral, ...) needs a `base_url` modelpin cannot guess, so it is listed as a comment to finish
//! by hand. A retired or retiring ID is still pinned as the code calls it, so `check` watches
//! what production sends today; the comment above the pin says when it goes, what replaces it
//! and how to move (pinning the successor instead would watch a model nothing calls yet). The
//! example probes are written beside it, as `init` does, so the file loads as written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cmd::AppError;
use crate::cmd::Output;
use crate::cmd::init::EXAMPLE;
use crate::cmd::scan::{Project, load_project, paths_or_here};
use crate::exit::Exit;
use crate::provider::modality::Modality;
use crate::scan::classify::Kind;
use crate::scan::judge::{Code, guess_provider, pin_slug};
use crate::scan::paths::is_test_path;
use crate::scan::render::printable;
use crate::scan::{Occurrence, Options, display_path};

/// Provider tables for the kinds a scanned ID can be given without a `base_url`.
const PROVIDERS: [(&str, &str, &str); 4] = [
    ("openai", "openai", "OPENAI_API_KEY"),
    ("anthropic", "anthropic", "ANTHROPIC_API_KEY"),
    ("gemini", "gemini", "GEMINI_API_KEY"),
    ("openrouter", "openrouter", "OPENROUTER_API_KEY"),
];

/// One ID the code uses: where first, and what the scan said about its lifecycle.
#[derive(Debug, Default)]
pub struct Used {
    /// `path:line` of the first use.
    pub place: String,
    /// The `retired` or `retiring` finding's message, if the ID has one.
    pub lifecycle: Option<String>,
}

pub fn run(
    config_path: &Path,
    force: bool,
    include_tests: bool,
    out: Output,
) -> Result<Exit, AppError> {
    if !force && config_path.exists() {
        return Err(AppError::Usage(format!(
            "{} already exists; nothing written (use --force to overwrite)",
            config_path.display()
        )));
    }
    // An existing, even broken, pins.toml being overwritten with --force is no reason to stop.
    let project = load_project(config_path, false, out).unwrap_or_else(|_| Project::builtin());
    let dir = config_dir(config_path);
    let walk = Options {
        paths: paths_or_here(std::slice::from_ref(&dir)),
        include: Vec::new(),
        exclude: Vec::new(),
        hidden: false,
        no_ignore: false,
        exclude_tests: false,
        max_filesize: 10 << 20,
        own_files: Vec::new(),
    };
    let scan = project.scan(&walk)?;
    let literals: Vec<&Occurrence> = scan
        .occurrences
        .iter()
        .filter(|o| o.kind == Kind::Literal)
        .collect();
    let ids = used(&literals, &dir, include_tests);
    let tests_only = distinct(&literals).saturating_sub(ids.len());
    let text = pins_toml(&ids);
    write(config_path, &text, out)?;
    for (name, body) in EXAMPLE.iter().filter(|(name, _)| *name != "pins.toml") {
        let path = dir.join(name);
        if force || !path.exists() {
            write(&path, body, out)?;
        }
    }
    if tests_only > 0 {
        out.progress(&format!(
            "{tests_only} model IDs used only in test files were left out (--include-tests pins them)"
        ));
    }
    out.progress(&format!(
        "{} model IDs found; next: set the key variables named by api_key_env, then run `modelpin lock`",
        ids.len()
    ));
    Ok(Exit::Ok)
}

fn distinct(literals: &[&Occurrence]) -> usize {
    let mut ids: Vec<&str> = literals.iter().map(|o| o.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len()
}

/// The IDs to pin: each with its first use outside test files (or anywhere, `include_tests`).
/// Whether a file is a test is decided by its path below `root`, the directory scanned, so a
/// project that itself lies under a `test` directory is not all tests.
#[must_use]
pub fn used<'a>(
    literals: &[&'a Occurrence],
    root: &Path,
    include_tests: bool,
) -> BTreeMap<&'a str, Used> {
    let mut ids: BTreeMap<&str, Used> = BTreeMap::new();
    for o in literals {
        let below = o.file.strip_prefix(root).unwrap_or(&o.file);
        if !include_tests && is_test_path(&display_path(below)) {
            continue;
        }
        let entry = ids.entry(&o.id).or_insert_with(|| Used {
            place: format!("{}:{}", display_path(Path::new(&o.path)), o.line),
            lifecycle: None,
        });
        if entry.lifecycle.is_none() {
            entry.lifecycle = o
                .findings
                .iter()
                .find(|f| matches!(f.code, Code::Retired | Code::Retiring))
                .map(|f| f.message.clone());
        }
    }
    ids
}

fn config_dir(config_path: &Path) -> PathBuf {
    match config_path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn write(path: &Path, text: &str, out: Output) -> Result<(), AppError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| AppError::io(format!("cannot create {}", parent.display()), e))?;
    }
    std::fs::write(path, text)
        .map_err(|e| AppError::io(format!("cannot write {}", path.display()), e))?;
    out.progress(&format!("wrote {}", path.display()));
    Ok(())
}

/// The file: providers used, then one pin per ID (first place it is used, and its lifecycle
/// finding with the way out, as comments).
#[must_use]
pub fn pins_toml(ids: &BTreeMap<&str, Used>) -> String {
    let mut out = String::from(
        "# pins.toml written by `modelpin init --from-scan`: one pin per model ID used in the code.\n# Review the providers and pins, then run `modelpin lock`.\nversion = 1\n",
    );
    let chat = |id: &&&str| Modality::non_chat(id).is_none();
    let used: Vec<&str> = ids
        .keys()
        .filter(chat)
        .map(|id| guess_provider(id).1)
        .collect();
    for (name, kind, key) in PROVIDERS.iter().filter(|(name, ..)| used.contains(name)) {
        let _ = write!(
            out,
            "\n[providers.{name}]\nkind = \"{kind}\"\napi_key_env = \"{key}\"\n"
        );
    }
    let mut taken: Vec<String> = Vec::new();
    for (id, use_) in ids {
        let provider = guess_provider(id).1;
        let model = toml_string(id);
        let place = use_.place.escape_debug();
        if let Some(kind) = Modality::non_chat(id) {
            let _ = write!(
                out,
                "\n# {model} (used at {place}): {kind}; modelpin's probes are chat calls, so no pin is\n# written for it: `modelpin scan` watches its lifecycle (retired, retiring, replacement).\n",
            );
            continue;
        }
        if !PROVIDERS.iter().any(|(name, ..)| *name == provider) {
            let _ = write!(
                out,
                "\n# {model} (used at {place}): a `{provider}` model; add a [providers.NAME] table with kind = \"openai-compatible\" and its base_url, then a [[pin]]\n",
            );
            continue;
        }
        let _ = write!(out, "\n# used at {place}\n");
        if let Some(lifecycle) = &use_.lifecycle {
            let _ = write!(
                out,
                "# {}\n# This pin watches the ID the code calls today. Move the code to the replacement\n# (`modelpin scan --fix` prints the patch where one can be written), then change `model` here.\n",
                printable(lifecycle, 400)
            );
        }
        let slug = unique(&pin_slug(id), &mut taken);
        let _ = write!(
            out,
            "[[pin]]\nid = \"{slug}\"\nprovider = \"{provider}\"\nmodel = {model}\nprobes = [\"probes/*.toml\"]\n",
        );
    }
    out
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn unique(slug: &str, taken: &mut Vec<String>) -> String {
    let mut candidate = slug.to_owned();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{slug}-{n}");
        n += 1;
    }
    taken.push(candidate.clone());
    candidate
}
