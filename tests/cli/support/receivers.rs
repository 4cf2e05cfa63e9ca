//! Real receivers on loopback for alert tests: a webhook endpoint (records every request, can be
//! slow on the first one), an SMTP server (aiosmtpd, from PyPI) and Alertmanager (Debian's
//! prometheus-alertmanager). Each listens on a port the system picks and says which; a missing
//! program fails the test under CI and skips it elsewhere.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::http::get;
use crate::support::ports::ClosedPort;
use crate::support::tools::program;
use crate::support::wait::{DEADLINE, wait_until};

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

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Clone)]
struct Shared {
    hits: Arc<Mutex<Vec<Hit>>>,
    /// Requests being answered now, and the most ever at once.
    in_flight: Arc<Mutex<(usize, usize)>>,
    slow_first: Option<Duration>,
    /// How long every request takes to answer.
    each: Duration,
}

pub struct Webhook {
    pub addr: SocketAddr,
    in_flight: Arc<Mutex<(usize, usize)>>,
    hits: Arc<Mutex<Vec<Hit>>>,
    runtime: tokio::runtime::Runtime,
}

impl Webhook {
    /// A receiver on a port the system picks that answers at once.
    pub fn start() -> Webhook {
        Webhook::serve(ClosedPort::new(), None, Duration::ZERO)
    }

    /// Comes up on a port held closed until now (a receiver that was down).
    pub fn on(port: ClosedPort) -> Webhook {
        Webhook::serve(port, None, Duration::ZERO)
    }

    /// The first request is answered only after `delay` (a receiver slower than the client).
    pub fn slow_first(delay: Duration) -> Webhook {
        Webhook::serve(ClosedPort::new(), Some(delay), Duration::ZERO)
    }

    /// A receiver that takes `each` to answer every request.
    pub fn slow(each: Duration) -> Webhook {
        Webhook::serve(ClosedPort::new(), None, each)
    }

    fn serve(port: ClosedPort, slow_first: Option<Duration>, each: Duration) -> Webhook {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(Mutex::new((0, 0)));
        let shared = Shared {
            hits: hits.clone(),
            in_flight: in_flight.clone(),
            slow_first,
            each,
        };
        let listener = runtime.block_on(async { port.listen() });
        let addr = listener.local_addr().unwrap();
        let app = Router::new().fallback(receive).with_state(shared);
        runtime.spawn(async move { axum::serve(listener, app).await });
        Webhook {
            addr,
            in_flight,
            hits,
            runtime,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    /// The most requests this receiver was answering at one time.
    pub fn most_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }

    /// Goes down: connections are closed and new ones refused; the port stays held for a
    /// receiver that comes back ([`Webhook::on`]).
    pub fn stop(self) -> ClosedPort {
        let port = self.addr.port();
        self.runtime.shutdown_timeout(Duration::from_secs(5));
        ClosedPort::reclaim(port)
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
    {
        let mut in_flight = shared.in_flight.lock().unwrap();
        in_flight.0 += 1;
        in_flight.1 = in_flight.1.max(in_flight.0);
    }
    if let (true, Some(delay)) = (first, shared.slow_first) {
        tokio::time::sleep(delay).await;
    }
    tokio::time::sleep(shared.each).await;
    shared.in_flight.lock().unwrap().0 -= 1;
    "ok"
}

/// aiosmtpd's SMTP server on 127.0.0.1, port 0, writing into the Maildir `argv[1]`; prints the
/// port it got once it listens.
const SMTP_ON_ANY_PORT: &str = r#"
import asyncio, sys
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import SMTP

async def main(maildir):
    handler = Mailbox(maildir)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(handler), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

asyncio.run(main(sys.argv[1]))
"#;

/// aiosmtpd writing every message into a Maildir.
pub struct Smtp {
    pub port: u16,
    maildir: PathBuf,
    child: Child,
}

impl Smtp {
    /// aiosmtpd on a port the system picks: a small wrapper binds port 0 and prints the port.
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
        let maildir = dir.join("maildir");
        let mut child = Command::new("python3")
            .args(["-c", SMTP_ON_ANY_PORT])
            .arg(&maildir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("aiosmtpd printed its port: {line:?}"));
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
    log: PathBuf,
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

/// What Alertmanager logs once its web listener is up, before the address it got.
const LISTENING: &str = "msg=\"Listening on\" address=";

impl Alertmanager {
    /// On a port the system picks.
    pub fn start(dir: &Path) -> Option<Alertmanager> {
        Alertmanager::start_at(dir, 0)
    }

    /// On a port held closed until now: a restart keeps the address the daemon was configured
    /// with.
    pub fn start_on(dir: &Path, port: ClosedPort) -> Option<Alertmanager> {
        Alertmanager::start_at(dir, port.release())
    }

    fn start_at(dir: &Path, port: u16) -> Option<Alertmanager> {
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

    /// A cluster peer routing everything to a webhook, gossiping on a port the system picks and
    /// joining `peers`.
    pub fn start_peer(dir: &Path, hook_url: &str, peers: &[&Alertmanager]) -> Option<Alertmanager> {
        program("prometheus-alertmanager", &["--version"])?;
        let n = peers.len() + 1;
        let config = dir.join(format!("alertmanager-{n}.yml"));
        std::fs::write(
            &config,
            format!(
                "route:\n  receiver: hook\n  group_by: [pin]\n  group_wait: 1s\n  group_interval: 5s\n  repeat_interval: 1h\nreceivers:\n  - name: hook\n    webhook_configs:\n      - url: {hook_url}\n        send_resolved: true\n"
            ),
        )
        .unwrap();
        let mut args = vec!["--cluster.listen-address=127.0.0.1:0".to_owned()];
        args.extend(
            peers
                .iter()
                .map(|p| format!("--cluster.peer={}", p.gossip_address())),
        );
        args.extend(CLUSTER_FLAGS.iter().map(|f| (*f).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let data = dir.join(format!("am-data-{n}"));
        Alertmanager::spawn(&config, &data, 0, &args)
    }

    fn spawn(config: &Path, data: &Path, port: u16, args: &[&str]) -> Option<Alertmanager> {
        let log = data.with_extension("log");
        let child = Command::new("prometheus-alertmanager")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).ok()?)
            .spawn()
            .ok()?;
        let mut am = Alertmanager {
            port: 0,
            child,
            log,
        };
        am.port = wait_until(DEADLINE, "Alertmanager to say where it listens", || {
            let log = am.log();
            let rest = &log[log.find(LISTENING)? + LISTENING.len()..];
            let addr = rest.split_whitespace().next()?;
            addr.rsplit_once(':')?.1.parse().ok()
        });
        wait_until(DEADLINE, "Alertmanager to be ready", || {
            get(am.port, "/-/ready").filter(|(status, _, _)| *status == 200)
        });
        Some(am)
    }

    /// Everything this Alertmanager logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn status(&self) -> serde_json::Value {
        get(self.port, "/api/v2/status")
            .and_then(|(_, _, body)| serde_json::from_str(&body).ok())
            .unwrap_or_default()
    }

    /// The address this peer gossips on, as its own cluster status lists it.
    pub fn gossip_address(&self) -> String {
        wait_until(DEADLINE, "the peer's own gossip address", || {
            let status = self.status();
            let name = status["cluster"]["name"].as_str()?.to_owned();
            status["cluster"]["peers"]
                .as_array()?
                .iter()
                .find(|p| p["name"] == name.as_str())?["address"]
                .as_str()
                .map(str::to_owned)
        })
    }

    /// Cluster members this peer sees (from `/api/v2/status`).
    pub fn peers(&self) -> usize {
        self.status()["cluster"]["peers"]
            .as_array()
            .map_or(0, Vec::len)
    }

    /// The sum of one family of Alertmanager's own metrics (samples without labels or with).
    pub fn metric(&self, name: &str) -> f64 {
        let Some((200, _, body)) = get(self.port, "/metrics") else {
            return 0.0;
        };
        body.lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Alerts the API lists as active.
    pub fn active(&self) -> Vec<serde_json::Value> {
        let Some((200, _, body)) = get(
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

    /// Goes down; its port stays held for [`Alertmanager::start_on`].
    pub fn stop(mut self) -> ClosedPort {
        let _ = self.child.kill();
        let _ = self.child.wait();
        ClosedPort::reclaim(self.port)
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
