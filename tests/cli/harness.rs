//! A small fluent harness: a temporary project (pins.toml, probes, lock), an optional simulated
//! provider on loopback, and one run of the real `modelpin` binary.

use std::path::PathBuf;
use std::process::Output;

use assert_cmd::Command;
use modelpin::provider::ProviderKind;
use modelpin::sim::Simulator;
use modelpin::sim::scenario::Scenario;

pub const KEY_VAR: &str = "MODELPIN_TEST_KEY";
pub const KEY: &str = "test-key-0123";

/// A simulator with the runtime that drives it; both live as long as this value.
pub struct Sim {
    pub sim: Simulator,
    _runtime: tokio::runtime::Runtime,
}

impl Sim {
    pub fn start(mut scenario: Scenario) -> Sim {
        scenario.api_key.get_or_insert_with(|| KEY.to_owned());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("test runtime");
        let sim = runtime
            .block_on(Simulator::start(scenario))
            .expect("simulator starts");
        Sim {
            sim,
            _runtime: runtime,
        }
    }

    pub fn url(&self, kind: ProviderKind) -> String {
        self.sim.base_url(kind)
    }

    pub fn set(&self, scenario: Scenario) {
        let mut scenario = scenario;
        scenario.api_key.get_or_insert_with(|| KEY.to_owned());
        self.sim.set_scenario(scenario);
    }

    pub fn requests(&self) -> usize {
        self.sim.requests().len()
    }
}

pub struct Test {
    pub dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Test {
    pub fn new() -> Test {
        Test {
            dir: tempfile::tempdir().expect("temp dir"),
            env: vec![(KEY_VAR.to_owned(), KEY.to_owned())],
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn file(self, name: &str, text: &str) -> Test {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
        self
    }

    pub fn pins(self, text: &str) -> Test {
        self.file("pins.toml", text)
    }

    /// The standard probe pair most tests use.
    pub fn probes(self) -> Test {
        self.file("probes/arith.toml", ARITH)
            .file("probes/capital.toml", CAPITAL)
    }

    /// After a successful `modelpin lock`.
    #[track_caller]
    pub fn locked(self) -> Test {
        self.run(&["lock"]).code(0);
        self
    }

    pub fn env(mut self, name: &str, value: &str) -> Test {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[])
    }

    /// `run` with `more` environment for this run alone (a fault point).
    pub fn run_with(&self, args: &[&str], more: &[(&str, &str)]) -> Run {
        let mut cmd = Command::cargo_bin("modelpin").expect("binary built");
        cmd.current_dir(self.dir.path())
            .args(args)
            .env_remove("MODELPIN_CONFIG")
            .env_remove("NO_COLOR");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for (k, v) in more {
            cmd.env(k, v);
        }
        let Output {
            status,
            stdout,
            stderr,
        } = cmd.output().expect("binary runs");
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// The environment every run of this project gets.
    pub fn envs(&self) -> &[(String, String)] {
        &self.env
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).expect("file exists")
    }
}

impl Run {
    #[track_caller]
    pub fn code(&self, want: i32) -> &Run {
        assert_eq!(
            self.code, want,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn json(&self) -> crate::schema::Report {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not a v1 report: {e}\n{}", self.stdout))
    }
}

pub const ARITH: &str = r#"id = "arith"
prompt = "What is 17 * 23? Reply with the number only."
max_tokens = 8
temperature = 1.0
compare = "choice"

[expect]
equals = "391"
"#;

pub const CAPITAL: &str = r#"id = "capital"
prompt = "Name one of the three largest cities of Australia. Reply with the city name only."
max_tokens = 8
temperature = 1.0
compare = "choice"
"#;

/// Settings most tests use: short deadlines so a broken case fails fast.
pub const SETTINGS: &str = "timeout = \"3s\"\nbudget = \"20s\"";

/// The same with its own `[settings]` body; `extra` may set `samples` (default 3) and
/// `first_tokens` (default off: these tests count probe calls; the tier has its own tests).
pub fn one_pin_with(
    settings: &str,
    kind: ProviderKind,
    base_url: &str,
    model: &str,
    extra: &str,
) -> String {
    let samples = if extra.contains("samples") {
        ""
    } else {
        "samples = 3"
    };
    let tier = if extra.contains("first_tokens") {
        ""
    } else {
        "first_tokens = false"
    };
    format!(
        r#"version = 1

[settings]
{settings}

[providers.p]
kind = "{kind}"
base_url = "{base_url}"
api_key_env = "{KEY_VAR}"
{api_version}
[[pin]]
id = "pin"
provider = "p"
model = "{model}"
probes = ["probes/*.toml"]
{samples}
{tier}
{extra}
"#,
        api_version = if kind == ProviderKind::Azure {
            "api_version = \"2024-10-21\"\n"
        } else {
            ""
        },
    )
}

/// Asserts `document` is valid under the JSON schema at `schema` with Python's `jsonschema`
/// (`validator` names the draft class, e.g. `Draft7Validator`); `what` names the document in
/// messages. Skipped with a notice outside CI when `jsonschema` is missing; `.ci/run` installs it.
pub fn assert_valid_under_schema(schema: &str, validator: &str, document: &str, what: &str) {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let script = format!(
        r"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.{validator}.check_schema(schema)
errors = sorted(jsonschema.{validator}(schema).iter_errors(json.load(sys.stdin)), key=str)
for e in errors[:5]:
    print(list(e.absolute_path), e.message[:300], file=sys.stderr)
sys.exit(1 if errors else 0)
"
    );
    let has_jsonschema = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_jsonschema {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with jsonschema is required in CI (.ci/run installs it)"
        );
        eprintln!("notice: python3 jsonschema not installed; skipping the {what} schema check");
        return;
    }
    let mut child = Command::new("python3")
        .args(["-c", &script, schema])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(document.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what} schema violations: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
