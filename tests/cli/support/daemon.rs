//! `modelpin daemon` as a running process read through its boundary. It listens on a port the
//! system picks (`metrics = "127.0.0.1:0"`); the handle reads back the address from the one line
//! the daemon logs at start, keeps the rest of the log in a file for failure messages, and waits
//! on `/api/history` and `/metrics`, decoded, rather than on log lines or time.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::harness::Test;
use crate::schema::Record;
use crate::support::http::{Reply, fetch, next_link};
use crate::support::metrics::Scrape;
use crate::support::wait::{DEADLINE, poll};

/// The line the daemon logs once it listens, and the field that holds its address.
const STARTED: &str = "daemon started: ";
const URL_FIELD: &str = "url=http://";

/// A running daemon; killed when dropped.
pub struct Daemon {
    child: Child,
    port: u16,
    log: PathBuf,
    token: Option<String>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Daemon {
    /// `modelpin daemon` in the project; returns once it listens.
    pub fn start(test: &Test) -> Daemon {
        Daemon::start_with(test, &[], &[])
    }

    /// With extra arguments after `daemon` (`--pins GLOB`) and environment (a fault point).
    pub fn start_with(test: &Test, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let (mut daemon, started) = Daemon::spawn(test, args, env);
        let Ok(port) = started.recv_timeout(DEADLINE) else {
            let code = daemon.wait_exit(Duration::from_secs(5));
            panic!(
                "the daemon did not say where it listens (exit {code:?}):\n{}",
                daemon.log()
            );
        };
        daemon.port = port;
        daemon
    }

    /// A daemon whose `RUST_LOG` drops its start-up line: its port is read from `/proc`.
    #[cfg(target_os = "linux")]
    pub fn start_unannounced(test: &Test) -> Daemon {
        let (mut daemon, _) = Daemon::spawn(test, &[], &[]);
        let pid = daemon.pid();
        let found = poll(DEADLINE, || crate::support::ports::listening_port(pid));
        daemon.port =
            found.unwrap_or_else(|| panic!("the daemon does not listen:\n{}", daemon.log()));
        daemon
    }

    fn spawn(test: &Test, args: &[&str], env: &[(&str, &str)]) -> (Daemon, mpsc::Receiver<u16>) {
        // Each daemon of a test gets its own log, so a restart never overwrites the first's.
        static STARTED_N: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED_N.fetch_add(1, Ordering::Relaxed);
        let log = test.path(&format!("daemon-{n}.log"));
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("modelpin"))
            .current_dir(test.dir.path())
            .arg("daemon")
            .args(args)
            .envs(test.envs().iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(env.iter().copied())
            .env_remove("MODELPIN_CONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("daemon starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut file = std::fs::File::create(&log).expect("daemon log file");
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr);
            let mut line = Vec::new();
            while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let _ = file.write_all(&line);
                let _ = file.flush();
                if let Some(port) = started_port(&String::from_utf8_lossy(&line)) {
                    let _ = tx.send(port);
                }
                line.clear();
            }
        });
        let daemon = Daemon {
            child,
            port: 0,
            log,
            token: None,
            reader: Some(reader),
        };
        (daemon, rx)
    }

    /// Sends this bearer token with every request the handle makes to `/api` and the page.
    pub fn token(mut self, token: &str) -> Daemon {
        self.token = Some(token.to_owned());
        self
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the daemon logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A GET with the handle's token, if any.
    pub fn get(&self, path: &str) -> Option<Reply> {
        let auth = self
            .token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        fetch(self.port, path, &auth)
    }

    /// Every record `/api/history` lists, following its pages; `None` when it does not answer.
    pub fn try_records(&self) -> Option<Vec<Record>> {
        let mut path = "/api/history".to_owned();
        let mut records = Vec::new();
        loop {
            let reply = self.get(&path).filter(|r| r.status == 200)?;
            let page: Vec<Record> = serde_json::from_slice(&reply.body).unwrap_or_else(|e| {
                panic!(
                    "/api/history is not a list of records: {e}\n{}",
                    reply.text()
                )
            });
            records.extend(page);
            match next_link(&reply.head) {
                Some(next) => path = next,
                None => return Some(records),
            }
        }
    }

    /// Every record `/api/history` lists.
    #[track_caller]
    pub fn records(&self) -> Vec<Record> {
        self.try_records()
            .unwrap_or_else(|| panic!("/api/history does not answer:\n{}", self.log()))
    }

    /// Waits until the records satisfy `ready`; the records then.
    #[track_caller]
    pub fn wait_records(&self, what: &str, ready: impl Fn(&[Record]) -> bool) -> Vec<Record> {
        let found = poll(DEADLINE, || self.try_records().filter(|r| ready(r)));
        found.unwrap_or_else(|| {
            panic!(
                "timed out waiting for {what}; history: {:?}\n{}",
                self.try_records()
                    .unwrap_or_default()
                    .iter()
                    .map(|r| (&r.pin.id, &r.pin.status, &r.source))
                    .collect::<Vec<_>>(),
                self.log()
            )
        })
    }

    /// Waits until `/api/history` holds at least `n` records.
    #[track_caller]
    pub fn wait_stored(&self, n: usize) -> Vec<Record> {
        self.wait_records(&format!("{n} stored audits"), |r| r.len() >= n)
    }

    /// Waits until `n` more audits than now are stored: that many audits were committed, their
    /// alerts evaluated, after this call.
    #[track_caller]
    pub fn wait_more_stored(&self, n: usize) -> Vec<Record> {
        let now = self.records().len();
        self.wait_stored(now + n)
    }

    /// `/metrics`, decoded; `None` when it does not answer.
    pub fn try_scrape(&self) -> Option<Scrape> {
        let reply = fetch(self.port, "/metrics", "").filter(|r| r.status == 200)?;
        Some(Scrape::parse(&reply.text()))
    }

    #[track_caller]
    pub fn scrape(&self) -> Scrape {
        self.try_scrape()
            .unwrap_or_else(|| panic!("/metrics does not answer:\n{}", self.log()))
    }

    /// Waits until the scrape satisfies `ready`; the scrape then.
    #[track_caller]
    pub fn wait_scrape(&self, what: &str, ready: impl Fn(&Scrape) -> bool) -> Scrape {
        let found = poll(DEADLINE, || self.try_scrape().filter(|s| ready(s)));
        found.unwrap_or_else(|| panic!("timed out waiting for {what} in /metrics\n{}", self.log()))
    }

    /// Attempts at `channel`'s notifications that ended with `result` (`delivered`, `retried`, …).
    pub fn notifications(&self, channel: &str, result: &str) -> u64 {
        self.try_scrape().map_or(0, |s| {
            s.count(
                "modelpin_notifications_total",
                &[("channel", channel), ("result", result)],
            )
        })
    }

    /// Waits until at least `n` attempts at `channel` ended with `result`.
    #[track_caller]
    pub fn wait_notifications(&self, channel: &str, result: &str, n: u64) {
        self.wait_scrape(&format!("{n} {result} notifications on {channel}"), |s| {
            s.count(
                "modelpin_notifications_total",
                &[("channel", channel), ("result", result)],
            ) >= n
        });
    }

    /// `modelpin history --format json` while this daemon runs: the CLI asks the daemon at
    /// `settings.metrics`, so it reads a copy of pins.toml naming the port the daemon got.
    #[track_caller]
    pub fn history(&self, test: &Test) -> Vec<Record> {
        decode_history(&self.history_run(test, &["--format", "json"]))
    }

    /// `modelpin history ARGS` run as [`Daemon::history`] runs it.
    pub fn history_run(&self, test: &Test, args: &[&str]) -> crate::harness::Run {
        let pins = test.read("pins.toml");
        let here = pins.replace(
            "metrics = \"127.0.0.1:0\"",
            &format!("metrics = \"127.0.0.1:{}\"", self.port),
        );
        assert_ne!(here, pins, "pins.toml has metrics = \"127.0.0.1:0\"");
        std::fs::write(test.path("pins.running.toml"), here).expect("write pins.running.toml");
        let mut all = vec!["--config", "pins.running.toml", "history"];
        all.extend_from_slice(args);
        test.run(&all)
    }

    pub fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Waits for exit; `None` if it is still running after `limit`. Killed by a signal is -1.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let exited = poll(limit, || self.child.try_wait().unwrap());
        exited.map(|status| status.code().unwrap_or(-1))
    }

    /// SIGKILL, then waits for the process to be gone.
    pub fn kill(&mut self) {
        self.signal("KILL");
        assert_eq!(self.wait_exit(DEADLINE), Some(-1), "killed");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The port in the daemon's start-up line, `… url=http://127.0.0.1:PORT/ …`.
fn started_port(line: &str) -> Option<u16> {
    if !line.contains(STARTED) {
        return None;
    }
    let rest = &line[line.find(URL_FIELD)? + URL_FIELD.len()..];
    let addr = rest.split('/').next()?;
    addr.rsplit_once(':')?.1.parse().ok()
}

/// `modelpin history --format json` with no daemon running: the CLI opens the store itself.
#[track_caller]
pub fn history(test: &Test) -> Vec<Record> {
    decode_history(&test.run(&["history", "--format", "json"]))
}

#[track_caller]
fn decode_history(run: &crate::harness::Run) -> Vec<Record> {
    run.code(0);
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("history is not a list of records: {e}\n{}", run.stdout))
}

/// A modelpin command left running in the background (`check --notify` holding the store);
/// killed when dropped.
pub struct Background(Child);

impl Background {
    pub fn start(test: &Test, args: &[&str]) -> Background {
        let child = Command::new(assert_cmd::cargo::cargo_bin("modelpin"))
            .current_dir(test.dir.path())
            .args(args)
            .envs(test.envs().iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env_remove("MODELPIN_CONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("modelpin starts");
        Background(child)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
