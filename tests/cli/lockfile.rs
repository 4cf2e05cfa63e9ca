//! `modelpin.lock` as a file a user (or Git) may have damaged: bounds on what is read, merge
//! conflicts, baselines kept when one pin is re-locked, and the writers' guard.

use modelpin::provider::ProviderKind;

use crate::harness::{ARITH, SETTINGS, Sim, Test, one_pin_with};
use crate::world::{model, single};

const ID: &str = "acme-pro-001";

/// Two pins, `pin` and `pin2`, on one simulated provider, both locked.
fn two_locked_pins() -> (Sim, Test) {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let one = one_pin_with(
        SETTINGS,
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "samples = 2",
    );
    let second = one[one.find("[[pin]]").unwrap()..].replace("id = \"pin\"", "id = \"pin2\"");
    let test = Test::new()
        .pins(&format!("{one}\n{second}"))
        .file("probes/arith.toml", ARITH);
    test.run(&["lock"]).code(0);
    (sim, test)
}

fn lock_json(test: &Test) -> serde_json::Value {
    serde_json::from_str(&test.read("modelpin.lock")).unwrap()
}

fn write_lock(test: &Test, lock: &serde_json::Value) {
    std::fs::write(
        test.path("modelpin.lock"),
        serde_json::to_string_pretty(lock).unwrap(),
    )
    .unwrap();
}

#[test]
fn a_lock_holding_200k_outputs_is_refused_with_exit_2_not_an_abort() {
    let (_sim, test) = two_locked_pins();
    let mut lock = lock_json(&test);
    let probe = &mut lock["pins"]["pin"]["probes"]["arith"];
    probe["outputs"] = serde_json::json!(vec!["391"; 200_000]);
    probe["completion_tokens"] = serde_json::json!(vec![1; 200_000]);
    write_lock(&test, &lock);
    let run = test.run(&["check"]);
    run.code(2);
    assert!(
        run.stderr
            .contains("modelpin.lock is not a valid modelpin.lock")
            && run
                .stderr
                .contains("probe `arith` holds 200000 outputs, more than the 10000 samples")
            && run
                .stderr
                .contains("`modelpin lock` records a fresh baseline"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_lock_answer_longer_than_the_answer_bound_is_refused() {
    let (_sim, test) = two_locked_pins();
    let mut lock = lock_json(&test);
    lock["pins"]["pin2"]["probes"]["arith"]["outputs"][0] = "x".repeat(20_000).into();
    write_lock(&test, &lock);
    let run = test.run(&["check"]);
    run.code(2);
    assert!(
        run.stderr
            .contains("pin `pin2`: probe `arith` holds an answer of 20000 characters"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_lock_file_larger_than_any_lock_is_refused_before_it_is_read() {
    let (_sim, test) = two_locked_pins();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(test.path("modelpin.lock"))
        .unwrap();
    // Sparse: the size is what matters, not the bytes.
    file.set_len(200 * 1024 * 1024).unwrap();
    let run = test.run(&["check"]);
    run.code(2);
    assert!(
        run.stderr
            .contains("it is 209715200 bytes, more than any lock modelpin writes (128 MiB)"),
        "{}",
        run.stderr
    );
}

/// The lock with `pin`'s served model count in conflict: ours 2, theirs 3.
fn conflicted(test: &Test, pin: &str) -> (String, usize) {
    let written = test.read("modelpin.lock");
    let mut lines: Vec<String> = written.lines().map(str::to_owned).collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&format!("\"{pin}\": {{")))
        .unwrap();
    let at = start
        + lines[start..]
            .iter()
            .position(|l| l.contains(&format!("\"{ID}\": 2")))
            .unwrap();
    let theirs = lines[at].replace(": 2", ": 3");
    let ours = lines[at].clone();
    lines.splice(
        at..=at,
        [
            "<<<<<<< HEAD".to_owned(),
            ours,
            "=======".to_owned(),
            theirs,
            ">>>>>>> other-branch".to_owned(),
        ],
    );
    (lines.join("\n") + "\n", at + 1)
}

#[test]
fn merge_conflict_markers_are_named_with_their_line_and_relocking_one_pin_keeps_the_other() {
    let (_sim, test) = two_locked_pins();
    let pin2_before = lock_json(&test)["pins"]["pin2"].clone();
    let (conflict, line) = conflicted(&test, "pin");
    std::fs::write(test.path("modelpin.lock"), conflict).unwrap();
    let check = test.run(&["check"]);
    check.code(2);
    assert!(
        check.stderr.contains(&format!(
            "modelpin.lock has merge conflict markers at line {line}: resolve them (or run `modelpin lock` to record afresh)"
        )),
        "{}",
        check.stderr
    );
    let relock = test.run(&["lock", "--pin", "pin"]);
    relock.code(0);
    let lock = lock_json(&test);
    assert_eq!(
        lock["pins"]["pin2"], pin2_before,
        "pin2's baseline was kept"
    );
    assert!(lock["pins"]["pin"].is_object());
    assert!(
        relock.stderr.contains("pin, pin2") || relock.stderr.contains("pin2"),
        "{}",
        relock.stderr
    );
}

#[test]
fn relocking_one_pin_refuses_to_drop_a_baseline_the_conflict_sides_disagree_on() {
    let (_sim, test) = two_locked_pins();
    let (conflict, _) = conflicted(&test, "pin2");
    std::fs::write(test.path("modelpin.lock"), &conflict).unwrap();
    let run = test.run(&["lock", "--pin", "pin"]);
    run.code(2);
    assert!(
        run.stderr
            .contains("the baselines of pin2 cannot be read back")
            && run.stderr.contains("`modelpin lock --pin pin --pin pin2`"),
        "{}",
        run.stderr
    );
    assert_eq!(test.read("modelpin.lock"), conflict, "nothing was written");
    test.run(&["lock", "--pin", "pin", "--pin", "pin2"]).code(0);
    assert!(lock_json(&test)["pins"]["pin2"].is_object());
}

#[test]
fn relocking_one_pin_of_a_lock_that_is_not_json_says_what_would_be_lost() {
    let (_sim, test) = two_locked_pins();
    std::fs::write(test.path("modelpin.lock"), "{ not json").unwrap();
    let run = test.run(&["lock", "--pin", "pin"]);
    run.code(2);
    assert!(
        run.stderr
            .contains("`lock --pin` would drop the baselines of every other pin it holds")
            && run.stderr.contains("run `modelpin lock` (every pin)"),
        "{}",
        run.stderr
    );
    assert_eq!(test.read("modelpin.lock"), "{ not json");
    test.run(&["lock"]).code(0);
    let lock = lock_json(&test);
    assert!(lock["pins"]["pin"].is_object() && lock["pins"]["pin2"].is_object());
}

#[cfg(unix)]
#[test]
fn a_guard_symlink_planted_beside_the_lock_is_never_followed() {
    let (_sim, test) = two_locked_pins();
    let victim = test.path("victim");
    std::os::unix::fs::symlink(&victim, test.path("modelpin.lock.guard")).unwrap();
    let before: Vec<String> = names(&test);
    test.run(&["lock", "--pin", "pin"]).code(0);
    assert!(!victim.exists(), "the symlink's target was created");
    assert!(
        test.path("modelpin.lock.guard")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        names(&test),
        before,
        "lock leaves no new file beside the lock"
    );
}

fn names(test: &Test) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(test.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
