//! The documents a newcomer touches stay true: the example config, `init`, the demo, the README.

use crate::harness::Test;

/// Every variable the example pins.toml names, set to a dummy value.
fn example_env(test: Test) -> Test {
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OPENROUTER_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "SMTP_USER",
        "SMTP_PASSWORD",
    ]
    .iter()
    .fold(test, |t, var| t.env(var, "dummy"))
}

#[test]
fn init_writes_the_example_which_loads() {
    let test = example_env(Test::new());
    test.run(&["init"]).code(0);
    for name in [
        "pins.toml",
        "probes/arith.toml",
        "probes/capital.toml",
        "probes/json.toml",
        "probes/haiku.toml",
        "probes/prime-91.toml",
        "probes/prime-97.toml",
    ] {
        assert!(test.path(name).exists(), "{name} written");
    }
    assert_eq!(test.read("pins.toml"), include_str!("../../pins.toml"));
    // Writing again refuses to clobber the user's files.
    let again = test.run(&["init"]);
    again.code(2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    test.run(&["init", "--force"]).code(0);
}

#[test]
fn repository_pins_toml_and_every_probe_load() {
    let root = env!("CARGO_MANIFEST_DIR");
    let env = |name: &str| Some(format!("dummy-{name}"));
    let config = modelpin::config::load(&std::path::Path::new(root).join("pins.toml"), &env)
        .expect("example config loads");
    assert!(config.pins.len() >= 5, "pins from the major providers");
    let kinds: std::collections::BTreeSet<_> =
        config.providers.iter().map(|p| p.endpoint.kind).collect();
    assert_eq!(kinds.len(), 6, "every provider kind is shown");
    let files = std::fs::read_dir(std::path::Path::new(root).join("probes"))
        .unwrap()
        .count();
    assert_eq!(
        config.probes.len(),
        files,
        "every file under probes/ loads as a probe"
    );
}

#[test]
fn demo_catches_both_reroutes() {
    let run = Test::new().run(&["demo"]);
    run.code(0);
    for needle in [
        "served_model_mismatch",
        "tokenizer_changed",
        "cost_changed",
        "both reroutes caught",
    ] {
        assert!(
            run.stdout.contains(needle),
            "demo output lacks {needle}:\n{}",
            run.stdout
        );
    }
}

#[test]
fn readme_commands_are_the_real_ones() {
    let readme = include_str!("../../README.md");
    assert!(readme.contains("cargo run --release -- demo"));
    let ci = include_str!("../../.ci/run");
    let test_command = readme
        .lines()
        .find(|l| l.trim_start().starts_with("cargo test"))
        .expect("README names the test command")
        .split('#')
        .next()
        .unwrap_or_default()
        .trim();
    assert!(
        ci.contains(test_command),
        ".ci/run runs the README's test command `{test_command}`"
    );
}
