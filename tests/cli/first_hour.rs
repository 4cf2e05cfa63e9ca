//! What a new user trips over in the first hour, each at the CLI: plans that cannot exhaust the
//! machine, providers that hang, and output that says what to do next.

use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::FaultKind;

use crate::harness::{ARITH, Sim, Test, one_pin_with};
use crate::world::{fault, model, single};

const ID: &str = "acme-large-2024-08-06";

#[test]
fn a_hanging_provider_stops_after_the_first_call_and_the_log_shows_progress() {
    let sim = Sim::start(fault(
        single(ID, model(ID, 4.0, (1.0, 2.0))),
        ID,
        None,
        FaultKind::Hang,
    ));
    let test = Test::new()
        .pins(&one_pin_with(
            "timeout = \"3s\"\nbudget = \"120s\"",
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 5",
        ))
        .probes()
        .file("modelpin.lock", &crate::baseline::bare_lock(&[("pin", ID)]));
    let started = Instant::now();
    let run = test.run(&["check", "--format", "json"]);
    let took = started.elapsed();
    run.code(3);
    // 4 attempts of the first call, then nothing more: not 10 calls x 4 attempts x 3 s.
    assert_eq!(sim.requests(), 4, "{}", run.stderr);
    assert!(took < Duration::from_secs(25), "{took:?}");
    let report = run.json();
    let finding = report.pin("pin").finding("inconclusive");
    let reasons = finding.evidence.to_string();
    assert!(reasons.contains("did not answer"), "{reasons}");
    // Off a terminal a plain progress line appears every 10 s.
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("check [") && l.contains("0/10 calls") && l.contains("pin")),
        "{}",
        run.stderr
    );
}

#[test]
fn samples_in_pins_toml_have_the_flags_bound() {
    let test = Test::new()
        .pins(&one_pin_with(
            "",
            ProviderKind::OpenAi,
            "https://api.example.com/v1",
            ID,
            "samples = 100000000",
        ))
        .file("probes/arith.toml", ARITH);
    let run = test.run(&["check"]);
    run.code(2);
    assert!(
        run.stderr.contains("`samples` is 100000000; at most 10000"),
        "{}",
        run.stderr
    );
}

/// Peak RSS (`VmHWM`, KiB) of a `check` of `samples` per probe, read once the simulator has
/// seen `after` calls, then interrupted.
#[cfg(target_os = "linux")]
fn peak_rss_kib(samples: u32, after: usize) -> u64 {
    let mut slow = model(ID, 4.0, (0.0, 0.0));
    slow.latency_ms = 100;
    let sim = Sim::start(single(ID, slow));
    let test = Test::new()
        .pins(&one_pin_with(
            "concurrency = 4",
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            &format!("samples = {samples}"),
        ))
        .probes()
        .file("modelpin.lock", &crate::baseline::bare_lock(&[("pin", ID)]));
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("modelpin"));
    cmd.current_dir(test.dir.path())
        .args(["check", "--format", "json", "--yes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (k, v) in test.envs() {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn");
    let started = Instant::now();
    while sim.requests() < after && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[cfg(target_os = "linux")]
#[test]
fn memory_stays_flat_in_the_number_of_planned_calls() {
    let small = peak_rss_kib(10, 12);
    let large = peak_rss_kib(10_000, 12);
    eprintln!("peak RSS: samples 10 -> {small} KiB, samples 10000 -> {large} KiB");
    // 2,000 times the plan, the same calls in flight: within a few MiB of each other.
    assert!(
        large < small + 4 * 1024,
        "samples 10: {small} KiB, samples 10000: {large} KiB"
    );
}

#[test]
fn history_refuses_an_unknown_pin_and_creates_no_store() {
    let test = Test::new()
        .pins(&one_pin_with(
            "metrics = \"127.0.0.1:1\"",
            ProviderKind::OpenAi,
            "https://api.example.com/v1",
            ID,
            "",
        ))
        .file("probes/arith.toml", ARITH);
    let run = test.run(&["history", "--pin", "nope"]);
    run.code(2);
    assert!(run.stderr.contains("no pin `nope`"), "{}", run.stderr);
    let run = test.run(&["history"]);
    run.code(0);
    assert!(run.stdout.contains("no audits"), "{}", run.stdout);
    assert!(!test.path(".modelpin").exists(), "history created a store");
}

#[test]
fn check_notify_with_a_dead_channel_says_it_was_not_delivered() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let dead = crate::support::ports::ClosedPort::new();
    let pins = one_pin_with(
        "timeout = \"3s\"\nbudget = \"20s\"",
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "samples = 1",
    ) + &format!(
        "\n[alerts.hook]\nkind = \"webhook\"\nurl = \"{}\"\n",
        dead.url("/hook")
    );
    let test = Test::new().pins(&pins).probes();
    test.run(&["lock"]).code(0);
    sim.set(single(ID, model("acme-small-2025-01-01", 2.0, (1.0, 2.0))));
    let started = Instant::now();
    let run = test.run(&["check", "--notify"]);
    run.code(1);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        run.stderr.contains("NOT delivered") && run.stderr.contains("`hook`"),
        "{}",
        run.stderr
    );
}

#[test]
fn rules_are_checked_at_load_with_the_place_and_a_way_out() {
    let pins = one_pin_with(
        "",
        ProviderKind::OpenAi,
        "https://api.example.com/v1",
        ID,
        "",
    );
    let bad_regex = ARITH.replace("equals = \"391\"", "regex = \"^(391\"");
    let run = Test::new()
        .pins(&pins)
        .file("probes/arith.toml", &bad_regex)
        .run(&["check"]);
    run.code(2);
    assert!(
        run.stderr.contains("`regex` is not a valid pattern") && run.stderr.contains("^^^"),
        "{}",
        run.stderr
    );
    let keyed = pins.replace(
        "https://api.example.com/v1",
        "https://api.example.com/v1?key=sk-live-abc123",
    );
    let run = Test::new()
        .pins(&keyed)
        .file("probes/arith.toml", ARITH)
        .run(&["check"]);
    run.code(2);
    assert!(
        run.stderr.contains("`base_url` has a query"),
        "{}",
        run.stderr
    );
    let mut latin1 = pins.clone().into_bytes();
    latin1.extend_from_slice(b"# caf\xe9\n");
    let test = Test::new().file("probes/arith.toml", ARITH);
    std::fs::write(test.path("pins.toml"), &latin1).unwrap();
    let run = test.run(&["check"]);
    run.code(2);
    let line = pins.lines().count() + 1;
    assert!(
        run.stderr.contains(&format!("byte 0xe9 at {line}:6")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_corrupt_lock_is_replaced_by_lock_and_kept_aside() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = Test::new()
        .pins(&one_pin_with(
            "",
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "",
        ))
        .probes()
        .file("modelpin.lock", "{ not json");
    let run = test.run(&["check"]);
    run.code(2);
    assert!(
        run.stderr.starts_with("error: ") && run.stderr.contains("`modelpin lock`"),
        "{}",
        run.stderr
    );
    let run = test.run(&["lock"]);
    run.code(0);
    assert!(run.stderr.contains("was unreadable"), "{}", run.stderr);
    let kept = std::fs::read_dir(test.dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("modelpin.lock.unreadable-")
        })
        .expect("the old bytes are kept");
    assert_eq!(std::fs::read_to_string(kept.path()).unwrap(), "{ not json");
    test.run(&["check"]).code(0);
}

#[test]
fn a_narrow_terminal_gets_one_block_per_pin_and_singular_words() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = Test::new()
        .pins(&one_pin_with(
            "",
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 1",
        ))
        .probes();
    test.run(&["lock"]).code(0);
    let wide = test.run(&["check"]);
    wide.code(0);
    assert!(wide.stdout.contains("PIN  "), "{}", wide.stdout);
    assert!(wide.stdout.contains("\n1 pin: 1 ok"), "{}", wide.stdout);
    let narrow = test.env("COLUMNS", "40").run(&["check"]);
    narrow.code(0);
    assert!(
        !narrow.stdout.contains("PIN  ") && narrow.stdout.contains("\n  provider: p\n"),
        "{}",
        narrow.stdout
    );
}

#[test]
fn a_pin_without_probes_is_refused_before_any_call() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let pins = one_pin_with(
        "",
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "",
    )
    .replace("probes = [\"probes/*.toml\"]", "probes = []");
    let test = Test::new().pins(&pins);
    for command in ["lock", "check"] {
        let run = test.run(&[command]);
        run.code(2);
        assert!(run.stderr.contains("names no probes"), "{}", run.stderr);
    }
    assert_eq!(sim.requests(), 0);
    assert!(!test.path("modelpin.lock").exists());
}

/// Runs `modelpin args` on a pseudo-terminal (util-linux `script`) with `answer` typed in.
#[cfg(unix)]
fn on_a_terminal(test: &Test, args: &str, answer: &str) -> Option<(i32, String)> {
    use std::io::Write as _;
    let bin = assert_cmd::cargo::cargo_bin("modelpin");
    let mut cmd = std::process::Command::new("script");
    cmd.current_dir(test.dir.path())
        .args(["-qec", &format!("{} {args}", bin.display()), "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in test.envs() {
        cmd.env(k, v);
    }
    let Ok(mut child) = cmd.spawn() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "`script` (util-linux) is required in CI"
        );
        eprintln!("notice: `script` is not installed; skipping this test");
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

#[cfg(unix)]
#[test]
fn a_large_plan_asks_on_a_terminal_and_yes_skips_the_question() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (0.0, 0.0))));
    let test = Test::new()
        .pins(&one_pin_with(
            "",
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 275", // a lock asks 4 × as many: 2,200 calls over two probes
        ))
        .probes();
    let Some((code, screen)) = on_a_terminal(&test, "lock", "n\n") else {
        return;
    };
    assert!(
        screen.contains("2200 calls planned") && screen.contains("Proceed? [y/N]"),
        "{screen}"
    );
    assert!(screen.contains("not confirmed"), "{screen}");
    assert_eq!(code, 2, "{screen}");
    assert_eq!(sim.requests(), 0);
    let (code, screen) = on_a_terminal(&test, "-q lock --yes", "").unwrap();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(sim.requests(), 2200);
}
