//! `modelpin store copy SRC DST`: a store's history, alert state and outbox copied into an empty
//! one — sled to PostgreSQL when a single daemon becomes a fleet, PostgreSQL to sled to go back —
//! and verified by reading DST back and counting.

use std::path::PathBuf;

use crate::cmd::{AppError, Output};
use crate::exit::Exit;
use crate::store::postgres::{Target, is_postgres};
use crate::store::{Holder, Location, Store};

/// A store named on the command line: a `postgres://` URL, else a directory.
fn location(text: &str) -> Result<Location, AppError> {
    if is_postgres(text) {
        return Target::parse(text, None)
            .map(Location::Postgres)
            .map_err(|why| AppError::Usage(format!("`{text}`: {why}")));
    }
    if text.trim().is_empty() {
        return Err(AppError::Usage("a store must not be empty".to_owned()));
    }
    Ok(Location::Sled(PathBuf::from(text)))
}

pub async fn copy(src: &str, dst: &str, out: Output) -> Result<Exit, AppError> {
    let (from, to) = (location(src)?, location(dst)?);
    if from == to {
        return Err(AppError::Usage(format!("`{src}` is both SRC and DST")));
    }
    if !from.exists() {
        return Err(AppError::Usage(format!("there is no store at {from}")));
    }
    let source = Store::open_at(&from, Holder::Copy).await?;
    let contents = source.export().await;
    source.close().await?;
    let contents = contents?;
    if contents.unreadable > 0 {
        return Err(AppError::Explained(
            crate::problem::Problem::new(format!(
                "{from} holds {} audits, alert states or outbox entries that do not decode; nothing was copied, as the copy would leave them behind",
                contents.unreadable
            ))
            .help(format!(
                "keep {from}, and report the store's damage; `modelpin history` there shows what still reads"
            )),
        ));
    }
    let copied = contents.counts();
    out.progress(&format!("read {copied} from {from}"));
    // Into a directory: written beside it as `<dst>.partial` and renamed once verified, so a
    // copy cut short (killed, a full disk) leaves no store at DST for `history` or a daemon to
    // open as if whole. PostgreSQL takes the copy in one transaction: all of it or nothing.
    let partial = match &to {
        Location::Sled(path) => Some((partial_of(path)?, path.clone())),
        Location::Postgres(_) => None,
    };
    let write_to = match &partial {
        Some((partial, _)) => Location::Sled(partial.clone()),
        None => to.clone(),
    };
    let target = Store::open_at(&write_to, Holder::Copy).await?;
    let outcome = into(&target, &contents).await;
    let closed = target.close().await;
    let held = outcome?;
    closed?;
    if held != copied {
        return Err(AppError::Failed(format!(
            "the copy at {write_to} holds {held}, not the {copied} of {from}"
        )));
    }
    crate::fault::at(crate::fault::Point::CopyBeforeRename);
    if let Some((partial, path)) = &partial {
        finish(partial, path)?;
    }
    crate::cmd::emit(&format!(
        "copied {copied} from {from} to {to}; verified: {to} holds as many of each\n"
    ));
    Ok(Exit::Ok)
}

/// Where a copy into the directory `path` is written first: `<path>.partial`, cleared of any
/// earlier copy cut short. `path` itself must not hold anything yet.
fn partial_of(path: &std::path::Path) -> Result<PathBuf, AppError> {
    let holds_something = std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_some());
    if holds_something || path.is_file() {
        return Err(AppError::Usage(format!(
            "{} is not empty; copy into a new store",
            path.display()
        )));
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let partial = path.with_file_name(name);
    match std::fs::remove_dir_all(&partial) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(AppError::io(
                format!(
                    "cannot clear an earlier copy cut short at {}",
                    partial.display()
                ),
                e,
            ));
        }
    }
    Ok(partial)
}

/// Puts the verified copy at `path` (an empty directory there is replaced).
fn finish(partial: &std::path::Path, path: &std::path::Path) -> Result<(), AppError> {
    if path.is_dir() {
        std::fs::remove_dir(path)
            .map_err(|e| AppError::io(format!("cannot replace {}", path.display()), e))?;
    }
    std::fs::rename(partial, path).map_err(|e| {
        AppError::io(
            format!(
                "the copy is whole at {} but cannot be renamed to {}",
                partial.display(),
                path.display()
            ),
            e,
        )
    })
}

/// Writes `contents` into `target`, which must be empty; what it holds afterwards, read back.
async fn into(
    target: &Store,
    contents: &crate::store::copy::Contents,
) -> Result<crate::store::copy::Counts, AppError> {
    let before = target.export().await?;
    if !before.is_empty() {
        return Err(AppError::Usage(format!(
            "the store to copy into is not empty (it holds {}); copy into a new store",
            before.counts()
        )));
    }
    target.import(contents).await?;
    Ok(target.export().await?.counts())
}
