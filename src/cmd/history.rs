//! `modelpin history`: recent audits from the store.
//!
//! sled lets one process open a store, so while the daemon runs this command asks the daemon
//! (its `/api/history` on `settings.metrics`) instead of opening the files itself.

use crate::text::display_id;
use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::audit::plan::select_pins;
use crate::cli::ListFormat as Format;
use crate::cmd::AppError;
use crate::exit::Exit;
use crate::store::{AuditRecord, Holder, Store, StoreError};

pub async fn run(
    config_path: &Path,
    pin: Option<&str>,
    since: &str,
    format: Format,
) -> Result<Exit, AppError> {
    // History calls no provider: the keys' variables need not be set.
    let config = crate::config::load_without_keys(config_path)?;
    // Longer ago than any time there is means all of history, as /api/history reads it.
    let since = crate::config::since_ago(since, Utc::now())
        .map_err(|e| AppError::Usage(format!("--since {since}: {e}")))?;
    if let Some(pin) = pin {
        // The same refusal as `check --pin`: a typo must not read as "no audits".
        select_pins(&config, &[pin.to_owned()])?;
    }
    let records = match &config.settings.store {
        // PostgreSQL is shared: read it directly, daemons running or not.
        location @ crate::store::Location::Postgres(_) => {
            let store = Store::open_at(location, Holder::History).await?;
            from_store(&store, location, pin, since).await?
        }
        crate::store::Location::Sled(path) => {
            sled_history(&config.settings, path, pin, since).await?
        }
    };
    let text = match format {
        Format::Json => {
            let mut text = crate::text::json_inert(
                serde_json::to_string_pretty(&records).expect("records serialise"),
            );
            text.push('\n');
            text
        }
        Format::Human => render(&records),
    };
    crate::cmd::emit(&text);
    Ok(Exit::Ok)
}

/// History of a sled store: a running daemon holds it, so it is asked first, and this command
/// never takes the store's lock from under a daemon that is starting.
async fn sled_history(
    settings: &crate::config::Settings,
    path: &Path,
    pin: Option<&str>,
    since: DateTime<Utc>,
) -> Result<Vec<AuditRecord>, AppError> {
    Ok(match from_daemon(settings, pin, since).await {
        Ok(records) => records,
        // No store yet: nothing was audited; opening it would create one.
        Err(_) if !path.exists() => Vec::new(),
        Err(daemon_error) => {
            // sled opens nothing read-only (it takes locks and writes its header): a store this
            // user cannot write to is read from a copy, made and removed here.
            let copy = if writable(path) {
                None
            } else {
                Some(read_only_copy(path)?)
            };
            let open_at = copy.as_ref().map_or(path, |dir| dir.path());
            match Store::open(open_at, Holder::History).await {
                Ok(store) => {
                    let location = crate::store::Location::Sled(path.to_owned());
                    from_store(&store, &location, pin, since).await?
                }
                Err(StoreError::InUse { .. }) => return Err(daemon_error),
                Err(e) => return Err(e.into()),
            }
        }
    })
}

/// Whether this process may create files in the store's directory.
fn writable(path: &Path) -> bool {
    tempfile::tempfile_in(path).is_ok()
}

/// The store's files copied into a new temporary directory (removed when dropped).
fn read_only_copy(path: &Path) -> Result<tempfile::TempDir, AppError> {
    let fail = |e: std::io::Error| {
        AppError::io(
            format!(
                "the store at {} is read-only to this user and could not be copied to read it",
                path.display()
            ),
            e,
        )
    };
    let dir = tempfile::tempdir().map_err(fail)?;
    copy_tree(path, dir.path()).map_err(fail)?;
    Ok(dir)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// History from the store itself, closed afterwards; records that do not decode are said.
async fn from_store(
    store: &Store,
    path: &crate::store::Location,
    pin: Option<&str>,
    since: DateTime<Utc>,
) -> Result<Vec<AuditRecord>, AppError> {
    let records = store.history(pin, Some(since)).await;
    let closed = store.close().await;
    let records = records?;
    closed?;
    let undecodable = store.undecodable();
    if undecodable > 0 {
        eprintln!(
            "warning: {undecodable} records in the store at {path} do not decode and are not shown: the store is damaged\n  = help: stop the daemon and run `modelpin daemon --reset-store` to move it aside and start a new one, or restore a backup"
        );
    }
    Ok(records)
}

/// Every page of the daemon's history, following its `Link: rel="next"` headers.
async fn from_daemon(
    settings: &crate::config::Settings,
    pin: Option<&str>,
    since: DateTime<Utc>,
) -> Result<Vec<AuditRecord>, AppError> {
    let addr = settings.metrics;
    let base = format!("http://{addr}");
    let fail = |e: &dyn std::fmt::Display| {
        AppError::Failed(format!(
            "the store is in use by the daemon and its endpoint {base}/api/history did not answer: {e}"
        ))
    };
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| fail(&e))?;
    let token = settings
        .api_token_env
        .as_deref()
        .and_then(|var| std::env::var(var).ok());
    let mut url = reqwest::Url::parse(&format!("{base}/api/history")).map_err(|e| fail(&e))?;
    url.query_pairs_mut()
        .append_pair("since", &since.to_rfc3339())
        .extend_pairs(pin.map(|p| ("pin", p)));
    let mut records = Vec::new();
    loop {
        let mut request = client.get(url.clone());
        if let Some(token) = &token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| fail(&e))?;
        let status = response.status();
        // The daemon knows the pin neither from its config (it may not have reloaded the one
        // this command read) nor from history: it has no records of it.
        if status == reqwest::StatusCode::NOT_FOUND && pin.is_some() {
            return Ok(records);
        }
        if !status.is_success() {
            return Err(fail(&format!("HTTP {status}")));
        }
        let next = next_page(response.headers());
        let bytes = response.bytes().await.map_err(|e| fail(&e))?;
        let page: Vec<AuditRecord> = serde_json::from_slice(&bytes).map_err(|e| fail(&e))?;
        records.extend(page);
        match next.and_then(|path| url.join(&path).ok()) {
            Some(next) => url = next,
            None => return Ok(records),
        }
    }
}

/// The target of a `Link: <…>; rel="next"` header.
fn next_page(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let link = headers.get(reqwest::header::LINK)?.to_str().ok()?;
    let (target, params) = link.split_once(';')?;
    params.contains("rel=\"next\"").then(|| {
        target
            .trim()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_owned()
    })
}

/// The pin, marked when the verdict came from its traffic rather than a probe audit.
fn subject(r: &AuditRecord) -> String {
    match r.source {
        None => display_id(&r.pin.id),
        Some(crate::store::RecordSource::Traffic) => format!("{} (traffic)", display_id(&r.pin.id)),
    }
}

/// The human table: a header row, newest first, columns as wide as their longest cell, no
/// trailing spaces. (The JSON form keeps the store's order, oldest first.)
fn render(records: &[AuditRecord]) -> String {
    if records.is_empty() {
        return "no audits in that period\n".to_owned();
    }
    let header = ["STARTED (UTC)", "PIN", "STATUS", "SERVED", "FINDINGS"].map(String::from);
    let rows: Vec<[String; 5]> = records
        .iter()
        .rev()
        .map(|r| {
            let served: Vec<String> = r
                .pin
                .served_models
                .iter()
                .map(|(m, n)| format!("{} ×{n}", display_id(m)))
                .collect();
            let codes: Vec<&str> = r.pin.findings.iter().map(|f| f.code.as_str()).collect();
            let or_dash = |v: String| if v.is_empty() { "-".to_owned() } else { v };
            [
                r.started_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                subject(r),
                r.pin.status.as_str().to_owned(),
                or_dash(served.join(", ")),
                or_dash(codes.join(", ")),
            ]
        })
        .collect();
    let widths = crate::text::column_widths(&header, &rows);
    let mut out = String::new();
    for row in [&header].into_iter().chain(&rows) {
        let _ = writeln!(out, "{}", crate::text::table_row(row, &widths));
    }
    out
}
