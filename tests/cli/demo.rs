//! `modelpin demo` as a newcomer runs it: `-v` shows every evidence line as the demo's own hint
//! says, `--keep DIR` leaves the project behind to look at, and it ends with the next step.

use crate::harness::Test;
use crate::support::http;
use crate::support::wait::{self, DEADLINE};

#[test]
fn demo_v_shows_every_evidence_line_and_the_default_view_says_how_to_see_them() {
    let plain = Test::new().run(&["demo"]);
    plain.code(0);
    assert!(
        plain.stdout.contains("(`-v` shows all;"),
        "{}",
        plain.stdout
    );
    let verbose = Test::new().run(&["demo", "-v"]);
    verbose.code(0);
    assert!(
        !verbose.stdout.contains("`-v` shows all"),
        "nothing left to show with -v:\n{}",
        verbose.stdout
    );
    assert!(
        verbose.stdout.lines().count() > plain.stdout.lines().count() + 100,
        "-v prints the whole evidence"
    );
    for out in [&plain.stdout, &verbose.stdout] {
        let last = out.trim_end().lines().last().unwrap_or_default();
        assert!(
            last.starts_with("next: `modelpin init`"),
            "it ends with the next step: {last}"
        );
    }
    assert!(
        plain
            .stdout
            .contains("`modelpin demo --keep DIR` keeps them")
    );
}

#[test]
fn demo_keep_leaves_the_project_and_refuses_to_overwrite_one() {
    let test = Test::new();
    let run = test.run(&["demo", "--keep", "tour"]);
    run.code(0);
    for file in [
        "tour/pins.toml",
        "tour/modelpin.lock",
        "tour/probes/arith.toml",
    ] {
        assert!(test.path(file).is_file(), "{file} kept:\n{}", run.stdout);
    }
    assert!(
        run.stdout
            .contains("Its files are in tour: pins.toml, probes/ and modelpin.lock"),
        "{}",
        run.stdout
    );
    let lock = test.read("tour/modelpin.lock");
    let again = test.run(&["demo", "--keep", "tour"]);
    again.code(2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(test.read("tour/modelpin.lock"), lock, "left as it was");
}

/// `modelpin demo --serve --keep DIR` as a running process: the `url:` and `export` lines its
/// stdout starts with, read by a thread so nothing waits on time; killed when dropped.
struct Served {
    child: std::process::Child,
    port: u16,
    key: (String, String),
}

impl Served {
    fn start(test: &Test, dir: &str) -> Served {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("modelpin"))
            .current_dir(test.dir.path())
            .args(["demo", "--serve", "--keep", dir])
            .env_remove("MODELPIN_CONFIG")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("demo --serve starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines, announced) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        let mut port = None;
        let mut key = None;
        while port.is_none() || key.is_none() {
            let Ok(line) = announced.recv_timeout(DEADLINE) else {
                let _ = child.kill();
                panic!("demo --serve did not print its url and export lines");
            };
            if let Some(url) = line.strip_prefix("url: http://127.0.0.1:") {
                port = Some(url.parse::<u16>().expect("a port after the url"));
            }
            if let Some(pair) = line.strip_prefix("export ") {
                let (name, value) = pair.split_once('=').expect("NAME=value");
                key = Some((name.to_owned(), value.to_owned()));
            }
        }
        Served {
            child,
            port: port.unwrap_or_default(),
            key: key.unwrap_or_default(),
        }
    }

    /// `modelpin check --format json` in the served project, as the printed steps say.
    fn check(&self, test: &Test, dir: &str) -> crate::harness::Run {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("modelpin"))
            .current_dir(test.path(dir))
            .args(["check", "--format", "json"])
            .env_remove("MODELPIN_CONFIG")
            .env(&self.key.0, &self.key.1)
            .output()
            .expect("check runs");
        crate::harness::Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `POST /_sim/{switch}`: status and body.
    fn switch(&self, switch: &str) -> (u16, String) {
        let reply = http::post(self.port, &format!("/_sim/{switch}"), &[], &[])
            .expect("the simulator answers");
        (reply.status, reply.text())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The codes of one pin's findings in a JSON report.
fn codes(run: &crate::harness::Run, pin: &str) -> Vec<String> {
    let report = run.json();
    let pin = report
        .pins
        .iter()
        .find(|p| p.id == pin)
        .unwrap_or_else(|| panic!("pin {pin} in the report:\n{}", run.stdout));
    pin.findings.iter().map(|f| f.code.clone()).collect()
}

#[test]
fn demo_serve_keeps_the_simulator_up_and_its_switches_drive_check() {
    let test = Test::new();
    let mut served = Served::start(&test, "tour");
    assert_eq!(served.key.0, "MODELPIN_DEMO_KEY");
    let (status, state) = http::get(served.port, "/_sim")
        .map(|(s, _, body)| (s, body))
        .expect("GET /_sim answers");
    assert_eq!(status, 200, "{state}");
    assert!(state.contains("\"as_started\""), "{state}");

    served.check(&test, "tour").code(0);

    let (status, body) = served.switch("swap?model=gemini-2.5-pro");
    assert_eq!(status, 200, "{body}");
    let swapped = served.check(&test, "tour");
    swapped.code(1);
    assert!(
        codes(&swapped, "gemini").contains(&"served_model_mismatch".to_owned()),
        "{}",
        swapped.stdout
    );

    assert_eq!(served.switch("reset").0, 200);
    let (status, body) = served.switch("retire?model=gemini-2.5-pro");
    assert_eq!(status, 200, "{body}");
    let retired = served.check(&test, "tour");
    retired.code(1);
    assert!(
        codes(&retired, "gemini").contains(&"model_not_found".to_owned()),
        "{}",
        retired.stdout
    );

    assert_eq!(served.switch("reset").0, 200);
    let (status, body) = served.switch("fail?model=gemini-2.5-pro&status=500");
    assert_eq!(status, 200, "{body}");
    served.check(&test, "tour").code(3);

    let (status, body) = served.switch("reset");
    assert_eq!(status, 200, "{body}");
    served.check(&test, "tour").code(0);

    let (status, body) = served.switch("swap?model=gpt-nope");
    assert_eq!(status, 400);
    assert!(body.contains("unknown model `gpt-nope`"), "{body}");
    assert!(
        body.contains("gemini-2.5-pro"),
        "names the IDs there are: {body}"
    );
    let (status, _) = served.switch("explode?model=gemini-2.5-pro");
    assert_eq!(status, 404);

    let sent = std::process::Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let stopped = wait::poll(DEADLINE, || served.child.try_wait().ok().flatten())
        .expect("demo --serve stops on SIGTERM");
    assert_eq!(stopped.code(), Some(0), "SIGTERM ends the demo with exit 0");
    assert!(test.path("tour/modelpin.lock").is_file(), "--keep keeps it");
}

#[test]
fn demo_help_describes_serve_and_port_needs_it() {
    let test = Test::new();
    let help = test.run(&["demo", "--help"]);
    help.code(0);
    for needle in [
        "--serve",
        "--port",
        "/_sim/ACTION?model=ID",
        "retire",
        "SIGTERM",
    ] {
        assert!(
            help.stdout.contains(needle),
            "help lacks {needle}:\n{}",
            help.stdout
        );
    }
    test.run(&["demo", "--port", "0"]).code(2);
}
