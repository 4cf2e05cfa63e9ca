//! Lifetime false alarms and detection delay of the daemon's behaviour alarms (each audit's own
//! look and the accumulated evidence, `modelpin::stats::sequential`), at the statistics layer.
//!
//! The audits are not simulated from a model of ours: each simulated audit is an audit of a
//! real-model run (`real_audits.tsv`, written by `bench/real_model.py --resolve 1.4286e-5 --tsv`;
//! BENCHMARKS.md "Lifetime false alarms and detection delay" names the run), drawn
//! with replacement from the audits of its case, its smallest p-value jittered by a factor
//! `e^N(0, 0.1²)` so that no two simulated years replay the same ties. A simulated pin-year is
//! the behaviour audits of a year at the defaults (hourly ticks, `behavior_calls_per_day = 300`,
//! an audit of 316 calls of which 6 are the identity check's: one every 25th tick, 350 a year,
//! as `daemon::budget` counts them) against one lock; each starts with a lock drawn afresh (the
//! unchanged server or the jittering one, the two nulls of that run). Delays are in days.
//!
//! Run: `cargo run --release --example sequential [pin-years]` (seconds for the default
//! 10,000). Prints the markdown section for BENCHMARKS.md.

use std::collections::BTreeMap;

use modelpin::stats::rng::Rng;
use modelpin::stats::sequential::{Detector, Look, later_level, threshold};

const AUDITS: &str = include_str!("real_audits.tsv");
const RATE: f64 = modelpin::config::DEFAULT_FALSE_ALARMS_PER_YEAR;
const ALPHA: f64 = 0.001;
/// The default plan (docs/daemon.md): 10 samples of 6 probes and a first-token tier of up to
/// 256 one-token calls; an identity check is one call a probe.
const AUDIT_CALLS: u64 = 316;
const IDENTITY_CALLS: u64 = 6;

/// Behaviour audits a year at the defaults and hours between two of them, from the daemon's own
/// rule (`daemon::budget`).
fn rhythm() -> (u64, f64) {
    let spacing = modelpin::daemon::budget::spacing(
        AUDIT_CALLS - IDENTITY_CALLS,
        modelpin::config::DEFAULT_BEHAVIOR_CALLS_PER_DAY,
    );
    let hourly = modelpin::config::schedule::parse("0 0 * * * *").expect("hourly");
    let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("a time");
    let r = modelpin::daemon::budget::rhythm(&hourly, now, spacing).expect("hourly runs");
    (r.behaviour.round() as u64, 8_760.0 / r.behaviour)
}

/// Each case's audits, as their smallest Holm-adjusted p-value: the second field of a line
/// (`bench/real_model.py --tsv`), or of an older run's three fields `m · min p`, capped at 1
/// (Holm's first step).
fn cases() -> BTreeMap<String, Vec<f64>> {
    let mut cases: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for line in AUDITS.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let p = match fields[..] {
            [_, p] => p.parse::<f64>().expect("p"),
            [_, m, p] => m.parse::<f64>().expect("tests") * p.parse::<f64>().expect("p"),
            _ => continue,
        };
        cases
            .entry(fields[0].to_owned())
            .or_default()
            .push(p.min(1.0));
    }
    cases
}

fn draw(rng: &mut Rng, audits: &[f64]) -> f64 {
    let p = audits[(rng.next_u64() % audits.len() as u64) as usize];
    // Box–Muller: one normal draw.
    let (u, v) = (rng.next_f64().max(1e-300), rng.next_f64());
    let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
    (p * (0.1 * z).exp()).min(1.0)
}

struct Null {
    years: u64,
    detector: u64,
    /// Own looks of the first `EARLY_AUDITS` after a lock, and of the later ones.
    early_look: u64,
    later_look: u64,
    /// How many false alarms each 1,000 pin-years saw, to show they do not come in runs.
    worst_thousand: u64,
}

fn null(cases: &BTreeMap<String, Vec<f64>>, years: u64, per_year: u64, seed: u64) -> Null {
    let locks = [&cases["base"], &cases["jitter"]];
    let mut rng = Rng::new(seed);
    let limit = threshold(per_year as f64, RATE);
    let (mut detector, mut early, mut later, mut per_thousand, mut worst) = (0, 0, 0, 0, 0);
    for year in 0..years {
        let lock = locks[(rng.next_u64() % 2) as usize];
        let mut d = Detector::default();
        for _ in 0..per_year {
            let p = draw(&mut rng, lock);
            // Each audit looks on its own too, as the daemon's do (`alert::lifetime`); an
            // alarm it raises is re-locked like any other.
            if looks(&d, p, per_year) {
                if Look::at(d.audits() + 1) == Look::Later {
                    later += 1;
                } else {
                    early += 1;
                }
                d = Detector::default();
                continue;
            }
            if d.step(p, rng.next_f64().max(f64::EPSILON)).statistic >= limit {
                detector += 1;
                per_thousand += 1;
                // A team re-locks after an alarm: the evidence starts afresh.
                d = Detector::default();
            }
        }
        if (year + 1) % 1000 == 0 {
            worst = worst.max(per_thousand);
            per_thousand = 0;
        }
    }
    Null {
        years,
        detector,
        early_look: early,
        later_look: later,
        worst_thousand: worst,
    }
}

/// Whether the next audit, smallest adjusted p-value `p`, alarms on its own look.
fn looks(d: &Detector, p: f64, per_year: u64) -> bool {
    let later = later_level(per_year as f64, RATE, ALPHA);
    p <= Look::at(d.audits() + 1).level(ALPHA, later)
}

/// Audits from the change to the alarm, for a change after `before` unchanged audits; `None`
/// when none within `horizon`.
fn delay(
    rng: &mut Rng,
    (unchanged, changed): (&[f64], &[f64]),
    before: u64,
    horizon: u64,
    per_year: u64,
) -> Option<u64> {
    let limit = threshold(per_year as f64, RATE);
    let mut d = Detector::default();
    for _ in 0..before {
        let p = draw(rng, unchanged);
        if looks(&d, p, per_year) || d.step(p, rng.next_f64().max(f64::EPSILON)).statistic >= limit
        {
            return Some(0);
        }
    }
    (1..=horizon).find(|_| {
        let p = draw(rng, changed);
        looks(&d, p, per_year) || d.step(p, rng.next_f64().max(f64::EPSILON)).statistic >= limit
    })
}

fn main() {
    let years: u64 = std::env::args()
        .nth(1)
        .map_or(10_000, |y| y.parse().expect("pin-years"));
    let cases = cases();
    let (per_year, hours) = rhythm();
    let started = std::time::Instant::now();
    let halves: Vec<Null> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2u64)
            .map(|i| {
                let cases = &cases;
                s.spawn(move || null(cases, years / 2, per_year, 0x5EED + i))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let (years_run, detector, early, later, worst) = halves.iter().fold((0, 0, 0, 0, 0), |a, n| {
        (
            a.0 + n.years,
            a.1 + n.detector,
            a.2 + n.early_look,
            a.3 + n.later_look,
            a.4.max(n.worst_thousand),
        )
    });
    let level = later_level(per_year as f64, RATE, ALPHA);
    println!("### Lifetime false alarms (statistics layer)\n");
    println!(
        "{years_run} pin-years at the defaults: hourly ticks, a behaviour audit every {hours:.0} hours ({per_year} a year, {} in all), false_alarms_per_year = {RATE}, own looks at alpha = {ALPHA} (first audit), alpha/8 (the next 71) and {level:.3e} (later); {:.0} s.\n",
        years_run * per_year,
        started.elapsed().as_secs_f64()
    );
    println!("| source | false alarms | per pin-year |\n|---|---|---|");
    let per = |n: u64| n as f64 / years_run as f64;
    println!(
        "| accumulated evidence (Shiryaev–Roberts ≥ {:.0}) | {detector} | {:.4} |",
        threshold(per_year as f64, RATE),
        per(detector)
    );
    println!(
        "| own looks of the first 72 audits after each lock (each pin-year's, and each after an alarm) | {early} | {:.4} |",
        per(early)
    );
    println!(
        "| own looks of the later audits (at {level:.3e}) | {later} | {:.4} |",
        per(later)
    );
    println!(
        "| all | {} | {:.4} |\n\nMost false alarms of the detector in any 1,000 pin-years: {worst}. Smallest adjusted p-value among the unchanged audits drawn from: {:.2e}.\n",
        detector + early + later,
        per(detector + early + later),
        cases["base"]
            .iter()
            .chain(&cases["jitter"])
            .copied()
            .fold(1.0, f64::min)
    );

    let days = |audits: u64| audits as f64 * hours / 24.0;
    let horizon = (60.0 * 24.0 / hours) as u64;
    println!("### Detection delay (days from the change to the alarm)\n");
    println!(
        "| change | after unchanged behaviour audits (days) | median | 95th percentile | missed in 60 days ({horizon} audits) |"
    );
    println!("|---|---|---|---|---|");
    let mut rng = Rng::new(0xDE1A);
    let runs = 400;
    // The swaps the run audited; another family and a hidden system message also change the
    // prompt's token count, which every tick's identity check sees.
    let swaps = ["requant", "temperature", "family", "system"]
        .into_iter()
        .filter(|c| cases.contains_key(*c));
    for case in swaps {
        for before in [1u64, 3, 24, 71, 72, 80, 150, 350] {
            let mut delays: Vec<u64> = Vec::new();
            let mut missed = 0;
            for _ in 0..runs {
                let pair = (cases["base"].as_slice(), cases[case].as_slice());
                match delay(&mut rng, pair, before, horizon, per_year) {
                    Some(d) => delays.push(d),
                    None => missed += 1,
                }
            }
            // Over every run, a miss counting as longer than the horizon.
            delays.sort_unstable();
            let at = |q: f64| {
                let k = (f64::from(runs) * q) as usize;
                delays
                    .get(k)
                    .map_or("> 60".to_owned(), |d| format!("{:.1}", days(*d)))
            };
            println!(
                "| {case} | {before} ({:.0}) | {} | {} | {missed} of {runs} |",
                days(before),
                at(0.5),
                at(0.95)
            );
        }
    }
}
