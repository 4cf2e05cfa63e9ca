//! Status page weight and server time for 100 pins (targets: ≤ 50 KB gzipped, ≤ 20 ms).
//!
//! `cargo run --release --example status_page` takes a made-up fleet (`daemon::page::sample`: a
//! full strip of audits per pin, a third drifting), and measures over many rounds, median and
//! 95th percentile: rendering the overview alone; rendering plus gzip; and what the daemon does
//! for a changed page — read every pin's strip from a sled store holding those audits (one read
//! on the blocking pool, as the daemon does), order, render, gzip. A revalidation of an unchanged
//! page is answered 304 without any of it.

use std::time::{Duration, Instant};

use modelpin::daemon::page::cache::compress;
use modelpin::daemon::page::serve::views_of;
use modelpin::daemon::page::{Meta, PinView, STRIP_AUDITS, by_urgency, overview, sample};
use modelpin::store::{AuditRecord, Holder, Store};

const PINS: usize = 100;
const ROUNDS: usize = 200;

fn main() {
    let now = chrono::Utc::now();
    let meta = Meta {
        generated: now,
        etag: "W/\"0123456789abcdef01234567\"".into(),
    };
    let mut pins = sample::fleet(PINS, now);
    by_urgency(&mut pins);
    let page = overview::overview(&pins, &meta);
    let zipped = compress(page.as_bytes()).expect("gzip");
    println!("pins: {PINS}, rounds: {ROUNDS}");
    println!(
        "page: {} bytes plain, {} bytes gzipped ({:.1} KiB)",
        page.len(),
        zipped.len(),
        zipped.len() as f64 / 1024.0
    );
    println!(
        "render:                      {}",
        timed(|| {
            let _ = overview::overview(&pins, &meta);
        })
    );
    println!(
        "render + gzip:               {}",
        timed(|| {
            let _ = compress(overview::overview(&pins, &meta).as_bytes());
        })
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = runtime.block_on(filled_store(&dir.path().join("store"), &pins));
    println!(
        "store read + render + gzip:  {}",
        timed(|| {
            let blanks: Vec<PinView> = pins
                .iter()
                .map(|p| PinView {
                    latest: None,
                    marks: Vec::new(),
                    ..p.clone()
                })
                .collect();
            let read = runtime.block_on(views_of(&store, blanks, STRIP_AUDITS));
            let mut views: Vec<PinView> = read
                .expect("store reads")
                .into_iter()
                .map(|(view, _)| view)
                .collect();
            by_urgency(&mut views);
            let _ = compress(overview::overview(&views, &meta).as_bytes());
        })
    );
}

/// A store with every audit of every pin's strip, written as the daemon writes them.
async fn filled_store(path: &std::path::Path, pins: &[PinView]) -> Store {
    let store = Store::open(path, Holder::Daemon)
        .await
        .expect("store opens");
    let mut tasks = tokio::task::JoinSet::new();
    for pin in pins {
        let (store, pin) = (store.clone(), pin.clone());
        tasks.spawn(async move {
            let Some(latest) = &pin.latest else { return };
            for (i, mark) in pin.marks.iter().enumerate() {
                let mut record: AuditRecord = latest.clone();
                record.audit_id = format!("{}-{i}", latest.audit_id);
                record.started_at = mark.started_at;
                record.pin.status = mark.status;
                store.append(&record).await.expect("append");
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    store
}

fn timed(mut work: impl FnMut()) -> String {
    let mut times: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed()
        })
        .collect();
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    format!("median {:.2} ms, p95 {:.2} ms", at(0.5), at(0.95))
}
