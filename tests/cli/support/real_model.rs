//! Real language models behind llama-cpp-python's own OpenAI-compatible server
//! (`python -m llama_cpp.server`, unmodified, from the virtualenv .ci/real-model.sh builds),
//! with tests/realmodel/stack.py's proxy in front on a loopback port the system picks. It answers
//! as one pinned model ID whatever variant serves, and a test switches the variant (`base`,
//! `family`, `requant`, `temperature`, `system`, `jitter`; see tests/realmodel/README.md). The
//! replies are the real server's bytes: the proxy only routes and rewrites requests.
//! `MODELPIN_LLAMA_PYTHON` names that virtualenv's python and `MODELPIN_MODELS` the directory of
//! GGUF files; either missing fails under CI and skips elsewhere.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::http;

/// The model ID every answer reports.
pub const MODEL_ID: &str = "smollm2-135m-instruct";

/// What stack.py prints on stdout once every server answers, before the proxy's address.
const LISTENING: &str = "listening on ";

/// Four server processes import their web stack and load a small model each: about 15 s on an
/// idle two-core machine, longer beside a test suite.
const START: Duration = Duration::from_secs(240);

/// The virtualenv's python and the models directory, or `None` (after a notice) when they are
/// not installed outside CI.
pub fn program() -> Option<(PathBuf, PathBuf)> {
    let python = std::env::var_os("MODELPIN_LLAMA_PYTHON").map(PathBuf::from);
    let models = std::env::var_os("MODELPIN_MODELS").map(PathBuf::from);
    if let (Some(python), Some(models)) = (python, models) {
        let found = Command::new(&python)
            .args(["-c", "import llama_cpp.server.app"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if found && models.is_dir() {
            return Some((python, models));
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the real model server is required in CI (.ci/real-model.sh sets MODELPIN_LLAMA_PYTHON \
         and MODELPIN_MODELS)"
    );
    eprintln!(
        "notice: MODELPIN_LLAMA_PYTHON / MODELPIN_MODELS are not set (source .ci/real-model.sh); \
         skipping this test"
    );
    None
}

/// One running server, stopped when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// Starts the servers and the proxy and waits until it says where it listens; `None` when
    /// they are not installed (outside CI).
    pub fn start() -> Option<Server> {
        let (python, models) = program()?;
        Some(Server::spawn(&python, &models))
    }

    fn spawn(python: &Path, models: &Path) -> Server {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/realmodel/stack.py");
        let mut child = Command::new(python)
            .arg(&script)
            .arg("--models")
            .arg(models)
            .args(["--model-id", MODEL_ID, "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("stack.py starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout);
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Some(port) = listening_port(&line) {
                    let _ = tx.send(port);
                }
                line.clear();
            }
        });
        let Ok(port) = rx.recv_timeout(START) else {
            let _ = child.kill();
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            let _ = child.wait();
            panic!("stack.py did not say where it listens within {START:?}:\n{stderr}");
        };
        // Its stderr is drained so a full pipe never stalls it.
        if let Some(mut pipe) = child.stderr.take() {
            std::thread::spawn(move || std::io::copy(&mut pipe, &mut std::io::sink()));
        }
        Server { child, port }
    }

    /// The OpenAI-compatible base URL, as a pin's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Switches what answers behind the model ID.
    pub fn set_variant(&self, variant: &str) {
        let (status, body) = self.post("/admin/variant", &json!({ "variant": variant }));
        assert_eq!(status, 200, "setting variant {variant}: {body}");
    }

    /// Whether requests reach the servers with their `logprobs` (off: stripped by the proxy, as
    /// a provider without them).
    pub fn set_logprobs(&self, enabled: bool) {
        let (status, body) = self.post("/admin/logprobs", &json!({ "enabled": enabled }));
        assert_eq!(status, 200, "setting logprobs {enabled}: {body}");
    }

    /// `{"variant", "calls", "prompt_tokens", "completion_tokens", "by_max_tokens", "by_server"}`
    /// since the proxy started, counted from the real replies.
    pub fn stats(&self) -> Value {
        let (status, _, body) = http::get(self.port, "/admin/stats").expect("stack.py answers");
        assert_eq!(status, 200, "stats: {body}");
        serde_json::from_str(&body).expect("stats are JSON")
    }

    /// One chat completion: status and JSON body.
    pub fn chat(&self, request: &Value) -> (u16, Value) {
        self.post("/v1/chat/completions", request)
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let reply = http::post(
            self.port,
            path,
            &["Content-Type: application/json"],
            body.to_string().as_bytes(),
        )
        .expect("stack.py answers");
        let value = serde_json::from_slice(&reply.body)
            .unwrap_or_else(|e| panic!("{path} answered non-JSON ({e}): {}", reply.text()));
        (reply.status, value)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listening_port(line: &str) -> Option<u16> {
    let addr = line.trim().strip_prefix(LISTENING)?;
    addr.rsplit_once(':')?.1.parse().ok()
}
