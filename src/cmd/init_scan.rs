//! `modelpin init --from-scan`: a pins.toml with one pin per model ID the code uses.
//!
//! Only literals count (a comment or an identifier is not a use). Pins are written for the
//! providers modelpin has a kind for; an ID of another API (Bedrock, DeepSeek, Mistral, ...)
//! needs a `base_url` modelpin cannot guess, so it is listed as a comment to finish by hand. The
//! example probes are written beside it, as `init` does, so the file loads as written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cmd::AppError;
use crate::cmd::Output;
use crate::cmd::init::EXAMPLE;
use crate::cmd::scan::{Project, load_project, paths_or_here};
use crate::exit::Exit;
use crate::scan::classify::Kind;
use crate::scan::judge::{guess_provider, pin_slug};
use crate::scan::{Options, display_path};

/// Provider tables for the kinds a scanned ID can be given without a `base_url`.
const PROVIDERS: [(&str, &str, &str); 4] = [
    ("openai", "openai", "OPENAI_API_KEY"),
    ("anthropic", "anthropic", "ANTHROPIC_API_KEY"),
    ("gemini", "gemini", "GEMINI_API_KEY"),
    ("openrouter", "openrouter", "OPENROUTER_API_KEY"),
];

pub fn run(config_path: &Path, force: bool, out: Output) -> Result<Exit, AppError> {
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
        max_filesize: 10 << 20,
        own_files: Vec::new(),
    };
    let scan = project.scan(&walk)?;
    let mut ids: BTreeMap<&str, String> = BTreeMap::new();
    for o in scan.occurrences.iter().filter(|o| o.kind == Kind::Literal) {
        ids.entry(&o.id)
            .or_insert_with(|| format!("{}:{}", display_path(Path::new(&o.path)), o.line));
    }
    let text = pins_toml(&ids);
    write(config_path, &text, out)?;
    for (name, body) in EXAMPLE.iter().filter(|(name, _)| *name != "pins.toml") {
        let path = dir.join(name);
        if force || !path.exists() {
            write(&path, body, out)?;
        }
    }
    out.progress(&format!(
        "{} model IDs found; next: set the key variables named by api_key_env, then run `modelpin lock`",
        ids.len()
    ));
    Ok(Exit::Ok)
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
            .map_err(|e| AppError::Io(format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::write(path, text)
        .map_err(|e| AppError::Io(format!("cannot write {}: {e}", path.display())))?;
    out.progress(&format!("wrote {}", path.display()));
    Ok(())
}

/// The file: providers used, then one pin per ID (first place it is used, as a comment).
#[must_use]
pub fn pins_toml(ids: &BTreeMap<&str, String>) -> String {
    let mut out = String::from(
        "# pins.toml written by `modelpin init --from-scan`: one pin per model ID used in the code.\n# Review the providers and pins, then run `modelpin lock`.\nversion = 1\n",
    );
    let used: Vec<&str> = ids.keys().map(|id| guess_provider(id).1).collect();
    for (name, kind, key) in PROVIDERS.iter().filter(|(name, ..)| used.contains(name)) {
        let _ = write!(
            out,
            "\n[providers.{name}]\nkind = \"{kind}\"\napi_key_env = \"{key}\"\n"
        );
    }
    let mut taken: Vec<String> = Vec::new();
    for (id, place) in ids {
        let provider = guess_provider(id).1;
        let model = toml_string(id);
        if !PROVIDERS.iter().any(|(name, ..)| *name == provider) {
            let _ = write!(
                out,
                "\n# {model} (used at {}): a `{provider}` model; add a [providers.NAME] table with kind = \"openai-compatible\" and its base_url, then a [[pin]]\n",
                place.escape_debug()
            );
            continue;
        }
        let slug = unique(&pin_slug(id), &mut taken);
        let _ = write!(
            out,
            "\n# used at {}\n[[pin]]\nid = \"{slug}\"\nprovider = \"{provider}\"\nmodel = {model}\nprobes = [\"probes/*.toml\"]\n",
            place.escape_debug()
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
