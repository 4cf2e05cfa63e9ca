//! `modelpin man`: a page for every command modelpin(1) points at, each with EXIT STATUS,
//! ENVIRONMENT and FILES, printable one at a time, all at once, or written out for installing.

use std::process::Command;

use crate::harness::Test;

/// The pages modelpin(1)'s SUBCOMMANDS section names: `modelpin\-check(1)` → `check`.
fn pages_named(root: &str) -> Vec<String> {
    root.lines()
        .filter_map(|l| l.strip_prefix("modelpin\\-")?.strip_suffix("(1)"))
        .map(|name| name.replace("\\-", "-"))
        .collect()
}

#[test]
fn every_page_modelpin_1_points_at_exists_with_exit_status_environment_and_files() {
    let root = Test::new().run(&["man"]);
    root.code(0);
    let named = pages_named(&root.stdout);
    for command in [
        "init", "lock", "check", "daemon", "traffic", "scan", "man", "alerts",
    ] {
        assert!(named.iter().any(|n| n == command), "{command} in {named:?}");
    }
    for name in named.iter().map(String::as_str).chain(["alerts-test"]) {
        let page = Test::new().run(&["man", name]);
        page.code(0);
        assert!(
            page.stdout.contains(&format!(".TH modelpin-{name} 1")),
            "{name}: {}",
            page.stdout
        );
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
        ] {
            assert!(page.stdout.contains(section), "{name} lacks {section}");
        }
    }
    for section in [
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        ".SH FILES",
        "MODELPIN_CONFIG",
        "modelpin.lock",
    ] {
        assert!(root.stdout.contains(section), "modelpin(1) lacks {section}");
    }
    let check = Test::new().run(&["man", "check"]).stdout;
    let exit = check.split(".SH \"EXIT STATUS\"").nth(1).unwrap();
    assert!(
        exit.contains("inconclusive") && exit.contains("drift"),
        "{exit}"
    );
    let unknown = Test::new().run(&["man", "nope"]);
    unknown.code(2);
    assert!(
        unknown.stderr.contains("pages: init, lock, check"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn man_all_prints_every_page_and_out_dir_writes_them_for_man_to_find() {
    let all = Test::new().run(&["man", "--all"]);
    all.code(0);
    let titles = all.stdout.lines().filter(|l| l.starts_with(".TH ")).count();
    let named = pages_named(&Test::new().run(&["man"]).stdout).len();
    // modelpin(1), one per subcommand, alerts test beneath alerts and store copy beneath store.
    assert_eq!(titles, 1 + named + 2, "{}", all.stdout);

    let test = Test::new();
    test.run(&["man", "--out-dir", "man1"]).code(0);
    for file in [
        "modelpin.1",
        "modelpin-check.1",
        "modelpin-alerts-test.1",
        "modelpin-store-copy.1",
    ] {
        assert!(test.path(&format!("man1/{file}")).is_file(), "{file}");
    }
    let Ok(out) = Command::new("man")
        .arg("-l")
        .arg(test.path("man1/modelpin-check.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
    else {
        eprintln!("notice: man not installed; the pages were checked for their sections only");
        return;
    };
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for part in ["EXIT STATUS", "ENVIRONMENT", "FILES", "modelpin check"] {
        assert!(shown.contains(part), "{part}: {shown}");
    }
}
