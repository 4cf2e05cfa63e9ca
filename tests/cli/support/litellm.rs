//! The real LiteLLM proxy (PyPI `litellm[proxy]`, pinned in .ci/run) on a loopback port the
//! system picks: uvicorn is started with `--port 0` and logs the port it got. `MODELPIN_LITELLM`
//! names the `litellm` program (default: on PATH); a missing program fails under CI and skips
//! elsewhere.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::wait::{DEADLINE, poll};

/// What uvicorn logs once it listens, before the address.
const RUNNING: &str = "Uvicorn running on http://";

/// The proxy program, or `None` (after a notice) when it is not installed outside CI.
pub fn program() -> Option<PathBuf> {
    let path = std::env::var_os("MODELPIN_LITELLM").map_or_else(|| "litellm".into(), PathBuf::from);
    let found = Command::new(&path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the LiteLLM proxy is required in CI (.ci/run installs it)"
    );
    eprintln!(
        "notice: litellm is not installed (pip install 'litellm[proxy]'); skipping this test"
    );
    None
}

/// One running proxy, stopped when dropped.
pub struct Proxy {
    child: Child,
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Proxy {
    /// Starts the proxy with `config` (its YAML) and waits until it answers its liveness probe.
    pub fn start(program: &PathBuf, config: &str) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.yaml"), config).unwrap();
        let log = dir.path().join("litellm.log");
        let mut child = Command::new(program)
            .args([
                "--config",
                "config.yaml",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--num_workers",
                "1",
            ])
            .current_dir(dir.path())
            // Offline: the bundled price map, no admin UI, no database. LITELLM_LOG stays at its
            // default: at ERROR uvicorn would not log the port it got.
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("DISABLE_ADMIN_UI", "True")
            .env("NO_DOCS", "True")
            .env_remove("LITELLM_LOG")
            .env_remove("DATABASE_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("litellm starts");
        let stderr = child.stderr.take().unwrap();
        let mut file = std::fs::File::create(&log).unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr);
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                let _ = file.write_all(line.as_bytes());
                if let Some(port) = uvicorn_port(&line) {
                    let _ = tx.send(port);
                }
                line.clear();
            }
        });
        // Loading the proxy takes tens of seconds, and minutes on a loaded machine.
        let port = rx
            .recv_timeout(Duration::from_secs(240))
            .unwrap_or_else(|_| {
                panic!(
                    "the LiteLLM proxy did not say where it listens within 240 s:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        let proxy = Proxy {
            child,
            port,
            log,
            _dir: dir,
        };
        assert!(
            poll(DEADLINE, || proxy.live().then_some(())).is_some(),
            "the LiteLLM proxy is not live:\n{}",
            proxy.log()
        );
        proxy
    }

    fn live(&self) -> bool {
        crate::support::http::get(self.port, "/health/liveliness")
            .is_some_and(|(status, _, _)| status == 200)
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// What the proxy logged.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn uvicorn_port(line: &str) -> Option<u16> {
    let rest = &line[line.find(RUNNING)? + RUNNING.len()..];
    let addr = rest.split_whitespace().next()?;
    addr.rsplit_once(':')?.1.parse().ok()
}
