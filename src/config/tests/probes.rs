//! Golden messages for probe files and the globs that name them.

use super::{BASE, Dir, PROBE};

fn with_probes(patterns: &str) -> String {
    format!("{BASE}probes = [{patterns}]\n")
}

#[test]
fn glob_matching_no_file() {
    assert_eq!(
        Dir::new().pins(&with_probes("\"probes/*.tml\"")).error(),
        r#"error: no probe file matches `probes/*.tml`
  --> pins.toml:11:11
   |
11 | probes = ["probes/*.tml"]
   |           ^^^^^^^^^^^^^^
   = note: probe paths are relative to the directory of pins.toml"#
    );
}

#[test]
fn plain_path_to_a_missing_file() {
    let dir = Dir::new()
        .pins(&with_probes("\"probes/arith.toml\", \"probes/gone.toml\""))
        .file("probes/arith.toml", PROBE);
    assert_eq!(
        dir.error(),
        r#"error: no probe file matches `probes/gone.toml`
  --> pins.toml:11:32
   |
11 | probes = ["probes/arith.toml", "probes/gone.toml"]
   |                                ^^^^^^^^^^^^^^^^^^
   = note: probe paths are relative to the directory of pins.toml"#
    );
}

#[test]
fn invalid_glob() {
    assert_eq!(
        Dir::new().pins(&with_probes("\"probes/[a.toml\"")).error(),
        r#"error: invalid glob `probes/[a.toml`
  --> pins.toml:11:11
   |
11 | probes = ["probes/[a.toml"]
   |           ^^^^^^^^^^^^^^^^
   = note: unclosed character class; missing ']'"#
    );
}

#[test]
fn syntax_error_names_the_probe_file() {
    let dir = Dir::new().pins(&with_probes("\"probes/*.toml\"")).file(
        "probes/arith.toml",
        "id = \"arith\"\nprompt = \"What is 17 * 23?\nmax_tokens = 8\n",
    );
    assert_eq!(
        dir.error(),
        r#"error: invalid TOML: invalid basic string
 --> probes/arith.toml:2:27
  |
2 | prompt = "What is 17 * 23?
  |                           ^"#
    );
}

#[test]
fn unknown_key_names_the_probe_file() {
    let dir = Dir::new().pins(&with_probes("\"probes/*.toml\"")).file(
        "probes/arith.toml",
        &PROBE.replace("max_tokens", "max_token"),
    );
    assert_eq!(
        dir.error(),
        r"error: unknown key `max_token` at the top level
 --> probes/arith.toml:3:1
  |
3 | max_token = 8
  | ^^^^^^^^^
  = help: did you mean `max_tokens`?"
    );
}

#[test]
fn unknown_key_in_expect() {
    let dir = Dir::new()
        .pins(&with_probes("\"probes/*.toml\""))
        .file("probes/arith.toml", &PROBE.replace("equals", "equal"));
    assert_eq!(
        dir.error(),
        r#"error: unknown key `equal` in [expect]
 --> probes/arith.toml:7:1
  |
7 | equal = "391"
  | ^^^^^
  = help: did you mean `equals`?"#
    );
}

#[test]
fn missing_prompt() {
    let dir = Dir::new()
        .pins(&with_probes("\"probes/*.toml\""))
        .file("probes/p.toml", "id = \"p\"\n");
    assert_eq!(
        dir.error(),
        r#"error: missing key `prompt` at the top level
 --> probes/p.toml:1:1
  |
1 | id = "p"
  | ^"#
    );
}

#[test]
fn duplicate_probe_ids_across_files() {
    let dir = Dir::new()
        .pins(&with_probes("\"probes/*.toml\""))
        .file("probes/a.toml", PROBE)
        .file("probes/b.toml", &PROBE.replace("17 * 23", "23 * 17"));
    assert_eq!(
        dir.error(),
        r#"error: duplicate probe id `arith-17x23`
 --> probes/b.toml:1:6
  |
1 | id = "arith-17x23"
  |      ^^^^^^^^^^^^^
  = note: first defined at probes/a.toml:1:6"#
    );
}

#[test]
fn the_same_file_through_two_globs_is_one_probe() {
    let config = Dir::new()
        .pins(&with_probes("\"probes/*.toml\", \"probes/a.toml\""))
        .file("probes/a.toml", PROBE)
        .config();
    assert_eq!(config.probes.len(), 1);
    assert_eq!(config.pins[0].probes, ["arith-17x23"]);
}

#[test]
fn invalid_values_in_a_probe() {
    let probe = "id = \"p\"\nprompt = \"x\"\nmax_tokens = 0\ntemperature = 3.0\ncompare = \"txt\"\nnormalize = [\"strip\"]\n";
    let dir = Dir::new()
        .pins(&with_probes("\"probes/*.toml\""))
        .file("probes/p.toml", probe);
    assert_eq!(
        dir.error(),
        r#"error: `max_tokens` must be at least 1
 --> probes/p.toml:3:14
  |
3 | max_tokens = 0
  |              ^

error: `temperature` must be from 0 to 2, found 3.0
 --> probes/p.toml:4:15
  |
4 | temperature = 3.0
  |               ^^^

error: unknown comparison `txt`
 --> probes/p.toml:5:11
  |
5 | compare = "txt"
  |           ^^^^^
  = note: valid comparisons: `choice`, `text`
  = help: did you mean `text`?

error: unknown normalization `strip`
 --> probes/p.toml:6:14
  |
6 | normalize = ["strip"]
  |              ^^^^^^^
  = note: valid normalizations: `trim`, `lower`"#
    );
}

fn expect_error(expect: &str) -> String {
    Dir::new()
        .pins(&with_probes("\"probes/*.toml\""))
        .file(
            "probes/p.toml",
            &format!("id = \"p\"\nprompt = \"x\"\n[expect]\n{expect}"),
        )
        .error()
}

#[test]
fn expect_takes_exactly_one_rule() {
    assert_eq!(
        expect_error(""),
        r"error: `[expect]` needs a rule
 --> probes/p.toml:3:1
  |
3 | [expect]
  | ^^^^^^^^
  = help: add exactly one of `equals`, `contains`, `regex`, `one_of` or `json = true`"
    );
    assert_eq!(
        expect_error("equals = \"1\"\ncontains = \"2\"\n"),
        r#"error: `[expect]` takes one rule, found `equals` and `contains`
 --> probes/p.toml:5:12
  |
5 | contains = "2"
  |            ^^^
  = help: keep one; use `one_of` to accept several answers"#
    );
}

#[test]
fn expect_rules_must_say_something() {
    assert_eq!(
        expect_error("json = false\n"),
        r"error: `json` can only be `true`
 --> probes/p.toml:4:8
  |
4 | json = false
  |        ^^^^^
  = help: leave `[expect]` out for no pass/fail rule"
    );
    assert_eq!(
        expect_error("one_of = []\n"),
        r"error: `one_of` needs at least one answer
 --> probes/p.toml:4:10
  |
4 | one_of = []
  |          ^^"
    );
    // The pattern is compiled by the auditor (no regex engine here); it only has to be there.
    assert_eq!(
        expect_error("regex = \"  \"\n"),
        r#"error: `regex` must not be empty
 --> probes/p.toml:4:9
  |
4 | regex = "  "
  |         ^^^^"#
    );
}
