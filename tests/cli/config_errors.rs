//! Config errors at the CLI boundary: exit 2 and a diagnostic naming file, line and column with a
//! caret and a hint. The messages are golden: a change to them is a change to the contract.

use crate::harness::Test;

const PROVIDER: &str = r#"version = 1

[providers.openai]
kind = "openai"
api_key_env = "MODELPIN_TEST_KEY"
"#;

const PROBE: &str = "id = \"arith\"\nprompt = \"What is 17 * 23?\"\n";

fn pin(extra: &str) -> String {
    format!(
        "{PROVIDER}\n[[pin]]\nid = \"bot\"\nprovider = \"openai\"\nmodel = \"gpt-4o-2024-08-06\"\nprobes = [\"probes/*.toml\"]\n{extra}"
    )
}

#[track_caller]
fn rejects(pins: &str, files: &[(&str, &str)], want: &str) {
    let mut test = Test::new().pins(pins).file("probes/arith.toml", PROBE);
    for (name, text) in files {
        test = test.file(name, text);
    }
    let mut cmd = assert_cmd::Command::cargo_bin("modelpin").unwrap();
    let output = cmd
        .current_dir(test.dir.path())
        .arg("check")
        .env("MODELPIN_TEST_KEY", "k")
        .env_remove("MODELPIN_UNSET_KEY")
        .env_remove("MODELPIN_CONFIG")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "",
        "nothing on stdout"
    );
    assert_eq!(String::from_utf8_lossy(&output.stderr), want);
}

#[test]
fn unknown_key_suggests_the_nearest() {
    rejects(
        &pin("acept = [\"gpt-4o\"]\n"),
        &[],
        "error: unknown key `acept` in [[pin]]
  --> pins.toml:12:1
   |
12 | acept = [\"gpt-4o\"]
   | ^^^^^
   = help: did you mean `accept`?
",
    );
}

#[test]
fn duplicate_pin_ids() {
    let twice = format!(
        "{}\n[[pin]]\nid = \"bot\"\nprovider = \"openai\"\nmodel = \"gpt-4o-mini-2024-07-18\"\nprobes = [\"probes/*.toml\"]\n",
        pin("")
    );
    rejects(
        &twice,
        &[],
        "error: duplicate pin id `bot`
  --> pins.toml:14:6
   |
14 | id = \"bot\"
   |      ^^^^^
   = note: first defined at pins.toml:8:6
",
    );
}

#[test]
fn unknown_provider() {
    rejects(
        &pin("").replace("provider = \"openai\"", "provider = \"opanai\""),
        &[],
        "error: unknown provider `opanai`
 --> pins.toml:9:12
  |
9 | provider = \"opanai\"
  |            ^^^^^^^^
  = note: known providers: `openai`
  = help: did you mean `openai`?
",
    );
}

#[test]
fn literal_api_key_is_refused_and_masked() {
    rejects(
        "version = 1\n\n[providers.openai]\nkind = \"openai\"\napi_key = \"sk-proj-abcdefghijklmnop\"\n",
        &[],
        "error: literal secrets are not allowed in pins.toml
 --> pins.toml:5:11
  |
5 | api_key = \"************************\"
  |           ^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: put it in an environment variable and name it with `api_key_env`
",
    );
}

#[test]
fn plain_http_to_a_remote_host() {
    rejects(
        "version = 1\n\n[providers.local]\nkind = \"openai-compatible\"\nbase_url = \"http://10.0.0.5:8000/v1\"\n",
        &[],
        "error: refusing plain `http://` to `10.0.0.5`
 --> pins.toml:5:12
  |
5 | base_url = \"http://10.0.0.5:8000/v1\"
  |            ^^^^^^^^^^^^^^^^^^^^^^^^^
  = note: `http://` is allowed only to loopback hosts (127.0.0.0/8, `localhost`, `[::1]`)
  = help: use `https://`
",
    );
}

#[test]
fn unset_key_variable_is_named() {
    rejects(
        "version = 1\n\n[providers.openai]\nkind = \"openai\"\napi_key_env = \"MODELPIN_UNSET_KEY\"\n",
        &[],
        "error: environment variable `MODELPIN_UNSET_KEY` is not set
 --> pins.toml:5:15
  |
5 | api_key_env = \"MODELPIN_UNSET_KEY\"
  |               ^^^^^^^^^^^^^^^^^^^^
  = help: set it to the API key for [providers.openai]
",
    );
}

#[test]
fn missing_probe_file() {
    rejects(
        &pin("").replace("probes/*.toml", "probes/missing.toml"),
        &[],
        "error: no probe file matches `probes/missing.toml`
  --> pins.toml:11:11
   |
11 | probes = [\"probes/missing.toml\"]
   |           ^^^^^^^^^^^^^^^^^^^^^
   = note: probe paths are relative to the directory of pins.toml
",
    );
}

#[test]
fn invalid_probe_file_is_named_with_its_own_line() {
    rejects(
        &pin("").replace("probes/*.toml", "probes/bad.toml"),
        &[("probes/bad.toml", "id = \"arith\"\nprompt = \"x\"\nmax_tokens = \"eight\"\n")],
        "error: wrong type for `max_tokens` at the top level: expected a non-negative integer, found a string
 --> probes/bad.toml:3:14
  |
3 | max_tokens = \"eight\"
  |              ^^^^^^^
",
    );
}

#[test]
fn missing_config_says_how_to_start() {
    let test = Test::new();
    let run = test.run(&["check"]);
    run.code(2);
    assert_eq!(
        run.stderr,
        "error: cannot read `pins.toml`: No such file or directory (os error 2)\n = help: run `modelpin init` to write an example, or pass `--config PATH`\n"
    );
}

#[test]
fn a_model_that_is_not_a_chat_model_cannot_be_pinned() {
    for (model, kind) in [
        ("text-embedding-3-small", "an embedding model"),
        ("whisper-1", "an audio model"),
        ("dall-e-3", "an image model"),
        ("omni-moderation-latest", "a moderation model"),
    ] {
        let pins = pin("").replace("gpt-4o-2024-08-06", model);
        let carets = "^".repeat(model.len() + 2);
        rejects(
            &pins,
            &[],
            &format!(
                "error: `{model}` is {kind}; modelpin's probes and first-token tier are chat calls
  --> pins.toml:10:9
   |
10 | model = \"{model}\"
   |         {carets}
   = help: remove this pin: `modelpin scan` reports the lifecycle of this ID (retired, retiring, its replacement) wherever the code names it, which is all modelpin can watch for it
"
            ),
        );
    }
}
