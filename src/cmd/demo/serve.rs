//! `modelpin demo --serve`: the demo's simulated provider kept running, with switches.
//!
//! `demo --keep DIR` leaves a project whose provider is gone when the demo exits, so nothing
//! more can be tried in it. Here the simulator stays up on loopback: the project is written and
//! locked against the world as it starts (so `check` is green at first), the URL, the directory
//! and the variable to export are printed with the next commands, and `POST /_sim/ACTION`
//! changes the world (`sim::control`) until SIGINT or SIGTERM ends the demo with exit 0.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use chrono::Utc;

use super::{KEY_VARIABLE, Place, project};
use crate::cmd::{AppError, Output};
use crate::exit::Exit;
use crate::sim::Simulator;
use crate::sim::control::{ACTIONS, DEFAULT_SLOW_MS, PREFIX};
use crate::sim::demo_world::{self, DEMO_KEY, PINNED};

/// How far ahead the demo pin's retirement lies: `check` shows it scheduled, and green.
const RETIRES_IN_DAYS: i64 = 30;

/// Writes and locks the demo project against a simulator on `127.0.0.1:port`, prints how to use
/// it, and serves until SIGINT or SIGTERM.
pub async fn serve(out: Output, keep: Option<&Path>, port: u16) -> Result<Exit, AppError> {
    // Signals are taken before anything is printed: a SIGTERM right after the announcement
    // must stop the demo, not kill it.
    let mut stop = Stop::new()?;
    let dir = Place::new(keep)?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let sim = Simulator::start_controlled(addr, demo_world::before())
        .await
        .map_err(|e| AppError::Failed(cannot_listen(port, &e)))?;
    let retires_on = Utc::now().date_naive() + chrono::Duration::days(RETIRES_IN_DAYS);
    let config = project(dir.path(), &sim, retires_on)?;
    out.progress(&format!(
        "demo --serve: locking the demo pins against the simulator on {}",
        sim.addr()
    ));
    let locked =
        crate::cmd::lock::lock_pins(&config, &crate::cli::LockArgs::default(), out).await?;
    if locked != Exit::Ok {
        return Err(AppError::Failed(format!(
            "the demo could not lock its own simulator (lock exited {}); nothing to serve",
            locked.code()
        )));
    }
    let shown = std::path::absolute(dir.path()).unwrap_or_else(|_| dir.path().to_owned());
    crate::cmd::emit(&announcement(
        &format!("http://{}", sim.addr()),
        &shown,
        matches!(dir, Place::Kept(_)),
    ));
    let signal = stop.wait().await?;
    out.progress(&format!(
        "demo --serve: {signal}; the simulator stopped{}",
        match dir {
            Place::Temporary(_) => " and its temporary project was removed",
            Place::Kept(_) => "",
        }
    ));
    drop(sim);
    Ok(Exit::Ok)
}

/// Why the simulator could not listen, with what to do about it.
fn cannot_listen(port: u16, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::AddrInUse {
        format!(
            "cannot listen on 127.0.0.1:{port}: the port is taken; choose another --port, or leave it out for one the system picks"
        )
    } else {
        format!("cannot start the simulator on 127.0.0.1:{port}: {e}")
    }
}

/// What the user needs to go on in a second terminal. The `url:`, `project:` and `export`
/// lines come first and keep their shape: scripts and tests read them.
fn announcement(url: &str, dir: &Path, kept: bool) -> String {
    let ids = demo_world::before().routes.into_keys().collect::<Vec<_>>();
    let dir_text = dir.display().to_string();
    let quoted = shell_quoted(&dir_text);
    let lifetime = if kept {
        "kept after the demo stops"
    } else {
        "temporary: removed when the demo stops; --keep DIR keeps it"
    };
    let actions = ACTIONS.join(",");
    format!(
        "modelpin demo --serve: a simulated provider, serving until Ctrl-C or SIGTERM\n\
         url: {url}\n\
         project: {dir_text}\n\
         export {KEY_VARIABLE}={DEMO_KEY}\n\
         \n\
         The project (pins.toml, probes/, modelpin.lock; {lifetime}) is locked against the\n\
         simulator as it started, so `check` is green. In a second terminal:\n\
         \n\
         \x20 cd {quoted} && export {KEY_VARIABLE}={DEMO_KEY}\n\
         \x20 modelpin check                  # exit 0: every pin as locked\n\
         \x20 curl -X POST '{url}{PREFIX}/swap?model={PINNED}'\n\
         \x20 modelpin check                  # exit 1: served_model_mismatch\n\
         \x20 curl -X POST '{url}{PREFIX}/reset'\n\
         \x20 modelpin daemon                 # audits on a schedule, with the status page\n\
         \n\
         Switches: POST {url}{PREFIX}/{{{actions}}}?model=ID; GET {url}{PREFIX} shows the state.\n\
         \x20 swap/mask: another model answers ID, named in the body / masked behind ID (to=MODEL)\n\
         \x20 retire: ID answers \"model not found\"; slow: ms=N (default {DEFAULT_SLOW_MS});\n\
         \x20 fail: status=500|429|503; reset: back as locked. Without model=, slow, fail and\n\
         \x20 reset apply to every ID.\n\
         IDs: {ids}\n",
        ids = ids.join(", "),
    )
}

/// `text` as one shell word: single-quoted unless it is plainly safe.
fn shell_quoted(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// SIGINT and SIGTERM, taken at the start so neither kills the process before `wait`.
struct Stop {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Stop {
    #[cfg(unix)]
    fn new() -> Result<Stop, AppError> {
        use tokio::signal::unix::{SignalKind, signal};
        let take = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| AppError::io(format!("cannot listen for {name}"), e))
        };
        Ok(Stop {
            int: take(SignalKind::interrupt(), "SIGINT")?,
            term: take(SignalKind::terminate(), "SIGTERM")?,
        })
    }

    #[cfg(not(unix))]
    fn new() -> Result<Stop, AppError> {
        Ok(Stop {})
    }

    /// Waits for the first of the two; names it.
    async fn wait(&mut self) -> Result<&'static str, AppError> {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.int.recv() => Ok("interrupted"),
                _ = self.term.recv() => Ok("SIGTERM"),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c()
                .await
                .map(|()| "interrupted")
                .map_err(|e| AppError::io("cannot wait for Ctrl-C", e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_lines_say_url_project_and_key() {
        let text = announcement("http://127.0.0.1:4000", Path::new("/tmp/my demo"), true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "url: http://127.0.0.1:4000");
        assert_eq!(lines[2], "project: /tmp/my demo");
        assert_eq!(lines[3], format!("export {KEY_VARIABLE}={DEMO_KEY}"));
        assert!(text.contains("cd '/tmp/my demo' && export"), "{text}");
        assert!(text.contains("/_sim/swap?model=gemini-2.5-pro"), "{text}");
    }

    #[test]
    fn shell_quoting_keeps_plain_paths_and_quotes_the_rest() {
        assert_eq!(shell_quoted("/tmp/a-b_c.d"), "/tmp/a-b_c.d");
        assert_eq!(shell_quoted("/tmp/it's"), r"'/tmp/it'\''s'");
        assert_eq!(shell_quoted(""), "''");
    }
}
