//! `modelpin scan`: find the model IDs written in a source tree and judge them.
//!
//! Works with or without pins.toml: with it, the pins, the lock, the local feeds and the
//! `warn_before` windows count; without it (at the default path), the built-in table and the
//! default windows do. A `--config` that was named but is missing is an error. No provider is
//! called and no network is used: remote feeds are skipped, with a note. `--min-level` drops the
//! findings below it before anything is rendered or the exit code decided, so every format and
//! the exit code agree on what was reported.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;

use crate::cli::ScanFormat;
use crate::cmd::AppError;
use crate::cmd::{Output, emit};
use crate::config::Config;
use crate::exit::Exit;
use crate::lifecycle::{Fact, builtin};
use crate::lock::Lock;
use crate::scan::judge::{Knowledge, Level};
use crate::scan::matcher::Matcher;
use crate::scan::{Options as WalkOptions, Scan, render, sarif};

/// pins.toml's own default `warn_before` (90, 30 and 7 days), for scans without one.
use crate::config::DEFAULT_WARN_BEFORE_DAYS;

/// Exit codes shared with `check` (DESIGN.md).

#[derive(Debug, Clone)]
pub struct Options {
    pub walk: WalkOptions,
    pub format: ScanFormat,
    pub strict: bool,
    /// Findings below this level are left out of every output and of the exit code; `None`:
    /// pins.toml's `[scan] min_level`, else every level.
    pub min_level: Option<Level>,
    pub fix: bool,
}

/// What the project knows, loaded once.
pub struct Project {
    pub config: Option<Config>,
    pub lock: Option<Lock>,
    pub facts: Vec<Fact>,
}

/// Loads pins.toml when present (or when named explicitly), its lock and its local feeds.
pub fn load_project(config_path: &Path, explicit: bool, out: Output) -> Result<Project, AppError> {
    if !explicit && !config_path.exists() {
        return Ok(Project::builtin());
    }
    let config = crate::config::load_without_keys(config_path)?;
    let lock = crate::lock::read(&config.settings.lockfile)?.map(|loaded| loaded.lock);
    let mut facts = builtin().to_vec();
    for feed in &config.settings.deprecation_feeds {
        if crate::audit::lifecycle::is_remote(feed) {
            out.progress(&format!("note: scan uses no network; feed {feed} skipped"));
            continue;
        }
        match crate::audit::lifecycle::local_feed(feed, config.project()) {
            Ok(more) => facts.extend(more),
            Err(e) => out.progress(&format!("warning: {e}")),
        }
    }
    Ok(Project {
        config: Some(config),
        lock,
        facts,
    })
}

impl Project {
    /// No pins.toml: the built-in table only.
    #[must_use]
    pub fn builtin() -> Project {
        Project {
            config: None,
            lock: None,
            facts: builtin().to_vec(),
        }
    }

    /// Every ID the project knows of: lifecycle facts, pins and the lock.
    fn known_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self
            .facts
            .iter()
            .flat_map(|f| f.models.iter().map(String::as_str))
            .collect();
        for pin in self.config.iter().flat_map(|c| &c.pins) {
            ids.push(&pin.model);
            ids.push(&pin.deployment);
            ids.extend(pin.accept.iter().map(String::as_str));
        }
        for locked in self.lock.iter().flat_map(|l| l.pins.values()) {
            ids.extend(locked.served_models.keys().map(String::as_str));
        }
        ids
    }

    fn warn_before(&self) -> Vec<Duration> {
        match &self.config {
            Some(config) => config.settings.warn_before.clone(),
            None => DEFAULT_WARN_BEFORE_DAYS
                .iter()
                .map(|d| Duration::from_secs(d * 86_400))
                .collect(),
        }
    }

    /// pins.toml and its lock, which a scan leaves out.
    fn own_files(&self) -> Vec<PathBuf> {
        self.config
            .iter()
            .flat_map(|c| [c.path.clone(), c.settings.lockfile.clone()])
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect()
    }

    /// Scans with this project's knowledge.
    pub fn scan(&self, walk: &WalkOptions) -> Result<Scan, AppError> {
        let walk = &WalkOptions {
            own_files: self.own_files(),
            ..walk.clone()
        };
        let matcher = Matcher::new(self.known_ids());
        let warn_before = self.warn_before();
        let knowledge = Knowledge::new(
            &self.facts,
            self.config.as_ref().map_or(&[], |c| &c.pins),
            self.lock.as_ref(),
            Utc::now(),
            &warn_before,
        );
        crate::scan::scan(walk, &matcher, &knowledge).map_err(|e| AppError::Usage(e.to_string()))
    }
}

pub fn run(
    config_path: &Path,
    explicit: bool,
    options: &Options,
    out: Output,
) -> Result<Exit, AppError> {
    let project = load_project(config_path, explicit, out)?;
    let mut scan = project.scan(&options.walk)?;
    let min_level = options
        .min_level
        .or_else(|| project.config.as_ref().and_then(|c| c.scan.min_level))
        .unwrap_or(Level::Info);
    scan.keep_at_least(min_level);
    let code = exit_code(&scan, options.strict);
    let text = if options.fix {
        render::patch(&scan, &|path| std::fs::read(path).ok())
    } else {
        match options.format {
            ScanFormat::Human => render::human(&scan),
            ScanFormat::Json => render::json(&scan, code),
            ScanFormat::Sarif => sarif::render(&scan),
            ScanFormat::Github => render::github(&scan),
        }
    };
    emit(&text);
    if options.fix || options.format != ScanFormat::Human {
        out.progress(&render::summary_line(&scan));
    }
    Ok(code)
}

/// 1 when an error finding exists (or a warning, with `strict`); else 3 when a path could not be
/// read; else 0.
#[must_use]
pub fn exit_code(scan: &Scan, strict: bool) -> Exit {
    let worst = scan
        .occurrences
        .iter()
        .filter_map(crate::scan::Occurrence::level)
        .max();
    let fails = match worst {
        Some(Level::Error) => true,
        Some(Level::Warning) => strict,
        _ => false,
    };
    if fails {
        Exit::Failed
    } else if scan.summary.unreadable.is_empty() {
        Exit::Ok
    } else {
        Exit::Inconclusive
    }
}

/// The paths to walk: the current directory when none are given.
#[must_use]
pub fn paths_or_here(paths: &[PathBuf]) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths.to_vec()
    }
}
