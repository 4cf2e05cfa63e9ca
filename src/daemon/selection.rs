//! The pins one daemon audits when several split them (`--pins GLOB`): applied to pins.toml at
//! start and on every reload, so a reload cannot widen or narrow a daemon's share by accident.

use std::path::Path;

use crate::config::Config;
use crate::daemon::DaemonError;

/// Those pins whose id matches a `--pins` glob, or every pin when none is given.
pub struct Selection {
    globs: Vec<(String, globset::GlobMatcher)>,
}

impl Selection {
    pub fn new(patterns: &[String]) -> Result<Selection, DaemonError> {
        let globs = patterns
            .iter()
            .map(|p| {
                globset::Glob::new(p)
                    .map(|g| (p.clone(), g.compile_matcher()))
                    .map_err(|e| DaemonError::Io(format!("--pins {p}: {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Selection { globs })
    }

    /// Loads pins.toml and keeps the selected pins; selecting none is an error.
    pub fn load(&self, path: &Path) -> Result<Config, DaemonError> {
        let needs = crate::config::Needs {
            provider_keys: true,
            channel_secrets: crate::config::ChannelSecrets::Required,
        };
        let mut config = crate::config::load_for(path, needs)?;
        for warning in &config.warnings {
            tracing::warn!("{warning}");
        }
        if self.globs.is_empty() {
            return Ok(config);
        }
        config
            .pins
            .retain(|p| self.globs.iter().any(|(_, g)| g.is_match(&p.id)));
        if config.pins.is_empty() {
            let listed: Vec<&str> = self.globs.iter().map(|(p, _)| p.as_str()).collect();
            return Err(DaemonError::Io(format!(
                "no pin in {} matches --pins {}",
                path.display(),
                listed.join(", ")
            )));
        }
        Ok(config)
    }
}
