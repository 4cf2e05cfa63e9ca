//! Status page weight and render time for 100 pins (targets: ≤ 50 KB gzipped, ≤ 20 ms).
//!
//! `cargo run --release --example status_page` renders the overview of a made-up fleet
//! (`daemon::page::sample`: a full strip of audits per pin, a third drifting) many times and
//! prints the plain and gzipped sizes and the median and 95th-percentile times of rendering
//! alone and of rendering plus gzip, which is what the daemon does for a changed page.

use std::time::{Duration, Instant};

use modelpin::daemon::page::{Meta, by_urgency, html, sample, serve};

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
    let page = html::overview(&pins, &meta);
    let zipped = serve::compress(page.as_bytes()).expect("gzip");
    let mut render = Vec::with_capacity(ROUNDS);
    let mut render_gzip = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let page = html::overview(&pins, &meta);
        render.push(start.elapsed());
        let _ = serve::compress(page.as_bytes());
        render_gzip.push(start.elapsed());
    }
    println!("pins: {PINS}, rounds: {ROUNDS}");
    println!(
        "page: {} bytes plain, {} bytes gzipped ({:.1} KiB)",
        page.len(),
        zipped.len(),
        zipped.len() as f64 / 1024.0
    );
    println!("render:        {}", summary(&mut render));
    println!("render + gzip: {}", summary(&mut render_gzip));
}

fn summary(times: &mut [Duration]) -> String {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    format!("median {:.2} ms, p95 {:.2} ms", at(0.5), at(0.95))
}
