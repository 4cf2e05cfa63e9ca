//! Shell completions, the manual page and `--color`/NO_COLOR, through the real binary.

use std::fmt::Write as _;
use std::process::Command;

use modelpin::provider::ProviderKind;

use crate::harness::{Test, one_pin_with};

fn modelpin() -> String {
    assert_cmd::cargo::cargo_bin("modelpin")
        .display()
        .to_string()
}

/// What bash completes for `words` (the last is the word being completed) with the script
/// `modelpin completions bash` prints loaded, run in `dir`.
fn bash_completes(dir: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <('{}' completions bash) && complete -p modelpin >/dev/null && COMP_WORDS=({}) && COMP_CWORD={} && COMP_TYPE=9 && _clap_complete_modelpin modelpin '{}' '{}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        modelpin(),
        quoted.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let out = Command::new("bash")
        .current_dir(dir)
        .env_remove("MODELPIN_CONFIG")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completion_script_loads_and_completes_subcommands() {
    let run = Test::new().run(&["completions", "bash"]);
    run.code(0);
    assert!(
        run.stdout.contains("_clap_complete_modelpin()"),
        "{}",
        run.stdout
    );
    let test = Test::new();
    let got = bash_completes(test.dir.path(), &["modelpin", "che"]);
    assert_eq!(got, ["check"], "`che` completes to check");
}

#[test]
fn pin_completes_from_the_pin_ids_of_pins_toml_as_they_are_now() {
    let pins = |ids: &[&str]| {
        let mut text = one_pin_with(
            "",
            ProviderKind::OpenAi,
            "https://api.example.com/v1",
            "m",
            "",
        );
        for id in ids {
            let _ = write!(
                text,
                "\n[[pin]]\nid = \"{id}\"\nprovider = \"p\"\nmodel = \"m\"\nprobes = [\"probes/*.toml\"]\n"
            );
        }
        text
    };
    let test = Test::new().pins(&pins(&["support-bot", "summariser", "router"]));
    for command in ["check", "lock", "history"] {
        let got = bash_completes(test.dir.path(), &["modelpin", command, "--pin", "s"]);
        assert_eq!(got, ["support-bot", "summariser"], "{command} --pin s");
    }
    let all = bash_completes(test.dir.path(), &["modelpin", "check", "--pin", ""]);
    assert_eq!(all, ["pin", "support-bot", "summariser", "router"]);
    // Read at completion time: an edited pins.toml completes its new ids at once.
    std::fs::write(test.path("pins.toml"), pins(&["extractor"])).unwrap();
    let got = bash_completes(test.dir.path(), &["modelpin", "check", "--pin", "e"]);
    assert_eq!(got, ["extractor"]);
    // No pins.toml: no candidates, and no file names either.
    let empty = Test::new().file("stray.txt", "x");
    let got = bash_completes(empty.dir.path(), &["modelpin", "check", "--pin", ""]);
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn zsh_and_fish_completions_ask_modelpin_itself() {
    for (shell, marker) in [("zsh", "#compdef modelpin"), ("fish", "complete ")] {
        let run = Test::new().run(&["completions", shell]);
        run.code(0);
        assert!(run.stdout.contains(marker), "{shell}: {}", run.stdout);
        assert!(
            run.stdout.contains("MODELPIN_COMPLETE"),
            "{shell}: {}",
            run.stdout
        );
    }
    let bad = Test::new().run(&["completions", "tcsh"]);
    bad.code(2);
}

#[test]
fn man_page_has_the_usual_sections_and_renders() {
    let run = Test::new().run(&["man"]);
    run.code(0);
    for section in [
        ".TH modelpin 1",
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH OPTIONS",
        ".SH SUBCOMMANDS",
    ] {
        assert!(run.stdout.contains(section), "{section}\n{}", run.stdout);
    }
    assert!(run.stdout.contains("\\-\\-color"), "{}", run.stdout);
    let page = Test::new().file("modelpin.1", &run.stdout);
    match Command::new("man")
        .arg("-l")
        .arg(page.path("modelpin.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
    {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                text.contains("SYNOPSIS") && text.contains("modelpin-check"),
                "{text}"
            );
        }
        Err(_) => {
            eprintln!("notice: man not installed; the page was checked for its sections only");
        }
    }
}

/// A daemon that logs one line and stops: `--reset-store` with no store logs at INFO, then the
/// listener's port is taken.
fn daemon_log(color: &[&str], env: &[(&str, &str)]) -> String {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let settings = format!("metrics = \"127.0.0.1:{port}\"\nstore = \"store\"");
    let mut test = Test::new()
        .pins(&one_pin_with(
            &settings,
            ProviderKind::OpenAi,
            "http://127.0.0.1:9/v1",
            "gpt-4o-2024-08-06",
            "",
        ))
        .file("probes/arith.toml", crate::harness::ARITH);
    for (k, v) in env {
        test = test.env(k, v);
    }
    let mut args = color.to_vec();
    args.extend(["daemon", "--reset-store"]);
    let run = test.run(&args);
    run.code(2);
    assert!(run.stderr.contains("no store to reset"), "{}", run.stderr);
    drop(taken);
    run.stderr
}

#[test]
fn color_flag_and_no_color_decide_whether_the_log_has_escape_codes() {
    assert!(daemon_log(&["--color", "always"], &[]).contains("\u{1b}["));
    assert!(!daemon_log(&["--color", "never"], &[]).contains('\u{1b}'));
    assert!(
        !daemon_log(&[], &[]).contains('\u{1b}'),
        "auto: not a terminal"
    );
    assert!(
        daemon_log(&["--color", "always"], &[("NO_COLOR", "1")]).contains("\u{1b}["),
        "an explicit --color always wins over NO_COLOR"
    );
    assert!(!daemon_log(&["--color", "auto"], &[("NO_COLOR", "1")]).contains('\u{1b}'));
}

#[test]
fn color_flag_decides_the_help_and_usage_errors_too() {
    let test = Test::new();
    let help = |args: &[&str]| {
        let run = test.run(args);
        run.code(0);
        run.stdout
    };
    assert!(help(&["--color", "always", "--help"]).contains("\u{1b}["));
    assert!(help(&["check", "--help", "--color=always"]).contains("\u{1b}["));
    assert!(!help(&["--color", "never", "--help"]).contains('\u{1b}'));
    assert!(
        !help(&["--help"]).contains('\u{1b}'),
        "auto: not a terminal"
    );
    let error = test.run(&["--color", "always", "chekc"]);
    error.code(2);
    assert!(error.stderr.contains("\u{1b}["), "{}", error.stderr);
    assert!(
        error.stderr.contains("check"),
        "a suggestion: {}",
        error.stderr
    );
    let plain = test.run(&["--color", "never", "chekc"]);
    plain.code(2);
    assert!(!plain.stderr.contains('\u{1b}'), "{}", plain.stderr);
}
