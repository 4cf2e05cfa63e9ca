//! `modelpin.lock` as a file a user (or Git) may have damaged: bounds on what is read, merge
//! conflicts, baselines kept when one pin is re-locked, and the writers' guard; and as a file a
//! reviewer reads: the version 3 layout (the contract, then one compressed line per probe), a
//! one-probe change as a few changed lines, version 2 locks read and rewritten, damaged or
//! miscounted sample blobs refused by name.

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{AnswerRule, SimModel};
use serde_json::{Value, json};

use crate::harness::{ARITH, SETTINGS, Sim, Test, one_pin_with};
use crate::support::lockfile::{pack, pack_bytes, unpack};
use crate::support::pins::Pins;
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

fn lock_json(test: &Test) -> Value {
    serde_json::from_str(&test.read("modelpin.lock")).unwrap()
}

fn write_lock(test: &Test, lock: &Value) {
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
    let blob = &mut lock["samples"]["pin"]["probes"]["arith"];
    let mut samples = unpack(blob);
    samples["outputs"] = json!(vec!["391"; 200_000]);
    samples["completion_tokens"] = json!(vec![1; 200_000]);
    *blob = pack(&samples);
    // The contract counts them too, so the file is consistent and only the bound refuses it.
    lock["pins"]["pin"]["probes"]["arith"]["samples"] = 200_000.into();
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
    let blob = &mut lock["samples"]["pin2"]["probes"]["arith"];
    let mut samples = unpack(blob);
    samples["outputs"][0] = "x".repeat(20_000).into();
    *blob = pack(&samples);
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

/// The lock with `pin`'s served model count in conflict: ours 8 (4 × `samples`), theirs 9.
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
            .position(|l| l.contains(&format!("\"{ID}\": 8")))
            .unwrap();
    let theirs = lines[at].replace(": 8", ": 9");
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
    let before = lock_json(&test);
    let (pin2_before, pin2_samples_before) = (&before["pins"]["pin2"], &before["samples"]["pin2"]);
    assert!(pin2_samples_before["probes"]["arith"].is_string());
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
        &lock["pins"]["pin2"], pin2_before,
        "pin2's baseline was kept"
    );
    assert_eq!(
        &lock["samples"]["pin2"], pin2_samples_before,
        "pin2's samples were kept"
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

fn rule(prompt: &str, answers: &[&str]) -> AnswerRule {
    AnswerRule {
        prompt_contains: prompt.into(),
        answers: answers.iter().map(|a| ((*a).to_owned(), 1.0)).collect(),
    }
}

/// The simulated model, with short varied answers (one token each) to more of the first-token
/// tier's built-in candidates than a lock keeps: the tier holds as many inputs as it may.
fn bordered() -> SimModel {
    let mut m = model(ID, 4.0, (1.0, 2.0));
    m.answers.extend([
        rule("Name a color.", &["Red", "Blue", "Teal", "Gold"]),
        rule("Name an animal.", &["Cat", "Dog", "Owl", "Fox"]),
        rule("Name a fruit.", &["Fig", "Kiwi", "Lime", "Pear"]),
        rule("Pick a number", &["3", "7", "5", "2"]),
        rule("Say one word.", &["Hi", "Yes", "Ok", "Go"]),
        rule("Name a country.", &["Peru", "Chad", "Iran", "Cuba"]),
        rule("Name a city.", &["Rome", "Oslo", "Lima", "Kyiv"]),
        rule("Pick a letter", &["A", "B", "C", "E"]),
        rule("Name a month.", &["May", "June", "July", "Mar"]),
    ]);
    m
}

/// One pin `pin` on `sim` with the first-token tier on and 10 samples a probe, no probe yet.
fn tiered(sim: &Sim) -> Test {
    Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .short()
        .each_pin("first_tokens", true)
        .each_pin("samples", 10)
        .test()
}

#[test]
fn a_lock_is_version_3_a_short_contract_then_one_line_of_samples_per_probe() {
    let sim = Sim::start(single(ID, bordered()));
    // The six probes `modelpin init` writes.
    let test = modelpin::cmd::init::EXAMPLE
        .iter()
        .filter(|(name, _)| name.starts_with("probes/"))
        .fold(tiered(&sim), |project, (name, probe)| {
            project.file(name, probe)
        })
        .locked();
    let written = test.read("modelpin.lock");
    let lock: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(lock["lock_version"], 3, "{written}");
    let pin = &lock["pins"]["pin"];
    let probes = pin["probes"].as_object().unwrap();
    assert_eq!(probes.len(), 6, "{written}");
    let inputs = pin["first_tokens"]["inputs"].as_object().unwrap();
    assert_eq!(
        inputs.len(),
        8,
        "as many tier inputs as a lock keeps: {written}"
    );

    let contract = &written[..written
        .find("\n  \"samples\": {")
        .expect("the samples follow the contract")];
    let lines = contract.lines().count();
    assert!(lines < 200, "the contract is {lines} lines:\n{contract}");
    for word in [
        "\"outputs\"",
        "\"completion_tokens\"",
        "\"tokens\"",
        "\"top\"",
    ] {
        assert!(!written.contains(word), "{word} is inline:\n{written}");
    }

    let blobs = &lock["samples"]["pin"];
    let on_one_line = |name: &str, blob: &Value| {
        let line = format!("\"{name}\": \"{}\"", blob.as_str().unwrap());
        assert!(
            written
                .lines()
                .any(|l| l.trim().trim_end_matches(',') == line),
            "the samples of {name} are one line:\n{written}"
        );
    };
    let probe_blobs = blobs["probes"].as_object().unwrap();
    assert_eq!(
        probe_blobs.keys().collect::<Vec<_>>(),
        probes.keys().collect::<Vec<_>>()
    );
    for (name, blob) in probe_blobs {
        on_one_line(name, blob);
        let samples = unpack(blob);
        // A lock asks each probe 4 × the pin's `samples` (10).
        assert_eq!(samples["outputs"].as_array().unwrap().len(), 40, "{name}");
        assert_eq!(samples["completion_tokens"].as_array().unwrap().len(), 40);
        assert_eq!(probes[name]["samples"], 40, "{name}");
    }
    let input_blobs = blobs["first_tokens"].as_object().unwrap();
    assert_eq!(
        input_blobs.keys().collect::<Vec<_>>(),
        inputs.keys().collect::<Vec<_>>()
    );
    for (id, blob) in input_blobs {
        on_one_line(id, blob);
        let samples = unpack(blob);
        let calls = inputs[id]["calls"].as_u64().unwrap();
        assert_eq!(samples["tokens"].as_array().unwrap().len() as u64, calls);
        assert_eq!(samples["top"].as_array().unwrap().len() as u64, calls);
    }
}

const SKY: &str = r#"id = "sky"
prompt = "What color is a clear sky at noon? Reply with one word."
max_tokens = 8
temperature = 1.0
compare = "choice"
"#;

/// The indexes of the lines of `old` and of `new` outside their longest common subsequence:
/// the lines a line diff shows removed and added.
fn line_diff(old: &[&str], new: &[&str]) -> (Vec<usize>, Vec<usize>) {
    let mut common = vec![vec![0_usize; new.len() + 1]; old.len() + 1];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            common[i][j] = if old[i] == new[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    while i < old.len() && j < new.len() {
        if old[i] == new[j] {
            i += 1;
            j += 1;
        } else if common[i + 1][j] >= common[i][j + 1] {
            removed.push(i);
            i += 1;
        } else {
            added.push(j);
            j += 1;
        }
    }
    removed.extend(i..old.len());
    added.extend(j..new.len());
    (removed, added)
}

/// The keys leading to line `at` of pretty-printed JSON, outermost first; the line's own key
/// last when it has one (array items and closing brackets have none).
fn path_of(lines: &[&str], at: usize) -> Vec<String> {
    let indent = |line: &str| line.len() - line.trim_start().len();
    let key = |line: &str| {
        let rest = line.trim_start().strip_prefix('"')?;
        rest.find("\": ").map(|end| rest[..end].to_owned())
    };
    let mut path: Vec<String> = key(lines[at]).into_iter().collect();
    let mut depth = indent(lines[at]);
    for line in lines[..at].iter().rev() {
        if depth == 0 {
            break;
        }
        if indent(line) < depth {
            depth = indent(line);
            path.extend(key(line));
        }
    }
    path.reverse();
    path
}

#[test]
fn changing_one_probe_changes_only_its_own_lines_of_the_lock() {
    // Both probes' answers are certain ("391", "Blue"): a re-lock records the same samples for
    // the same prompt, so any other changed line would be the layout's doing.
    let mut m = model(ID, 4.0, (1.0, 2.0));
    m.answers.push(rule("clear sky", &["Blue"]));
    let sim = Sim::start(single(ID, m));
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .short()
        .each_pin("samples", 5)
        .project()
        .file("probes/sky.toml", SKY)
        .locked();
    let before = test.read("modelpin.lock");
    test.run(&["lock"]).code(0);
    assert_eq!(
        test.read("modelpin.lock"),
        before,
        "the same answers lock to the same bytes"
    );

    let reworded = ARITH.replace(
        "What is 17 * 23? Reply with the number only.",
        "Compute 17 * 23 and reply with the number only, please.",
    );
    let test = test.file("probes/arith.toml", &reworded);
    test.run(&["lock"]).code(0);
    let after = test.read("modelpin.lock");
    let (old, new): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let (removed, added) = line_diff(&old, &new);
    let changed: Vec<(Vec<String>, &str)> = removed
        .iter()
        .map(|&i| (path_of(&old, i), old[i]))
        .chain(added.iter().map(|&i| (path_of(&new, i), new[i])))
        .collect();
    let shown: Vec<String> = changed.iter().map(|(_, l)| (*l).to_owned()).collect();
    let shown = shown.join("\n");
    assert!(
        !changed.is_empty() && changed.len() <= 10,
        "{} changed lines:\n{shown}",
        changed.len()
    );
    let arith = |path: &[String]| {
        ["pins", "samples"].iter().any(|top| {
            path.starts_with(&[(*top).into(), "pin".into(), "probes".into(), "arith".into()])
        })
    };
    // The config's digest covers the probe files, so it moves with the prompt; nothing else may.
    for (path, line) in &changed {
        assert!(
            arith(path) || path == &["config_digest"],
            "{line} ({path:?}) is no line of the changed probe:\n{shown}"
        );
    }
    assert!(
        removed
            .iter()
            .any(|&i| path_of(&old, i).ends_with(&["arith".into(), "digest".into()])),
        "the probe's digest changed:\n{shown}"
    );
    let (old, new): (Value, Value) = (
        serde_json::from_str(&before).unwrap(),
        serde_json::from_str(&after).unwrap(),
    );
    assert_eq!(
        old["pins"]["pin"]["probes"]["sky"],
        new["pins"]["pin"]["probes"]["sky"]
    );
    assert_eq!(
        old["samples"]["pin"]["probes"]["sky"],
        new["samples"]["pin"]["probes"]["sky"]
    );
    assert_ne!(
        old["pins"]["pin"]["probes"]["arith"]["digest"],
        new["pins"]["pin"]["probes"]["arith"]["digest"]
    );
}

/// `lock` in the layout of version 2: each probe's and tier input's samples inline in its entry,
/// without the counts, and no `samples` object.
fn as_version_2(lock: &Value) -> Value {
    let mut old = lock.clone();
    let samples = old.as_object_mut().unwrap().remove("samples").unwrap();
    old["lock_version"] = 2.into();
    for (id, pin) in old["pins"].as_object_mut().unwrap() {
        for (name, probe) in pin["probes"].as_object_mut().unwrap() {
            let probe = probe.as_object_mut().unwrap();
            probe.remove("samples").expect("a count");
            let held = unpack(&samples[id]["probes"][name]);
            probe.extend(held.as_object().unwrap().clone());
        }
        let inputs = pin["first_tokens"]["inputs"].as_object_mut().unwrap();
        for (input_id, input) in inputs {
            let input = input.as_object_mut().unwrap();
            input.remove("calls").expect("a count");
            let held = unpack(&samples[id]["first_tokens"][input_id]);
            input.extend(held.as_object().unwrap().clone());
        }
    }
    old
}

#[test]
fn a_version_2_lock_is_read_and_the_next_lock_writes_version_3() {
    let sim = Sim::start(single(ID, bordered()));
    let test = tiered(&sim).probes().locked();
    let v2 = as_version_2(&lock_json(&test));
    let probe = &v2["pins"]["pin"]["probes"]["arith"];
    assert_eq!(probe["outputs"].as_array().unwrap().len(), 40, "{v2}");
    let inputs = v2["pins"]["pin"]["first_tokens"]["inputs"]
        .as_object()
        .unwrap();
    assert!(!inputs.is_empty(), "{v2}");
    assert!(
        inputs
            .values()
            .all(|i| i["tokens"].as_array().unwrap().len() == 160)
    );
    write_lock(&test, &v2);
    let written = test.read("modelpin.lock");

    let check = test.run(&["check", "--format", "json"]);
    check.code(0);
    let report = check.json();
    let tests: Vec<&str> = report
        .pin("pin")
        .behaviour
        .iter()
        .map(|t| t.test.as_str())
        .collect();
    assert!(
        tests.contains(&"first_tokens"),
        "the tier's baseline was read: {tests:?}"
    );
    assert_eq!(test.read("modelpin.lock"), written, "check writes no lock");

    test.run(&["lock"]).code(0);
    let lock = lock_json(&test);
    assert_eq!(lock["lock_version"], 3);
    assert_eq!(lock["pins"]["pin"]["probes"]["arith"]["samples"], 40);
    assert!(
        lock["pins"]["pin"]["probes"]["arith"]
            .get("outputs")
            .is_none()
    );
    let samples = unpack(&lock["samples"]["pin"]["probes"]["arith"]);
    assert_eq!(samples["outputs"], json!(vec!["391"; 40]));
}

#[test]
fn a_damaged_sample_blob_is_refused_naming_its_pin_and_probe() {
    let (_sim, test) = two_locked_pins();
    let good = lock_json(&test);
    for (blob, why) in [
        (json!("not base64!"), "not base64"),
        // "hello world": base64, but no DEFLATE stream.
        (json!("aGVsbG8gd29ybGQ="), "not DEFLATE data"),
        (pack_bytes(b"[1, 2, 3]"), "not the samples modelpin writes"),
    ] {
        let mut lock = good.clone();
        lock["samples"]["pin2"]["probes"]["arith"] = blob;
        write_lock(&test, &lock);
        let run = test.run(&["check"]);
        run.code(2);
        assert!(
            run.stderr
                .contains("modelpin.lock is not a valid modelpin.lock")
                && run
                    .stderr
                    .contains(&format!("pin `pin2`: samples of probe `arith`: {why}"))
                && run
                    .stderr
                    .contains("`modelpin lock` records a fresh baseline"),
            "{}",
            run.stderr
        );
    }
    test.run(&["lock"]).code(0);
    assert_eq!(lock_json(&test)["lock_version"], 3);
    assert!(
        names(&test)
            .iter()
            .any(|n| n.starts_with("modelpin.lock.unreadable-")),
        "the damaged lock is kept aside: {:?}",
        names(&test)
    );
}

#[test]
fn a_blob_holding_fewer_samples_than_its_entry_counts_is_refused_naming_the_probe() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .short()
        .each_pin("samples", 10)
        .locked();
    let mut lock = lock_json(&test);
    assert_eq!(lock["pins"]["pin"]["probes"]["arith"]["samples"], 40);
    let blob = &mut lock["samples"]["pin"]["probes"]["arith"];
    let mut samples = unpack(blob);
    for list in ["outputs", "completion_tokens"] {
        samples[list].as_array_mut().unwrap().pop();
    }
    *blob = pack(&samples);
    write_lock(&test, &lock);
    let run = test.run(&["check"]);
    run.code(2);
    assert!(
        run.stderr.contains(
            "pin `pin`: samples of probe `arith` hold 39 answers and 39 token counts, not the 40 its entry says"
        ) && run
            .stderr
            .contains("`modelpin lock` records a fresh baseline"),
        "{}",
        run.stderr
    );
}
