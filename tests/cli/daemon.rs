//! `modelpin daemon` as a real process: scheduled audits against the simulator, history and
//! metrics that follow a switch of the served model, clean shutdown, crash safety, one daemon
//! per store.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{Sim, Test, one_pin_with};
use crate::world::{model, reroute, single};

const ID: &str = "acme-pro-001";

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A locked project whose pin is audited every second; metrics on their own port.
pub fn project(sim: &Sim, port: u16) -> Test {
    let settings = format!(
        "timeout = \"5s\"\nbudget = \"30s\"\nschedule = \"* * * * * *\"\nmetrics = \"127.0.0.1:{port}\"\nstore = \"store\""
    );
    let test = Test::new()
        .pins(&one_pin_with(
            &settings,
            ProviderKind::Gemini,
            &sim.url(ProviderKind::Gemini),
            ID,
            "samples = 2",
        ))
        .file("probes/arith.toml", crate::harness::ARITH);
    test.run(&["lock"]).code(0);
    test
}

/// A running daemon; killed when dropped. Its stderr goes to a file the test can read.
pub struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    pub fn start(test: &Test) -> Daemon {
        Daemon::start_with(test, &[])
    }

    /// Starts with extra environment variables (a fault point, say).
    pub fn start_with(test: &Test, env: &[(&str, &str)]) -> Daemon {
        Daemon::spawn(test, &["daemon"], env)
    }

    /// Any modelpin command run in the background, killed when dropped.
    pub fn spawn(test: &Test, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        // Each daemon of a test gets its own log, so a restart never overwrites the first's.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = test.path(&format!("daemon-{n}.log"));
        let child = Command::new(assert_cmd::cargo::cargo_bin("modelpin"))
            .current_dir(test.dir.path())
            .args(args)
            .envs(test.envs().iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(env.iter().copied())
            .env_remove("MODELPIN_CONFIG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("daemon starts");
        Daemon { child, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Waits for exit; `None` if it is still running after `limit`.
    pub fn wait(&mut self, limit: Duration) -> Option<i32> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status.code().unwrap_or(-1));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Audit ids the log says were stored.
    pub fn stored_ids(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains("stored audit"))
            .filter_map(|l| l.split("audit_id=").nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// One HTTP/1.1 answer: status, head and body (bytes: it may be gzip or protobuf).
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    /// A header's value, its name matched without regard to case.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request on loopback with `Connection: close`; `headers` are whole header lines
/// without their CRLF. A refusal may close the connection before the whole body is written, so
/// the answer is read whatever writing the body did.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &[u8],
) -> Option<Reply> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let length = if body.is_empty() {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{length}");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some(Reply {
        status,
        head,
        body: raw[split + 4..].to_vec(),
    })
}

/// A plain GET: status, head and body as text.
pub fn get(port: u16, path: &str) -> Option<(u16, String, String)> {
    let reply = request(port, "GET", path, &[], &[])?;
    let body = reply.text();
    Some((reply.status, reply.head, body))
}

pub fn history(test: &Test) -> Vec<serde_json::Value> {
    let run = test.run(&["history", "--format", "json"]);
    serde_json::from_str(&run.stdout).unwrap_or_default()
}

fn served(record: &serde_json::Value) -> Vec<String> {
    record["pin"]["served_models"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn daemon_sees_a_switch_of_the_served_model_in_history_and_metrics() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let port = free_port();
    let test = project(&sim, port);
    let mut daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(20), || !history(&test).is_empty()),
        "an audit is stored: {}",
        daemon.log()
    );
    let first = history(&test);
    assert_eq!(first[0]["pin"]["status"], "ok", "{first:?}");

    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        model("acme-flash-002", 3.3, (0.5, 3.0)),
        Reported::Honest,
    ));
    let switched = until(Duration::from_secs(20), || {
        history(&test)
            .iter()
            .any(|r| served(r).contains(&"acme-flash-002".to_owned()))
    });
    assert!(switched, "history shows the new model: {}", daemon.log());
    let last = history(&test).pop().unwrap();
    assert_eq!(last["pin"]["status"], "drift");

    let (status, head, body) = get(port, "/metrics").expect("metrics answer");
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(
        body.contains("modelpin_served_model_mismatch{pin=\"pin\"} 1"),
        "{body}"
    );
    assert!(body.contains("served=\"acme-flash-002\""), "{body}");
    assert!(body.contains("# TYPE modelpin_audits_total counter"));
    promtool_accepts(&body);

    let (health, _, _) = get(port, "/healthz").expect("healthz answers");
    assert_eq!(health, 200);

    daemon.signal("TERM");
    assert_eq!(
        daemon.wait(Duration::from_secs(12)),
        Some(0),
        "{}",
        daemon.log()
    );
}

/// `promtool check metrics` on a scrape; skipped with a notice outside CI when promtool is absent.
pub fn promtool_accepts(scrape: &str) {
    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool is required in CI (.ci/run installs it)"
        );
        eprintln!("notice: promtool not installed; skipping the promtool check of /metrics");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(scrape.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.trim().is_empty(),
        "promtool: {text}\n{scrape}"
    );
}

#[test]
fn sigterm_during_a_slow_audit_exits_0_within_12_seconds_with_history_intact() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = project(&sim, free_port());
    let mut daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(20), || !daemon.stored_ids().is_empty()),
        "{}",
        daemon.log()
    );
    let mut slow = sim.sim.scenario();
    slow.models.get_mut(ID).unwrap().latency_ms = 60_000;
    sim.set(slow);
    let seen = sim.requests();
    assert!(
        until(Duration::from_secs(10), || sim.requests() > seen),
        "a slow call is in flight"
    );
    let stopping = Instant::now();
    daemon.signal("TERM");
    assert_eq!(
        daemon.wait(Duration::from_secs(12)),
        Some(0),
        "{}",
        daemon.log()
    );
    assert!(stopping.elapsed() < Duration::from_secs(12));
    let stored = daemon.stored_ids();
    let records = history(&test);
    for id in &stored {
        assert!(
            records.iter().any(|r| r["audit_id"] == id.as_str()),
            "audit {id} kept"
        );
    }
    let cut = records.last().unwrap();
    assert_eq!(
        cut["pin"]["status"], "inconclusive",
        "the cancelled audit is recorded as inconclusive"
    );
}

#[test]
fn kill_9_then_restart_keeps_every_audit_reported_as_stored() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = project(&sim, free_port());
    let mut daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(30), || daemon.stored_ids().len() >= 3),
        "{}",
        daemon.log()
    );
    daemon.signal("KILL");
    daemon.wait(Duration::from_secs(5));
    let stored = daemon.stored_ids();
    let records = history(&test);
    for id in &stored {
        assert!(
            records.iter().any(|r| r["audit_id"] == id.as_str()),
            "audit {id} survived kill -9"
        );
    }
    // And the store opens again for a new daemon.
    let mut again = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(20), || !again.stored_ids().is_empty()),
        "{}",
        again.log()
    );
    again.signal("TERM");
    assert_eq!(again.wait(Duration::from_secs(12)), Some(0));
}

#[test]
fn a_second_daemon_on_the_same_store_is_refused() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = project(&sim, free_port());
    let _first = Daemon::start(&test);
    std::thread::sleep(Duration::from_millis(500));
    let run = test.run(&["daemon"]);
    run.code(2);
    assert!(
        run.stderr.contains("in use by a modelpin daemon (pid "),
        "{}",
        run.stderr
    );
}

#[test]
fn sighup_reloads_a_valid_config_and_keeps_the_old_one_when_invalid() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let port = free_port();
    let test = project(&sim, port);
    let good = test.read("pins.toml");
    let daemon = Daemon::start(&test);
    assert!(
        until(Duration::from_secs(20), || !daemon.stored_ids().is_empty()),
        "{}",
        daemon.log()
    );

    let test = test.pins("version = 1\nthis is not toml\n");
    daemon.signal("HUP");
    assert!(
        until(Duration::from_secs(10), || daemon
            .log()
            .contains("keeping the running config")),
        "{}",
        daemon.log()
    );
    let before = daemon.stored_ids().len();
    assert!(
        until(Duration::from_secs(10), || daemon.stored_ids().len()
            > before),
        "still auditing with the old config"
    );

    let second = good.replace("id = \"pin\"", "id = \"second\"");
    let test = test.pins(&format!(
        "{good}\n{}",
        &second[second.find("[[pin]]").unwrap()..]
    ));
    daemon.signal("HUP");
    assert!(
        until(Duration::from_secs(10), || daemon
            .log()
            .contains("pins.toml reloaded")),
        "{}",
        daemon.log()
    );
    let audited_second = until(Duration::from_secs(15), || {
        history(&test).iter().any(|r| r["pin"]["id"] == "second")
    });
    assert!(audited_second, "the new pin is scheduled: {}", daemon.log());
}
