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
        return Err(AppError::Io(format!(
            "{from} holds {} audits, alert states or outbox entries that do not decode; nothing \
             was copied, as the copy would leave them behind\n  = help: keep {from}, and report \
             the store's damage; `modelpin history` there shows what still reads",
            contents.unreadable
        )));
    }
    let copied = contents.counts();
    out.progress(&format!("read {copied} from {from}"));
    let target = Store::open_at(&to, Holder::Copy).await?;
    let outcome = into(&target, &contents).await;
    let closed = target.close().await;
    let held = outcome?;
    closed?;
    if held != copied {
        return Err(AppError::Io(format!(
            "the copy at {to} holds {held}, not the {copied} of {from}"
        )));
    }
    crate::cmd::emit(&format!(
        "copied {copied} from {from} to {to}; verified: {to} holds as many of each\n"
    ));
    Ok(Exit::Ok)
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
