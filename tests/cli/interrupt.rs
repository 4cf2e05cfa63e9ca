//! Ctrl-C in `lock` and `check`: one note that says what was cut short, with counts that agree
//! with each other, and nothing that reads as if the run had finished.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;

use crate::harness::{Sim, Test, one_pin_with};
use crate::world::{model, single};

const ID: &str = "acme-large-2024-08-06";

/// A project whose provider answers each call after 150 ms, one call at a time: 2 probes × 9
/// samples = 18 calls planned.
fn slow_project() -> (Sim, Test) {
    let mut slow = model(ID, 4.0, (2.5, 10.0));
    slow.latency_ms = 150;
    let sim = Sim::start(single(ID, slow));
    let test = Test::new()
        .pins(&one_pin_with(
            "concurrency = 1\ntimeout = \"5s\"",
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 9",
        ))
        .probes();
    (sim, test)
}

/// Runs `args`, sends SIGINT once the provider has seen `after` calls; exit code and stderr.
fn interrupted(sim: &Sim, test: &Test, args: &[&str], after: usize) -> (i32, String, String) {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("modelpin"));
    cmd.current_dir(test.dir.path())
        .args(args)
        .env_remove("MODELPIN_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in test.envs() {
        cmd.env(k, v);
    }
    let start = sim.requests();
    let child = cmd.spawn().expect("spawn");
    let started = Instant::now();
    while sim.requests() < start + after && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ctrl_c_in_lock_says_only_that_the_lock_was_left_as_it_was() {
    let (sim, test) = slow_project();
    test.run(&["lock", "--samples", "2"]).code(0);
    let before = test.read("modelpin.lock");
    let (code, _, stderr) = interrupted(&sim, &test, &["lock"], 3);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(test.read("modelpin.lock"), before, "left byte for byte");
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("interrupted"))
        .collect();
    assert_eq!(notes.len(), 1, "one note: {stderr}");
    assert!(
        notes[0].contains("modelpin.lock left as it was"),
        "{stderr}"
    );
    assert!(
        notes[0].contains(" of 72 planned calls answered"),
        "{stderr}"
    );
    for finished in ["locked pin", "wrote ", "samples", "baseline too small"] {
        assert!(
            !stderr.contains(finished),
            "nothing reads as finished ({finished}): {stderr}"
        );
    }
}

#[test]
fn ctrl_c_in_check_prints_one_note_whose_counts_agree_with_the_report() {
    let (sim, test) = slow_project();
    test.run(&["lock", "--samples", "2"]).code(0);
    let (code, stdout, stderr) = interrupted(&sim, &test, &["check", "--format", "json"], 3);
    assert_eq!(code, 3, "{stderr}");
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("interrupted") || l.starts_with("note: interrupted"))
        .collect();
    assert_eq!(notes.len(), 1, "one note: {stderr}");
    let report: crate::schema::Report = serde_json::from_str(&stdout).expect("a report");
    let pin = report.pin("pin");
    let finding = pin.finding("inconclusive");
    let answered = pin.calls.ok;
    assert!(answered < 18, "{answered}");
    assert!(
        notes[0].contains(&format!("{answered} of 18 planned calls answered")),
        "the note and the report agree ({answered} ok): {}\n{}",
        notes[0],
        finding.message
    );
    assert!(
        finding.message.contains(&format!(
            "{} of 18 planned calls were not answered",
            18 - answered
        )),
        "{}",
        finding.message
    );
    assert_eq!(
        pin.findings
            .iter()
            .filter(|f| f.code == "inconclusive")
            .count(),
        1,
        "one finding for the missing calls, not one per probe: {:?}",
        pin.findings
    );
    let human = interrupted(&sim, &test, &["check"], 3);
    let notes = human.1.lines().filter(|l| l.contains("note ")).count()
        + human
            .2
            .lines()
            .filter(|l| l.starts_with("interrupted"))
            .count();
    assert_eq!(
        notes, 2,
        "one finding and one note:\n{}\n{}",
        human.1, human.2
    );
}
