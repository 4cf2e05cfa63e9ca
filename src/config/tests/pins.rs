//! Golden messages for the structure of pins.toml and its `[[pin]]` tables.

use super::{BASE, Dir, base_with, error};

#[test]
fn unknown_key_suggests_the_nearest() {
    let pins = r#"version = 1

[providers.openai]
kind = "openai"
api_key_env = "OPENAI_API_KEY"

[[pin]]
id = "support-bot"
provider = "openai"
model = "gpt-4o-2024-08-06"
probes = []
samples = 10
cost_tolerance = 0.02
acept = ["gpt-4o-2024-08-06"]
"#;
    assert_eq!(
        error(pins),
        r#"error: unknown key `acept` in [[pin]]
  --> pins.toml:14:1
   |
14 | acept = ["gpt-4o-2024-08-06"]
   | ^^^^^
   = help: did you mean `accept`?"#
    );
}

#[test]
fn unknown_key_far_from_any_lists_the_valid_ones() {
    assert_eq!(
        error(&format!("colour = 1\n{BASE}")),
        r"error: unknown key `colour` at the top level
 --> pins.toml:1:1
  |
1 | colour = 1
  | ^^^^^^
  = note: valid keys: `version`, `settings`, `providers`, `pin`, `alerts`, `traffic`, `scan`"
    );
}

#[test]
fn unknown_key_in_an_inline_table() {
    assert_eq!(
        error(&format!("{BASE}price = {{ input = 1, outptu = 2 }}\n")),
        r"error: unknown key `outptu` in `price` of [[pin]]
  --> pins.toml:11:22
   |
11 | price = { input = 1, outptu = 2 }
   |                      ^^^^^^
   = help: did you mean `output`?"
    );
}

#[test]
fn toml_syntax_error() {
    assert_eq!(
        error(&format!("{BASE}accept = [\"gpt-4o\"\n")),
        r"error: invalid TOML: invalid array
  --> pins.toml:12:1
   |
12 |
   | ^
   = note: expected `]`"
    );
}

#[test]
fn wrong_type() {
    assert_eq!(
        error(&format!("{BASE}samples = \"ten\"\n")),
        r#"error: wrong type for `samples` in [[pin]]: expected a non-negative integer, found a string
  --> pins.toml:11:11
   |
11 | samples = "ten"
   |           ^^^^^"#
    );
}

#[test]
fn negative_count() {
    assert_eq!(
        error(&format!("{BASE}samples = -1\n")),
        r"error: invalid value for `samples` in [[pin]]: expected a non-negative integer, found integer `-1`
  --> pins.toml:11:11
   |
11 | samples = -1
   |           ^^"
    );
}

#[test]
fn missing_key_points_at_the_table() {
    assert_eq!(
        error(&base_with("model = \"gpt-4o-2024-08-06\"\n", "")),
        r"error: missing key `model` in [[pin]]
 --> pins.toml:7:1
  |
7 | [[pin]]
  | ^^^^^^^"
    );
}

#[test]
fn version_is_required() {
    assert_eq!(
        error(&base_with("version = 1\n", "")),
        r"error: missing `version` in pins.toml
 --> pins.toml:1:1
  |
1 |
  | ^
  = help: add `version = 1` as the first line"
    );
}

#[test]
fn other_versions_are_rejected_with_a_hint() {
    assert_eq!(
        error(&base_with("version = 1", "version = 2\nfuture_key = true")),
        r"error: unsupported pins.toml version 2
 --> pins.toml:1:11
  |
1 | version = 2
  |           ^
  = help: this modelpin reads `version = 1`; upgrade modelpin or rewrite the file for version 1"
    );
    assert_eq!(
        error(&base_with("version = 1", "version = \"1\"")),
        r#"error: `version` must be an integer
 --> pins.toml:1:11
  |
1 | version = "1"
  |           ^^^
  = help: write `version = 1`"#
    );
}

#[test]
fn duplicate_pin_id_points_at_the_second() {
    let pins = format!(
        "{BASE}\n[[pin]]\nid = \"support-bot\"\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\n"
    );
    assert_eq!(
        error(&pins),
        r#"error: duplicate pin id `support-bot`
  --> pins.toml:13:6
   |
13 | id = "support-bot"
   |      ^^^^^^^^^^^^^
   = note: first defined at pins.toml:8:6"#
    );
}

#[test]
fn unknown_provider_lists_the_known_ones() {
    assert_eq!(
        error(&base_with("provider = \"openai\"", "provider = \"opnai\"")),
        r#"error: unknown provider `opnai`
 --> pins.toml:9:12
  |
9 | provider = "opnai"
  |            ^^^^^^^
  = note: known providers: `openai`
  = help: did you mean `openai`?"#
    );
    let two = base_with(
        "\n[[pin]]",
        "\n[providers.claude]\nkind = \"anthropic\"\napi_key_env = \"OPENAI_API_KEY\"\n\n[[pin]]",
    );
    assert_eq!(
        error(&two.replace("provider = \"openai\"", "provider = \"mistral\"")),
        r#"error: unknown provider `mistral`
  --> pins.toml:13:12
   |
13 | provider = "mistral"
   |            ^^^^^^^^^
   = note: known providers: `openai`, `claude`"#
    );
}

#[test]
fn samples_zero() {
    assert_eq!(
        error(&format!("{BASE}samples = 0\n")),
        r"error: `samples` must be at least 1
  --> pins.toml:11:11
   |
11 | samples = 0
   |           ^"
    );
}

#[test]
fn first_token_samples_bounds() {
    assert_eq!(
        error(&format!("{BASE}first_token_samples = 0\n")),
        r"error: `first_token_samples` must be at least 1
  --> pins.toml:11:23
   |
11 | first_token_samples = 0
   |                       ^"
    );
    let too_many = error(&format!("{BASE}first_token_samples = 20000\n"));
    assert!(
        too_many.starts_with(
            "error: `first_token_samples` is 20000; at most 10000 per border input per audit"
        ),
        "{too_many}"
    );
}

#[test]
fn negative_price() {
    assert_eq!(
        error(&format!("{BASE}price = {{ input = -2.5, output = 10 }}\n")),
        r"error: `price.input` must be zero or more, found -2.5
  --> pins.toml:11:19
   |
11 | price = { input = -2.5, output = 10 }
   |                   ^^^^"
    );
}

#[test]
fn negative_cost_tolerance() {
    assert_eq!(
        error(&format!("{BASE}cost_tolerance = -0.1\n")),
        r"error: `cost_tolerance` must be zero or more, found -0.1
  --> pins.toml:11:18
   |
11 | cost_tolerance = -0.1
   |                  ^^^^"
    );
}

#[test]
fn empty_accept() {
    assert_eq!(
        error(&format!("{BASE}accept = []\n")),
        r"error: `accept` is empty, so no served model would count
  --> pins.toml:11:10
   |
11 | accept = []
   |          ^^
   = help: leave it out to accept `model` (and what `modelpin lock` records)"
    );
}

#[test]
fn retires_on_is_a_date() {
    assert_eq!(
        error(&format!("{BASE}retires_on = \"2026-10-20\"\n")),
        r#"error: wrong type for `retires_on` in [[pin]]: expected a date, found a string
  --> pins.toml:11:14
   |
11 | retires_on = "2026-10-20"
   |              ^^^^^^^^^^^^"#
    );
    assert_eq!(
        error(&format!("{BASE}retires_on = 2026-10-20T10:00:00Z\n")),
        r"error: `retires_on` must be a date
  --> pins.toml:11:14
   |
11 | retires_on = 2026-10-20T10:00:00Z
   |              ^^^^^^^^^^^^^^^^^^^^
   = help: write a bare TOML date, like `retires_on = 2026-10-20`"
    );
}

#[test]
fn pin_schedule_takes_crontab_lines_and_points_at_the_bad_field() {
    let config = Dir::new()
        .pins(&format!("{BASE}schedule = \"*/15 * * * *\"\n"))
        .load()
        .unwrap();
    let schedule = config.pins[0].schedule.as_ref().unwrap();
    assert_eq!(schedule.expression, "0 */15 * * * *");
    assert_eq!(
        error(&format!("{BASE}schedule = \"0 61 * * * *\"\n")),
        r#"error: `0 61 * * * *`: the minutes field `61` is out of range or not cron syntax
  --> pins.toml:11:15
   |
11 | schedule = "0 61 * * * *"
   |               ^^
   = help: fields: seconds 0-59, minutes 0-59, hours 0-23, day of month 1-31, month 1-12, day of week 0-6 (UTC)"#
    );
    assert_eq!(
        error(&format!("{BASE}schedule = \"* * *\"\n")),
        r#"error: `schedule` needs 6 cron fields (sec min hour dom mon dow) or 5 (a crontab line), found 3
  --> pins.toml:11:12
   |
11 | schedule = "* * *"
   |            ^^^^^^^
   = help: for example `0 0 * * * *` runs at the top of every hour (UTC)"#
    );
}

#[test]
fn kind_specific_keys_on_other_kinds() {
    assert_eq!(
        error(&format!(
            "{BASE}deployment = \"prod\"\nupstream = [\"Anthropic\"]\n"
        )),
        r#"error: `deployment` only applies to kind `azure`, not `openai`
  --> pins.toml:11:14
   |
11 | deployment = "prod"
   |              ^^^^^^

error: `upstream` only applies to kind `openrouter`, not `openai`
  --> pins.toml:12:12
   |
12 | upstream = ["Anthropic"]
   |            ^^^^^^^^^^^^^"#
    );
}

#[test]
fn unknown_alert_channel() {
    assert_eq!(
        error(&format!("{BASE}alerts = [\"oncal\"]\n")),
        r#"error: unknown alert channel `oncal`
  --> pins.toml:11:11
   |
11 | alerts = ["oncal"]
   |           ^^^^^^^
   = note: no [alerts.NAME] tables are defined"#
    );
    let with_channel = format!(
        "{BASE}alerts = [\"oncal\"]\n\n[alerts.oncall]\nkind = \"alertmanager\"\nurl = \"https://am.example.com\"\n"
    );
    assert_eq!(
        error(&with_channel),
        r#"error: unknown alert channel `oncal`
  --> pins.toml:11:11
   |
11 | alerts = ["oncal"]
   |           ^^^^^^^
   = note: known channels: `oncall`
   = help: did you mean `oncall`?"#
    );
}

#[test]
fn every_independent_error_is_reported_in_file_order() {
    let pins = format!("{BASE}samples = 0\nprice = {{ input = 1, output = -1 }}\n")
        .replace("provider = \"openai\"", "provider = \"nope\"");
    let err = error(&pins);
    let headlines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        headlines,
        [
            "error: unknown provider `nope`",
            "error: `samples` must be at least 1",
            "error: `price.output` must be zero or more, found -1.0",
        ]
    );
}

#[test]
fn the_path_is_shown_as_given() {
    let dir = Dir::new().pins(&format!("{BASE}samples = 0\n"));
    let given = dir.path().parent().unwrap().join(".").join("pins.toml");
    let err = crate::config::load(&given, &|_| Some("x".into())).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("--> {}:11:11", given.display())),
        "{err}"
    );
}

#[test]
fn unreadable_file() {
    let dir = Dir::new();
    let err = dir.load().unwrap_err().to_string();
    let expected = format!("error: cannot read `{}`: ", dir.path().display());
    assert!(err.starts_with(&expected), "{err}");
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(
        err.ends_with("= help: run `modelpin init` to write an example, or pass `--config PATH`"),
        "{err}"
    );
}

#[test]
fn an_accept_list_past_the_cap_is_refused_at_its_first_extra_entry() {
    let names: Vec<String> = (0..=1000).map(|i| format!("\"m{i}\"")).collect();
    let err = error(&format!("{BASE}accept = [{}]\n", names.join(", ")));
    assert!(
        err.starts_with("error: `accept` has 1001 entries, more than 1000\n  --> pins.toml:11:"),
        "{err}"
    );
    // The line is 7,900 characters; the snippet shows the stretch before the caret.
    assert!(err.contains("11 | …\"m986\", "), "{err}");
    assert!(err.lines().all(|l| l.chars().count() < 140), "{err}");
}
