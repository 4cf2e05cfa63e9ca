//! End-to-end tests of `load`: real files in a temporary directory, messages pinned verbatim.

mod accepted;
mod alerts;
mod pins;
mod probes;
mod props;
mod providers;
mod secrets;
mod settings;
mod traffic;

use std::fs;
use std::path::PathBuf;

use tempfile::TempDir;

use super::{Config, ConfigError, load};

/// A minimal valid pins.toml; tests append to it or replace lines in it.
pub(crate) const BASE: &str = r#"version = 1

[providers.openai]
kind = "openai"
api_key_env = "OPENAI_API_KEY"

[[pin]]
id = "support-bot"
provider = "openai"
model = "gpt-4o-2024-08-06"
"#;

pub(crate) const PROBE: &str = r#"id = "arith-17x23"
prompt = "What is 17 * 23? Reply with the number only."
max_tokens = 8
temperature = 1.0
compare = "choice"
[expect]
equals = "391"
"#;

/// A directory holding pins.toml and whatever else a test writes next to it.
pub(super) struct Dir {
    dir: TempDir,
    env: Vec<(String, String)>,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().unwrap(),
            env: vec![("OPENAI_API_KEY".into(), "sk-test-value-from-env".into())],
        }
    }

    pub fn file(self, relative: &str, text: &str) -> Dir {
        let path = self.dir.path().join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        self
    }

    pub fn pins(self, text: &str) -> Dir {
        self.file("pins.toml", text)
    }

    pub fn env(mut self, name: &str, value: &str) -> Dir {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn without_env(mut self) -> Dir {
        self.env.clear();
        self
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("pins.toml")
    }

    pub fn load(&self) -> Result<Config, ConfigError> {
        let lookup = |name: &str| {
            self.env
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        load(&self.path(), &lookup)
    }

    pub fn config(&self) -> Config {
        match self.load() {
            Ok(config) => config,
            Err(err) => panic!("expected a valid config, got:\n{err}"),
        }
    }

    /// The rendered error, with the temporary directory cut from paths so it reads as
    /// `pins.toml:3:1`.
    pub fn error(&self) -> String {
        let err = match self.load() {
            Ok(config) => panic!("expected an error, got {config:#?}"),
            Err(err) => err.to_string(),
        };
        err.replace(&format!("{}/", self.dir.path().display()), "")
    }
}

/// Loads `pins` (with `OPENAI_API_KEY` set) and returns its rendered error.
pub(super) fn error(pins: &str) -> String {
    Dir::new().pins(pins).error()
}

/// `BASE` with `from` replaced by `to` (which must occur).
pub(super) fn base_with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from:?} not in BASE");
    BASE.replacen(from, to, 1)
}
