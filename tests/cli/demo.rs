//! `modelpin demo` as a newcomer runs it: `-v` shows every evidence line as the demo's own hint
//! says, `--keep DIR` leaves the project behind to look at, and it ends with the next step.

use crate::harness::Test;

#[test]
fn demo_v_shows_every_evidence_line_and_the_default_view_says_how_to_see_them() {
    let plain = Test::new().run(&["demo"]);
    plain.code(0);
    assert!(
        plain.stdout.contains("(`-v` shows all;"),
        "{}",
        plain.stdout
    );
    let verbose = Test::new().run(&["demo", "-v"]);
    verbose.code(0);
    assert!(
        !verbose.stdout.contains("`-v` shows all"),
        "nothing left to show with -v:\n{}",
        verbose.stdout
    );
    assert!(
        verbose.stdout.lines().count() > plain.stdout.lines().count() + 100,
        "-v prints the whole evidence"
    );
    for out in [&plain.stdout, &verbose.stdout] {
        let last = out.trim_end().lines().last().unwrap_or_default();
        assert!(
            last.starts_with("next: `modelpin init`"),
            "it ends with the next step: {last}"
        );
    }
    assert!(
        plain
            .stdout
            .contains("`modelpin demo --keep DIR` keeps them")
    );
}

#[test]
fn demo_keep_leaves_the_project_and_refuses_to_overwrite_one() {
    let test = Test::new();
    let run = test.run(&["demo", "--keep", "tour"]);
    run.code(0);
    for file in [
        "tour/pins.toml",
        "tour/modelpin.lock",
        "tour/probes/arith.toml",
    ] {
        assert!(test.path(file).is_file(), "{file} kept:\n{}", run.stdout);
    }
    assert!(
        run.stdout
            .contains("Its files are in tour: pins.toml, probes/ and modelpin.lock"),
        "{}",
        run.stdout
    );
    let lock = test.read("tour/modelpin.lock");
    let again = test.run(&["demo", "--keep", "tour"]);
    again.code(2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(test.read("tour/modelpin.lock"), lock, "left as it was");
}
