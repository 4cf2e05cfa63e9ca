//! Offline detection benchmark for `modelpin::stats` (detection-science §5).
//!
//! Simulated models with closed-form likelihoods stand in for providers, so each scenario can
//! be scored against the Neyman–Pearson oracle that knows both models: power at α, the sample
//! size for 95% power at α = 0.01, efficiency = n_oracle / n_modelpin, and the empirical
//! false-alarm rate over 10,000 null runs. Prints the markdown section for BENCHMARKS.md.
//! Run: `cargo run --release --example detection` (a few minutes on 2 cores).

mod harness;
mod models;
mod oracle;
mod pin;
mod scalar;
mod table;
mod text;

use std::time::Instant;

use table::{Row, markdown};

/// A named part of the benchmark and what it measures.
type Section = (&'static str, fn() -> Vec<Row>);

fn main() {
    // Optional section names (`pass`, `answers`, `length`, `tokenizer`, `text`, `pin`, `timing`)
    // run only those.
    let only: Vec<String> = std::env::args().skip(1).collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let start = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    let sections: [Section; 6] = [
        ("pass", || vec![scalar::pass_rate()]),
        ("answers", || vec![scalar::categorical()]),
        ("length", || vec![scalar::length()]),
        ("tokenizer", || vec![tokenizer()]),
        ("text", text::rows),
        ("pin", pin::rows),
    ];
    for (name, run) in sections.into_iter().filter(|(name, _)| wanted(name)) {
        rows.extend(run());
        eprintln!("{name}: done at {:.0} s", start.elapsed().as_secs_f64());
    }
    println!("{}", markdown(&rows));
    if wanted("pin") || only.iter().any(|o| o == "timing") {
        let timing = pin::timing();
        println!("compare_pin wall time, 4 probes × 10 calls vs 30, α = 0.001: {timing}");
    }
    println!(
        "total benchmark time: {:.0} s",
        start.elapsed().as_secs_f64()
    );
}

/// S5: a tokenizer or template change moves `usage.prompt_tokens` of a fixed probe, which the
/// judge compares exactly (outside these statistics): one call, no false alarms by construction.
fn tokenizer() -> Row {
    Row {
        scenario: "S5 tokenizer / template change".into(),
        detector: "exact `prompt_tokens` comparison (judge, not `stats`)".into(),
        design: "—".into(),
        n_modelpin: Some("1".into()),
        n_oracle: Some(1),
        power: "1.0 (deterministic)".into(),
        false_alarms: "0 (deterministic)".into(),
        target: "1 call".into(),
        met: Some(true),
    }
}
