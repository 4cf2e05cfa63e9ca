//! A store damaged while the daemon was stopped, as an operator meets it: a few audits recorded
//! by a real daemon, the daemon stopped, then sled's files damaged on disk (`db` is sled's log,
//! `conf` its settings, `snap.*` its snapshots, `blobs/` large values; `header` and `holder` are
//! modelpin's). Each damage is refused by `daemon` and `history` with the store, the cause and
//! the way out, never a panic, the files left byte for byte; `--reset-store` moves them aside
//! unchanged and a new store starts.

use std::collections::BTreeMap;
use std::path::Path;

use crate::harness::{Sim, Test};
use crate::support::daemon::Daemon;
use crate::support::drift::{clean_sim, project};
use crate::support::wait::DEADLINE;

/// Every file under `dir`, by path relative to it, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// A project whose daemon stored a few audits and was stopped cleanly; the audit ids stored.
fn recorded() -> (Sim, Test, Vec<String>) {
    let sim = clean_sim();
    let test = project(&sim, 2, vec![]);
    let mut daemon = Daemon::start(&test);
    daemon.wait_stored(4);
    daemon.signal("TERM");
    assert_eq!(daemon.wait_exit(DEADLINE), Some(0), "{}", daemon.log());
    let ids = crate::support::daemon::history(&test)
        .into_iter()
        .map(|r| r.audit_id)
        .collect::<Vec<_>>();
    assert!(ids.len() >= 4, "{ids:?}");
    (sim, test, ids)
}

/// Bytes from a seeded xorshift generator: the same noise on every run.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

/// Damages the store, then: refused by `daemon` and `history` with `cause`, untouched; then
/// `daemon --reset-store` keeps it aside byte for byte and starts on a new store.
fn refused_then_reset(damage: impl FnOnce(&Path), cause: &str) {
    let (_sim, test, ids) = recorded();
    let store = test.path("store");
    damage(&store);
    let before = files(&store);
    for command in ["daemon", "history"] {
        let run = test.run(&[command]);
        let what = format!("`{command}`: {}", run.stderr);
        assert_eq!(run.code, 2, "{what}");
        assert!(!run.stderr.contains("panicked at"), "{what}");
        assert!(run.stderr.contains("error: the store at store "), "{what}");
        assert!(run.stderr.contains(cause), "{what}");
        assert!(run.stderr.contains("it is left as it is"), "{what}");
        assert!(
            run.stderr
                .contains("`modelpin daemon --reset-store` to move it aside"),
            "{what}"
        );
        assert_eq!(files(&store), before, "{command} left the store as it was");
    }
    let daemon = Daemon::start_with(&test, &["--reset-store"], &[]);
    let fresh = daemon.wait_stored(1);
    assert!(
        fresh.iter().all(|r| !ids.contains(&r.audit_id)),
        "the new store starts empty: {fresh:?}"
    );
    let aside: Vec<_> = std::fs::read_dir(test.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("store.damaged-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        files(&test.path(&aside[0])),
        before,
        "kept aside byte for byte"
    );
    let log = daemon.log();
    assert!(log.contains("ERROR") && log.contains(&aside[0]), "{log}");
}

#[test]
fn a_truncated_store_is_refused_untouched_and_reset_keeps_it_aside() {
    refused_then_reset(
        |store| {
            let db = std::fs::OpenOptions::new()
                .write(true)
                .open(store.join("db"))
                .unwrap();
            db.set_len(1000).unwrap();
        },
        "is damaged: its file `db` went from ",
    );
}

#[test]
fn a_store_with_noise_in_its_middle_is_refused_untouched_and_reset_keeps_it_aside() {
    refused_then_reset(
        |store| {
            let db = store.join("db");
            let mut bytes = std::fs::read(&db).unwrap();
            let at = (bytes.len() / 2).saturating_sub(2048);
            let end = (at + 4096).min(bytes.len());
            bytes.splice(at..end, noise(0x5eed, end - at));
            std::fs::write(&db, bytes).unwrap();
        },
        "is damaged: the bytes of its file `db` changed since it was closed at ",
    );
}

#[test]
fn a_store_without_its_db_file_is_refused_untouched_and_reset_keeps_it_aside() {
    refused_then_reset(
        |store| std::fs::remove_file(store.join("db")).unwrap(),
        "is damaged: its database file `db` is missing",
    );
}

#[test]
fn a_store_from_a_newer_modelpin_is_refused_untouched_and_reset_keeps_it_aside() {
    refused_then_reset(
        |store| {
            std::fs::write(
                store.join("header"),
                br#"{"format": 99, "written_by": "a later modelpin"}"#,
            )
            .unwrap();
        },
        "was written by a newer modelpin (header format 99;",
    );
}

/// `store copy` into a directory killed before it finished leaves no store at DST: nothing for
/// `history` or a daemon to open as if whole; the next copy clears what was left and succeeds.
#[test]
fn a_copy_cut_short_leaves_no_store_at_its_destination() {
    let (_sim, test, ids) = recorded();
    let cut = test.run_with(
        &["store", "copy", "store", "copied"],
        &[("MODELPIN_FAULT", "copy-before-rename")],
    );
    assert_ne!(cut.code, 0, "{}", cut.stderr);
    assert!(!test.path("copied").exists(), "a partial store at DST");
    assert!(test.path("copied.partial").exists());
    let whole = test.run(&["store", "copy", "store", "copied"]);
    whole.code(0);
    assert!(!test.path("copied.partial").exists());
    let pins = test
        .read("pins.toml")
        .replace("store = \"store\"", "store = \"copied\"");
    std::fs::write(test.path("copied.toml"), pins).unwrap();
    let history = test.run(&["history", "--config", "copied.toml", "--format", "json"]);
    history.code(0);
    for id in &ids {
        assert!(history.stdout.contains(id.as_str()), "{id} missing");
    }
}

/// `history` on a store its user may only read: the records come back, nothing is written. Run
/// as `nobody` when the tests run as root (root writes anywhere), else on a directory made
/// read-only.
#[cfg(target_os = "linux")]
#[test]
fn history_reads_a_store_its_user_cannot_write() {
    use std::os::unix::fs::PermissionsExt as _;
    let (_sim, test, ids) = recorded();
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    let store = test.path("store");
    let before = files(&store);
    let bin = assert_cmd::cargo::cargo_bin("modelpin");
    // The build may sit where `nobody` cannot reach (under /root): it runs a copy in /tmp.
    let reachable = tempfile::tempdir().unwrap();
    let mut cmd = if root {
        let copy = reachable.path().join("modelpin");
        std::fs::copy(&bin, &copy).unwrap();
        for dir in [reachable.path(), test.dir.path()] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let mut cmd = std::process::Command::new("runuser");
        cmd.args(["-u", "nobody", "--"]).arg(&copy);
        cmd
    } else {
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
        std::process::Command::new(&bin)
    };
    let out = cmd
        .current_dir(test.dir.path())
        .args(["history", "--format", "json"])
        .env_remove("MODELPIN_CONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for id in &ids {
        assert!(stdout.contains(id.as_str()), "{id} missing: {stdout}");
    }
    assert_eq!(files(&store), before, "the store changed");
}
