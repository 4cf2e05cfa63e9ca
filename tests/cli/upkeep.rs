//! Upkeep never holds the daemon up: with a deprecation feed that takes 30 s to answer, the
//! daemon serves from the start, `/healthz` stays 200 and audits are stored on schedule while the
//! feed is still loading; once it answers, the next audits use its dates. Every port is picked by
//! the system (port 0); the daemon's is read from the address it logs.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;

use crate::harness::{ARITH, Sim, Test, one_pin_with};
use crate::support::daemon::Daemon;
use crate::support::wait::eventually;
use crate::world::{model, single};

const ID: &str = "acme-pro-001";

/// How long the feed takes to answer.
const HANG: Duration = Duration::from_secs(30);

/// A feed on loopback that answers each request `HANG` after it arrived.
struct SlowFeed {
    url: String,
    received: Arc<AtomicUsize>,
    answered: Arc<AtomicUsize>,
}

impl SlowFeed {
    fn start(body: String) -> SlowFeed {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/acme.toml", listener.local_addr().unwrap());
        let received = Arc::new(AtomicUsize::new(0));
        let answered = Arc::new(AtomicUsize::new(0));
        let (r, a) = (received.clone(), answered.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, a, body) = (r.clone(), a.clone(), body.clone());
                std::thread::spawn(move || answer_late(stream, &body, &r, &a));
            }
        });
        SlowFeed {
            url,
            received,
            answered,
        }
    }

    fn received(&self) -> usize {
        self.received.load(Ordering::SeqCst)
    }

    fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }
}

fn answer_late(mut stream: TcpStream, body: &str, received: &AtomicUsize, answered: &AtomicUsize) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
        head.push(byte[0]);
    }
    received.fetch_add(1, Ordering::SeqCst);
    std::thread::sleep(HANG);
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/toml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes());
    answered.fetch_add(1, Ordering::SeqCst);
}

/// A locked project audited every 10 s, listening on a port of the system's choosing, whose
/// lifecycle feed (added after locking) says the pinned model retires in 45 days.
fn project(sim: &Sim, feed: &SlowFeed) -> Test {
    let settings = "timeout = \"60s\"\nbudget = \"120s\"\nschedule = \"*/10 * * * * *\"\nmetrics = \"127.0.0.1:0\"\nstore = \"store\"";
    let pins = one_pin_with(
        settings,
        ProviderKind::Gemini,
        &sim.url(ProviderKind::Gemini),
        ID,
        "samples = 2",
    );
    let test = Test::new().pins(&pins).file("probes/arith.toml", ARITH);
    test.run(&["lock"]).code(0);
    let with_feed = pins.replacen(
        "store = \"store\"",
        &format!("store = \"store\"\ndeprecation_feeds = [\"{}\"]", feed.url),
        1,
    );
    test.pins(&with_feed)
}

fn retiring_in_45_days() -> String {
    let day = chrono::Utc::now().date_naive() + chrono::Days::new(45);
    format!(
        "[[fact]]\nid = \"acme-pro\"\nprovider = \"gemini\"\nmodels = [\"{ID}\"]\nretires = {day}\nsource = \"acme status page\"\n"
    )
}

#[test]
fn a_feed_slow_to_answer_keeps_neither_healthz_nor_the_schedule_waiting() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let feed = SlowFeed::start(retiring_in_45_days());
    let test = project(&sim, &feed);
    let mut daemon = Daemon::start(&test);
    assert!(
        eventually(Duration::from_secs(10), || feed.received() == 1),
        "the first feed load starts at once: {}",
        daemon.log()
    );
    let asked = Instant::now();
    // No audit waits for the download: the first is stored while the feed has not answered
    // (before, audits waited up to 10 s for it and `/healthz` failed meanwhile).
    assert!(
        eventually(Duration::from_secs(5), || daemon
            .try_records()
            .is_some_and(|r| !r.is_empty())),
        "an audit within 5 s of start: {}",
        daemon.log()
    );
    assert_eq!(feed.answered(), 0);
    // While the feed hangs: healthy on every probe, and audits stored on schedule.
    let mut audits = 0;
    while audits < 2 && asked.elapsed() < HANG.saturating_sub(Duration::from_secs(2)) {
        let health = daemon.get("/healthz").map(|r| (r.status, r.text()));
        assert_eq!(
            health.as_ref().map(|(status, _)| *status),
            Some(200),
            "{health:?}: {}",
            daemon.log()
        );
        audits = daemon.try_records().map_or(0, |r| r.len());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(feed.answered(), 0, "the feed is still loading");
    assert!(audits >= 2, "audits stored meanwhile: {}", daemon.log());
    // Once the feed answers, the next audit knows the retirement it announces.
    let knows = eventually(HANG + Duration::from_secs(15), || {
        daemon.try_records().is_some_and(|records| {
            records.iter().any(|r| {
                r.pin
                    .findings
                    .iter()
                    .any(|f| f.code == "deprecation_scheduled")
            })
        })
    });
    assert!(
        knows,
        "the feed's date reaches the audits: {}",
        daemon.log()
    );
    assert_eq!(feed.answered(), 1);
    daemon.signal("TERM");
    assert_eq!(
        daemon.wait_exit(Duration::from_secs(12)),
        Some(0),
        "{}",
        daemon.log()
    );
}
