//! Real receivers on loopback for alert tests: a webhook endpoint (records every request, can be
//! slow on the first one), an SMTP server (aiosmtpd, from PyPI) and Alertmanager (Debian's
//! prometheus-alertmanager). A missing program fails the test under CI and skips it elsewhere.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;

/// One request the webhook receiver got.
#[derive(Debug, Clone)]
pub struct Hit {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Hit {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

#[derive(Clone)]
struct Shared {
    hits: Arc<Mutex<Vec<Hit>>>,
    slow_first: Option<Duration>,
    /// How long every request takes to answer.
    each: Duration,
}

pub struct Webhook {
    pub addr: SocketAddr,
    hits: Arc<Mutex<Vec<Hit>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Webhook {
    /// Listens on `port` (0 for any); the first request is answered only after `slow_first`.
    pub fn start(port: u16, slow_first: Option<Duration>) -> Webhook {
        Webhook::serve(port, slow_first, Duration::ZERO)
    }

    /// A receiver that takes `each` to answer every request.
    pub fn slow(each: Duration) -> Webhook {
        Webhook::serve(0, None, each)
    }

    fn serve(port: u16, slow_first: Option<Duration>, each: Duration) -> Webhook {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            hits: hits.clone(),
            slow_first,
            each,
        };
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", port)))
            .expect("receiver port free");
        let addr = listener.local_addr().unwrap();
        let app = Router::new().fallback(receive).with_state(shared);
        runtime.spawn(async move { axum::serve(listener, app).await });
        Webhook {
            addr,
            hits,
            _runtime: runtime,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }
}

async fn receive(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> &'static str {
    let first = {
        let mut hits = shared.hits.lock().unwrap();
        hits.push(Hit {
            headers: headers
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                .collect(),
            body: body.to_vec(),
        });
        hits.len() == 1
    };
    if let (true, Some(delay)) = (first, shared.slow_first) {
        tokio::time::sleep(delay).await;
    }
    tokio::time::sleep(shared.each).await;
    "ok"
}

/// A program the test needs; `None` (after a printed notice) when absent outside CI.
pub fn program(name: &str, probe: &[&str]) -> Option<()> {
    let found = Command::new(name)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is required in CI (.ci/run installs it)"
        );
        eprintln!("notice: {name} is not installed; skipping this test");
        return None;
    }
    Some(())
}

/// aiosmtpd writing every message into a Maildir.
pub struct Smtp {
    pub port: u16,
    maildir: PathBuf,
    child: Child,
}

impl Smtp {
    pub fn start(dir: &Path) -> Option<Smtp> {
        let available = Command::new("python3")
            .args(["-c", "import aiosmtpd"])
            .status()
            .is_ok_and(|s| s.success());
        if !available {
            assert!(
                std::env::var_os("CI").is_none(),
                "aiosmtpd is required in CI (.ci/run installs it)"
            );
            eprintln!(
                "notice: aiosmtpd is not installed (pip install aiosmtpd); skipping this test"
            );
            return None;
        }
        let port = crate::daemon::free_port();
        let maildir = dir.join("maildir");
        let child = Command::new("python3")
            .args([
                "-m",
                "aiosmtpd",
                "-n",
                "-l",
                &format!("127.0.0.1:{port}"),
                "-c",
                "aiosmtpd.handlers.Mailbox",
            ])
            .arg(&maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let up = crate::daemon::until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "aiosmtpd listens");
        Some(Smtp {
            port,
            maildir,
            child,
        })
    }

    /// Every message received, as raw text.
    pub fn messages(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.maildir.join("new")) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .collect()
    }
}

impl Drop for Smtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real Alertmanager with a minimal config, no clustering (or a cluster peer, `start_peer`).
pub struct Alertmanager {
    pub port: u16,
    child: Child,
}

/// Cluster settings for a fast test on loopback (0.25 defaults: 200 ms gossip, 1 m push-pull,
/// 1 m settle, 15 s peer timeout). The peer timeout must stay well under `group_interval`: the
/// second peer sends its flush unless the first's log entry arrived within it, and a longer
/// wait let it send a stale firing after the first peer's resolve. Logs at debug level go next
/// to the peer's data directory.
pub const CLUSTER_FLAGS: [&str; 5] = [
    "--cluster.gossip-interval=50ms",
    "--cluster.pushpull-interval=1s",
    "--cluster.settle-timeout=2s",
    "--cluster.peer-timeout=500ms",
    "--log.level=debug",
];

impl Alertmanager {
    pub fn start(dir: &Path) -> Option<Alertmanager> {
        Alertmanager::start_on(dir, crate::daemon::free_port())
    }

    /// On a given port (a restart keeps the address the daemon was configured with).
    pub fn start_on(dir: &Path, port: u16) -> Option<Alertmanager> {
        program("prometheus-alertmanager", &["--version"])?;
        let config = dir.join("alertmanager.yml");
        std::fs::write(
            &config,
            "route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n",
        )
        .unwrap();
        Alertmanager::spawn(
            &config,
            &dir.join("am-data"),
            port,
            &["--cluster.listen-address="],
        )
    }

    /// A cluster peer routing everything to a webhook, listening for gossip on `gossip`.
    pub fn start_peer(
        dir: &Path,
        hook_url: &str,
        gossip: u16,
        peers: &[u16],
    ) -> Option<Alertmanager> {
        program("prometheus-alertmanager", &["--version"])?;
        let config = dir.join(format!("alertmanager-{gossip}.yml"));
        std::fs::write(
            &config,
            format!(
                "route:\n  receiver: hook\n  group_by: [pin]\n  group_wait: 1s\n  group_interval: 5s\n  repeat_interval: 1h\nreceivers:\n  - name: hook\n    webhook_configs:\n      - url: {hook_url}\n        send_resolved: true\n"
            ),
        )
        .unwrap();
        let mut args = vec![format!("--cluster.listen-address=127.0.0.1:{gossip}")];
        args.extend(
            peers
                .iter()
                .map(|p| format!("--cluster.peer=127.0.0.1:{p}")),
        );
        args.extend(CLUSTER_FLAGS.iter().map(|f| (*f).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let data = dir.join(format!("am-data-{gossip}"));
        Alertmanager::spawn(&config, &data, crate::daemon::free_port(), &args)
    }

    fn spawn(config: &Path, data: &Path, port: u16, args: &[&str]) -> Option<Alertmanager> {
        let child = Command::new("prometheus-alertmanager")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(data.with_extension("log")).ok()?)
            .spawn()
            .ok()?;
        let ready = crate::daemon::until(Duration::from_secs(20), || {
            crate::daemon::get(port, "/-/ready").is_some_and(|(status, _, _)| status == 200)
        });
        assert!(ready, "alertmanager becomes ready");
        Some(Alertmanager { port, child })
    }

    /// Cluster members this peer sees (from `/api/v2/status`).
    pub fn peers(&self) -> usize {
        crate::daemon::get(self.port, "/api/v2/status")
            .and_then(|(_, _, body)| serde_json::from_str::<serde_json::Value>(&body).ok())
            .and_then(|v| v["cluster"]["peers"].as_array().map(Vec::len))
            .unwrap_or(0)
    }

    /// Alerts the API lists as active.
    pub fn active(&self) -> Vec<serde_json::Value> {
        let Some((200, _, body)) = crate::daemon::get(
            self.port,
            "/api/v2/alerts?active=true&silenced=false&inhibited=false",
        ) else {
            return Vec::new();
        };
        serde_json::from_str::<Vec<serde_json::Value>>(&body)
            .unwrap_or_default()
            .into_iter()
            .filter(|a| a["status"]["state"] == "active")
            .collect()
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A receiver that accepts connections and never answers: a dead channel that still costs each
/// attempt its whole timeout.
pub struct Silent {
    pub addr: SocketAddr,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Silent {
    pub fn start() -> Silent {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Silent { addr, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Verifies Standard Webhooks signatures with Python's own hmac (an independent implementation),
/// after checking it reproduces the specification's published test vector.
pub fn verify_signatures(secret: &str, hits: &[Hit]) -> bool {
    use base64::Engine as _;
    let items: Vec<serde_json::Value> = hits
        .iter()
        .map(|h| {
            serde_json::json!({
                "id": h.header("webhook-id"),
                "ts": h.header("webhook-timestamp"),
                "sig": h.header("webhook-signature"),
                "body": base64::engine::general_purpose::STANDARD.encode(&h.body),
            })
        })
        .collect();
    let script = r#"
import base64, hashlib, hmac, json, sys
def sign(secret, msg_id, ts, body):
    key = base64.b64decode(secret.split("_", 1)[1])
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()
vector = sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", b'{"test": 2432232314}')
assert vector == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", vector
data = json.load(sys.stdin)
for item in data["items"]:
    expected = sign(data["secret"], item["id"], item["ts"], base64.b64decode(item["body"]))
    if not any(hmac.compare_digest(expected, s) for s in item["sig"].split(" ")):
        sys.exit("bad signature for " + item["id"])
print("ok")
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let input = serde_json::json!({ "secret": secret, "items": items }).to_string();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok"
}
