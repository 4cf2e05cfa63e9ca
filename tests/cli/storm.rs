//! A traffic storm against a real daemon: every posted span names a served model never seen
//! before, while browsers load the pin's page and scripts page through `/api/history`. The store
//! grows by a bounded number of bytes, every answer stays under its stated cap, the daemon's
//! memory comes back down once it is idle, and the verdict still says drift (docs/daemon.md).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prost::Message as _;

use crate::harness::Sim;
use crate::support::daemon::Daemon;
use crate::support::http::{fetch, next_link, post};
use crate::support::traffic::{ID, pins};
use crate::support::traffic::{request, span};
use crate::support::wait::{DEADLINE, poll};
use crate::world::{model, single};

/// Posts in the storm, each of `SPANS` spans; scaled to stay well within a minute on a loaded
/// machine, not to change what is asserted.
const POSTS: u64 = 30;
const SPANS: u64 = 1000;

/// The bounds docs/daemon.md states (src/daemon/http.rs `MAX_ANSWER`, src/daemon/page `MAX_PAGE_BYTES`).
const MAX_ANSWER: usize = 1024 * 1024;
const MAX_PAGE_BYTES: usize = 512 * 1024;
/// Traffic records one pin writes per 10-minute window (src/daemon/traffic `KEPT_PER_WINDOW`).
const KEPT_PER_WINDOW: usize = 6;
/// What a storm within one window may add to the store: its records (`KEPT_PER_WINDOW` × 16
/// KiB) and the alert state stepped at each pass, with sled's log overhead (docs/daemon.md).
const MAX_STORE_GROWTH: u64 = 2 << 20;
/// Memory once idle again and at the peak, over the idle level before the storm, in kB.
const SETTLED_OVER_IDLE_KB: u64 = 64 << 10;
const PEAK_OVER_IDLE_KB: u64 = 128 << 10;

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => dir_size(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    })
}

/// `VmRSS` or `VmHWM` of `pid`, in kB.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// RSS once two readings 100 ms apart differ by less than 1 MiB, within `DEADLINE`.
fn settled_rss(pid: u32) -> Option<u64> {
    let mut last = status_kb(pid, "VmRSS:")?;
    poll(DEADLINE, || {
        std::thread::sleep(Duration::from_millis(100));
        let now = status_kb(pid, "VmRSS:")?;
        let settled = now.abs_diff(last) < 1024;
        last = now;
        settled.then_some(now)
    })
}

/// The storm's body `n`: `SPANS` spans of the pin's model, each served by a new model.
fn body(n: u64) -> Vec<u8> {
    let spans = (0..SPANS)
        .map(|i| {
            let served = format!("churn-{n:03}-{i:04}-{}", "x".repeat(40));
            span(n * SPANS + i, ID, &served)
        })
        .collect();
    request(spans).encode_to_vec()
}

/// Loads the pin's page and pages through history until `stop`; the largest body of each.
fn browse(port: u16, stop: &AtomicBool, largest: &Mutex<(usize, usize)>, loads: &AtomicUsize) {
    while !stop.load(Ordering::Relaxed) {
        if let Some(page) = fetch(port, "/pins/pin", "") {
            let mut l = largest.lock().unwrap();
            l.0 = l.0.max(page.body.len());
        }
        let mut path = Some("/api/history?limit=1000".to_owned());
        while let Some(p) = path.take() {
            let Some(answer) = fetch(port, &p, "") else {
                break;
            };
            let mut l = largest.lock().unwrap();
            l.1 = l.1.max(answer.body.len());
            drop(l);
            path = next_link(&answer.head);
        }
        loads.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
#[cfg(target_os = "linux")]
fn storm_of_ever_new_served_models_stays_within_the_stated_bounds() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = pins(&sim).traffic("interval", "100ms").locked();
    let daemon = Daemon::start(&test);
    let (port, pid) = (daemon.port(), daemon.pid());
    daemon.wait_records("the start-up probe audit", |r| !r.is_empty());
    let idle = settled_rss(pid).expect("the daemon's memory settles before the storm");
    let store = test.path("store");
    let before = dir_size(&store);
    let bodies: Vec<Vec<u8>> = (0..POSTS).map(body).collect();

    let stop = Arc::new(AtomicBool::new(false));
    let largest = Arc::new(Mutex::new((0, 0)));
    let loads = Arc::new(AtomicUsize::new(0));
    let browsers: Vec<_> = (0..4)
        .map(|_| {
            let (stop, largest, loads) = (stop.clone(), largest.clone(), loads.clone());
            std::thread::spawn(move || browse(port, &stop, &largest, &loads))
        })
        .collect();
    for body in &bodies {
        let answer = poll(DEADLINE, || {
            post(
                port,
                "/v1/traces",
                &["Content-Type: application/x-protobuf"],
                body,
            )
            .filter(|a| a.status != 429)
        })
        .expect("the receiver takes the post");
        assert_eq!(answer.status, 200, "{}", answer.head);
    }
    // 20 browsers at once, as a page reloads on a wall screen.
    let (done, crowd) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(0)));
    let loaders: Vec<_> = (0..20)
        .map(|_| {
            let (done, crowd) = (done.clone(), crowd.clone());
            std::thread::spawn(move || {
                if let Some(page) = fetch(port, "/pins/pin", "") {
                    assert_eq!(page.status, 200);
                    let mut c = crowd.lock().unwrap();
                    *c = (*c).max(page.body.len());
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for l in loaders {
        l.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for b in browsers {
        b.join().unwrap();
    }
    assert_eq!(
        done.load(Ordering::Relaxed),
        20,
        "every page of the crowd answered"
    );
    assert!(
        loads.load(Ordering::Relaxed) > 0,
        "the browsers loaded during the storm"
    );

    let records = daemon.wait_records("the storm's last verdict", |records| {
        records
            .iter()
            .rev()
            .find(|r| r.is_traffic())
            .is_some_and(|r| r.pin.capped.get("served_models").is_some_and(|o| o.ids > 0))
    });
    let traffic = records.iter().filter(|r| r.is_traffic()).count();
    assert!(traffic <= KEPT_PER_WINDOW, "{traffic} traffic records");
    let last = records.iter().rev().find(|r| r.is_traffic()).unwrap();
    assert!(last.has_finding("served_model_mismatch"), "{last:?}");
    assert_eq!(last.pin.status, "drift");
    assert!(last.pin.served_models.contains_key("(others)"));

    let (page, history) = *largest.lock().unwrap();
    let crowd = *crowd.lock().unwrap();
    let grown = dir_size(&store).saturating_sub(before);
    let settled = settled_rss(pid).expect("the daemon's memory settles after the storm");
    let peak = status_kb(pid, "VmHWM:").unwrap_or(u64::MAX);
    eprintln!(
        "storm: {POSTS} posts of {SPANS} spans; {traffic} traffic records; store +{grown} \
         bytes; pin page {} bytes (crowd {crowd}); history answer {history} bytes; RSS idle \
         {idle} kB, settled {settled} kB, peak {peak} kB",
        page.max(crowd)
    );
    assert!(grown <= MAX_STORE_GROWTH, "store grew {grown} bytes");
    assert!(
        page.max(crowd) <= MAX_PAGE_BYTES,
        "pin page {page} / {crowd} bytes"
    );
    assert!(history <= MAX_ANSWER, "history answer {history} bytes");
    assert!(
        settled <= idle + SETTLED_OVER_IDLE_KB,
        "RSS {settled} kB once idle, {idle} kB before"
    );
    assert!(
        peak <= idle + PEAK_OVER_IDLE_KB,
        "peak RSS {peak} kB, {idle} kB idle"
    );
}
