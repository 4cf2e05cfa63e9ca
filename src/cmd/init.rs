//! `modelpin init`: write the commented example pins.toml and probes.
//!
//! The files written are the repository's own top-level `pins.toml` and `probes/`, embedded at
//! build time, so the example a user starts from is the one the test suite parses.

use std::path::{Path, PathBuf};

use crate::cmd::AppError;
use crate::cmd::Output;
use crate::exit::Exit;

/// The example files, by path relative to the config's directory.
pub const EXAMPLE: [(&str, &str); 7] = [
    ("pins.toml", include_str!("../../pins.toml")),
    ("probes/arith.toml", include_str!("../../probes/arith.toml")),
    (
        "probes/capital.toml",
        include_str!("../../probes/capital.toml"),
    ),
    ("probes/json.toml", include_str!("../../probes/json.toml")),
    ("probes/haiku.toml", include_str!("../../probes/haiku.toml")),
    (
        "probes/prime-91.toml",
        include_str!("../../probes/prime-91.toml"),
    ),
    (
        "probes/prime-97.toml",
        include_str!("../../probes/prime-97.toml"),
    ),
];

pub fn run(config_path: &Path, force: bool, out: Output) -> Result<Exit, AppError> {
    let dir = config_path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    };
    let targets: Vec<(PathBuf, &str)> = EXAMPLE
        .iter()
        .map(|(name, text)| {
            let path = if *name == "pins.toml" {
                config_path.to_path_buf()
            } else {
                dir.join(name)
            };
            (path, *text)
        })
        .collect();
    if !force && let Some((existing, _)) = targets.iter().find(|(p, _)| p.exists()) {
        return Err(AppError::Usage(format!(
            "{} already exists; nothing written (use --force to overwrite)",
            existing.display()
        )));
    }
    for (path, text) in &targets {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| AppError::io(format!("cannot create {}", parent.display()), e))?;
        }
        std::fs::write(path, text)
            .map_err(|e| AppError::io(format!("cannot write {}", path.display()), e))?;
        out.progress(&format!("wrote {}", path.display()));
    }
    out.progress("next: set the key variables named by api_key_env, then run `modelpin lock`");
    Ok(Exit::Ok)
}
