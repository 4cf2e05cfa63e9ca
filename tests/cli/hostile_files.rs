//! Files a checkout can plant where the config names a file (a probe, a local deprecation feed,
//! the lock): a symlink out of the project or into `/proc`, a FIFO, `/dev/zero`, a file too
//! large, one that is not UTF-8, one that is not the expected format. CI runs `modelpin check`
//! with the provider key and its own token in the environment; whatever was planted, the run
//! ends promptly with a refusal that names the file, and nothing it prints holds a secret or
//! more than a bounded excerpt of any file.

#![cfg(unix)]

use std::io::Write as _;
use std::os::unix::fs::symlink;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use modelpin::provider::ProviderKind;

use crate::harness::{ARITH, KEY_VAR, SETTINGS, Sim, Test, one_pin_with};
use crate::world::{model, single};

const ID: &str = "acme-pro-001";
/// The provider key CI holds (the simulator's), and the token GitHub puts in every job's
/// environment.
const PROVIDER_KEY: &str = crate::harness::KEY;
const CI_TOKEN: &str = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
/// The longest line any run may print: a snippet's excerpt plus its path and gutter.
const MAX_LINE: usize = 400;

/// Where the config names the planted file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Probe,
    Feed,
    Lock,
}

impl Role {
    fn path(self) -> &'static str {
        match self {
            Role::Probe => "probes/evil.toml",
            Role::Feed => "feeds/evil.json",
            Role::Lock => "modelpin.lock",
        }
    }

    /// The bound the file is read under, in bytes.
    fn cap(self) -> u64 {
        match self {
            Role::Probe => 1024 * 1024,
            Role::Feed => 16 * 1024 * 1024,
            Role::Lock => 128 * 1024 * 1024,
        }
    }
}

/// What is planted at the role's path.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A symlink to a dotfile outside the project that holds both secrets.
    OutsideSymlink,
    /// A symlink to `/proc/self/environ`: the reading process's own environment.
    Environ,
    DevZero,
    Fifo,
    /// One byte over the bound (sparse: no disk spent).
    Oversized,
    /// Bytes that are not UTF-8, with the secrets after them.
    NotUtf8,
    /// A regular file in the project that is no TOML or JSON, with the secrets on a long line.
    WrongFormat,
}

const KINDS: [Kind; 7] = [
    Kind::OutsideSymlink,
    Kind::Environ,
    Kind::DevZero,
    Kind::Fifo,
    Kind::Oversized,
    Kind::NotUtf8,
    Kind::WrongFormat,
];

fn plant(test: &Test, outside: &std::path::Path, role: Role, kind: Kind) {
    let at = test.path(role.path());
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let secrets = format!("export {KEY_VAR}={PROVIDER_KEY}\nexport GITHUB_TOKEN={CI_TOKEN}\n");
    match kind {
        Kind::OutsideSymlink => {
            let dotfile = outside.join(".bashrc");
            std::fs::write(&dotfile, &secrets).unwrap();
            symlink(&dotfile, &at).unwrap();
        }
        Kind::Environ => symlink("/proc/self/environ", &at).unwrap(),
        Kind::DevZero => symlink("/dev/zero", &at).unwrap(),
        Kind::Fifo => {
            let made = Command::new("mkfifo").arg(&at).status().unwrap();
            assert!(made.success(), "mkfifo");
        }
        Kind::Oversized => {
            let file = std::fs::File::create(&at).unwrap();
            file.set_len(role.cap() + 1).unwrap();
        }
        Kind::NotUtf8 => {
            let mut bytes = vec![0xff, 0xfe, b'\n'];
            bytes.extend_from_slice(secrets.as_bytes());
            std::fs::write(&at, bytes).unwrap();
        }
        Kind::WrongFormat => {
            let long = format!("{} {PROVIDER_KEY} {CI_TOKEN}\n", "x".repeat(5000));
            std::fs::write(&at, format!("token: {PROVIDER_KEY}\n{long}{secrets}")).unwrap();
        }
    }
}

/// What the refusal says, so a user knows what to fix.
fn expected(role: Role, kind: Kind) -> &'static str {
    match (kind, role) {
        (Kind::OutsideSymlink, _) => "leads out of the project directory",
        (Kind::Environ | Kind::DevZero, _) => "kernel file",
        (Kind::Fifo, _) => "it is a FIFO, not a regular file",
        (Kind::Oversized, Role::Lock) => "more than any lock modelpin writes",
        (Kind::Oversized, _) => "bytes, larger than",
        (Kind::NotUtf8, Role::Probe) => "is not UTF-8 text",
        (Kind::NotUtf8, Role::Feed) => "the feed is not UTF-8 text",
        (Kind::WrongFormat, Role::Probe) => "invalid TOML",
        (Kind::WrongFormat, Role::Feed) => "not valid TOML",
        (Kind::NotUtf8 | Kind::WrongFormat, Role::Lock) => "is not a valid modelpin.lock",
    }
}

struct Outcome {
    code: i32,
    output: String,
}

/// `modelpin check` in `test`, ended by force (and failed) if it runs past a minute.
fn check_within_a_minute(test: &Test) -> Outcome {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("modelpin"));
    cmd.current_dir(test.dir.path())
        .arg("check")
        .env_remove("MODELPIN_CONFIG")
        .env("GITHUB_TOKEN", CI_TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in test.envs() {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(Duration::from_secs(60)) else {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        panic!("`modelpin check` still running after 60 s");
    };
    let out = out.unwrap();
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    Outcome {
        code: out.status.code().unwrap_or(-1),
        output,
    }
}

fn project(sim: &Sim, role: Role) -> Test {
    match role {
        Role::Feed => with_settings(
            sim,
            &format!("{SETTINGS}\ndeprecation_feeds = [\"feeds/evil.json\"]"),
        ),
        _ => with_settings(sim, SETTINGS),
    }
}

/// One pin of `ID` on `sim`, one sample, `settings` in `[settings]`, the arithmetic probe.
fn with_settings(sim: &Sim, settings: &str) -> Test {
    let pins = one_pin_with(
        settings,
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "samples = 1",
    );
    Test::new().pins(&pins).file("probes/arith.toml", ARITH)
}

#[test]
fn no_planted_file_leaks_a_secret_hangs_or_floods_the_output() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let outside = tempfile::tempdir().unwrap();
    for role in [Role::Probe, Role::Feed, Role::Lock] {
        for kind in KINDS {
            let test = project(&sim, role);
            plant(&test, outside.path(), role, kind);
            let calls = sim.requests();
            let run = check_within_a_minute(&test);
            let case = format!("{role:?} {kind:?} (exit {}):\n{}", run.code, run.output);
            for secret in [PROVIDER_KEY, CI_TOKEN, "key-0123", "AbCdEfGhIjKl"] {
                assert!(!run.output.contains(secret), "{secret} shown: {case}");
            }
            let longest = run.output.lines().map(|l| l.chars().count()).max();
            assert!(
                longest.unwrap_or(0) <= MAX_LINE,
                "a line of {longest:?}: {case}"
            );
            assert!(run.output.contains(role.path()), "{case}");
            let says = expected(role, kind);
            assert!(run.output.contains(says), "wants {says:?}: {case}");
            match role {
                // A probe or lock that cannot be read stops the run before any call.
                Role::Probe | Role::Lock => {
                    assert_eq!(run.code, 2, "{case}");
                    assert_eq!(sim.requests(), calls, "{case}");
                }
                // A feed that cannot be read is a warning: the audit goes on without it.
                Role::Feed => assert!(run.output.contains("warning"), "{case}"),
            }
            if role == Role::Lock {
                assert!(run.output.contains("modelpin.lock"), "{case}");
            }
        }
    }
}

#[test]
fn a_symlink_that_stays_inside_the_project_is_read() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = project(&sim, Role::Probe).file("shared/arith.toml", ARITH);
    std::fs::remove_file(test.path("probes/arith.toml")).unwrap();
    symlink(
        test.path("shared/arith.toml"),
        test.path("probes/arith.toml"),
    )
    .unwrap();
    test.run(&["lock"]).code(0);
    let run = test.run(&["check"]);
    run.code(0);
}

#[test]
fn a_probe_file_with_a_secret_on_a_bad_line_is_quoted_masked() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = project(&sim, Role::Probe);
    let mut file = std::fs::File::create(test.path("probes/notes.toml")).unwrap();
    writeln!(file, "id = \"notes\"\nprompt = {PROVIDER_KEY}").unwrap();
    let run = check_within_a_minute(&test);
    assert_eq!(run.code, 2, "{}", run.output);
    assert!(
        run.output.contains("probes/notes.toml:2:"),
        "{}",
        run.output
    );
    assert!(run.output.contains("prompt = [redacted]"), "{}", run.output);
    assert!(!run.output.contains(PROVIDER_KEY), "{}", run.output);
}

/// A FIFO appears in the probe glob, then SIGHUP: the reload refuses it, audits go on, and
/// SIGTERM still stops the daemon in time.
#[test]
fn a_fifo_in_the_probe_glob_at_sighup_blocks_neither_the_loop_nor_its_signals() {
    use crate::support::daemon::Daemon;
    use crate::support::drift::{clean_sim, project};
    let sim = clean_sim();
    let test = project(&sim, 1, vec![]);
    let mut daemon = Daemon::start(&test);
    daemon.wait_stored(1);
    let made = Command::new("mkfifo")
        .arg(test.path("probes/fifo.toml"))
        .status()
        .unwrap();
    assert!(made.success());
    daemon.signal("HUP");
    // Every-second audits keep being stored: the loop was not held by the FIFO.
    daemon.wait_more_stored(2);
    daemon.signal("TERM");
    assert_eq!(
        daemon.wait_exit(Duration::from_secs(12)),
        Some(0),
        "{}",
        daemon.log()
    );
}

/// A lock that cannot be written (`/proc` takes no new file, whoever runs it) is found out before
/// a single provider call is spent.
#[cfg(target_os = "linux")]
#[test]
fn a_lock_that_cannot_be_written_costs_no_call() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = with_settings(
        &sim,
        &format!("{SETTINGS}\nlockfile = \"/proc/modelpin.lock\""),
    );
    let run = test.run(&["lock"]);
    run.code(2);
    assert!(
        run.stderr.contains("cannot write /proc/modelpin.lock"),
        "{}",
        run.stderr
    );
    assert_eq!(sim.requests(), 0, "{}", run.stderr);
}
