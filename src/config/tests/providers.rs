//! Golden messages for `[providers.NAME]`.

use super::{BASE, Dir, base_with, error};

#[test]
fn unknown_kind_lists_the_valid_kinds() {
    assert_eq!(
        error(&base_with("kind = \"openai\"", "kind = \"openia\"")),
        r#"error: unknown provider kind `openia`
 --> pins.toml:4:8
  |
4 | kind = "openia"
  |        ^^^^^^^^
  = note: valid provider kinds: `openai`, `openai-compatible`, `openrouter`, `azure`, `anthropic`, `gemini`
  = help: did you mean `openai`?"#
    );
}

#[test]
fn a_pin_on_a_provider_with_a_bad_kind_is_not_reported_twice() {
    let err = error(&base_with("kind = \"openai\"", "kind = \"bedrock\""));
    assert_eq!(err.matches("error:").count(), 1, "{err}");
}

#[test]
fn plain_http_base_url_off_loopback() {
    let pins = base_with(
        "kind = \"openai\"",
        "kind = \"openai\"\nbase_url = \"http://gateway.internal:8080/v1\"",
    );
    assert_eq!(
        error(&pins),
        r#"error: refusing plain `http://` to `gateway.internal`
 --> pins.toml:5:12
  |
5 | base_url = "http://gateway.internal:8080/v1"
  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = note: `http://` is allowed only to loopback hosts (127.0.0.0/8, `localhost`, `[::1]`)
  = help: use `https://`"#
    );
}

#[test]
fn base_url_must_be_http() {
    let pins = base_with(
        "kind = \"openai\"",
        "kind = \"openai\"\nbase_url = \"api.openai.com/v1\"",
    );
    assert_eq!(
        error(&pins),
        r#"error: `base_url` must be an `https://` URL
 --> pins.toml:5:12
  |
5 | base_url = "api.openai.com/v1"
  |            ^^^^^^^^^^^^^^^^^^^"#
    );
}

#[test]
fn unset_api_key_variable_is_named() {
    assert_eq!(
        Dir::new().without_env().pins(BASE).error(),
        r#"error: environment variable `OPENAI_API_KEY` is not set
 --> pins.toml:5:15
  |
5 | api_key_env = "OPENAI_API_KEY"
  |               ^^^^^^^^^^^^^^^^
  = help: set it to the API key for [providers.openai]"#
    );
    assert_eq!(
        Dir::new()
            .without_env()
            .env("OPENAI_API_KEY", "")
            .pins(BASE)
            .error(),
        r#"error: environment variable `OPENAI_API_KEY` is empty
 --> pins.toml:5:15
  |
5 | api_key_env = "OPENAI_API_KEY"
  |               ^^^^^^^^^^^^^^^^
  = help: set it to the API key for [providers.openai]"#
    );
}

#[test]
fn api_key_env_is_required_where_the_provider_needs_a_key() {
    assert_eq!(
        error(&base_with("api_key_env = \"OPENAI_API_KEY\"\n", "")),
        r#"error: missing key `api_key_env` in [providers.openai]
 --> pins.toml:3:1
  |
3 | [providers.openai]
  | ^^^^^^^^^^^^^^^^^^
  = help: kind `openai` needs an API key: add `api_key_env = "OPENAI_API_KEY"` naming the variable that holds it"#
    );
}

#[test]
fn api_key_env_must_be_a_variable_name() {
    let pins = base_with(
        "api_key_env = \"OPENAI_API_KEY\"",
        "api_key_env = \"$OPENAI_API_KEY\"",
    );
    assert_eq!(
        error(&pins),
        r#"error: `$OPENAI_API_KEY` is not an environment variable name
 --> pins.toml:5:15
  |
5 | api_key_env = "$OPENAI_API_KEY"
  |               ^^^^^^^^^^^^^^^^^
  = help: name the variable that holds the value, like `OPENAI_API_KEY`"#
    );
}

#[test]
fn openai_compatible_needs_a_base_url_but_no_key() {
    let pins = base_with(
        "kind = \"openai\"\napi_key_env = \"OPENAI_API_KEY\"",
        "kind = \"openai-compatible\"",
    );
    assert_eq!(
        error(&pins),
        r"error: missing key `base_url` in [providers.openai]
 --> pins.toml:3:1
  |
3 | [providers.openai]
  | ^^^^^^^^^^^^^^^^^^
  = help: kind `openai-compatible` has no default; add its API root, like `http://127.0.0.1:8000/v1`"
    );
    let with_url = pins.replace(
        "kind = \"openai-compatible\"",
        "kind = \"openai-compatible\"\nbase_url = \"http://localhost:11434/v1/\"",
    );
    let config = Dir::new().without_env().pins(&with_url).config();
    let endpoint = &config.providers[0].endpoint;
    assert_eq!(endpoint.base_url, "http://localhost:11434/v1");
    assert!(endpoint.api_key.is_none());
    assert_eq!(config.providers[0].api_key_env, None);
}

#[test]
fn azure_needs_base_url_and_api_version() {
    let pins = base_with("kind = \"openai\"", "kind = \"azure\"");
    assert_eq!(
        error(&pins),
        r#"error: missing key `base_url` in [providers.openai]
 --> pins.toml:3:1
  |
3 | [providers.openai]
  | ^^^^^^^^^^^^^^^^^^
  = help: kind `azure` has no default; add its API root, like `https://my-resource.openai.azure.com`

error: missing key `api_version` in [providers.openai]
 --> pins.toml:3:1
  |
3 | [providers.openai]
  | ^^^^^^^^^^^^^^^^^^
  = help: azure needs one, like `api_version = "2024-10-21"`"#
    );
}

#[test]
fn api_version_only_for_azure() {
    let pins = base_with(
        "kind = \"openai\"",
        "kind = \"openai\"\napi_version = \"2024-10-21\"",
    );
    assert_eq!(
        error(&pins),
        r#"error: `api_version` only applies to kind `azure`, not `openai`
 --> pins.toml:5:15
  |
5 | api_version = "2024-10-21"
  |               ^^^^^^^^^^^^"#
    );
}

#[test]
fn seed_only_where_the_api_takes_one() {
    let cases = [
        ("anthropic", "its API takes no seed"),
        (
            "gemini",
            "Gemini draws a fresh seed itself for a call that names none",
        ),
    ];
    for (kind, why) in cases {
        let pins = base_with(
            "kind = \"openai\"",
            &format!("kind = \"{kind}\"\nseed = true"),
        );
        assert_eq!(
            error(&pins),
            format!(
                r"error: `seed` is for OpenAI-shaped providers, not kind `{kind}`
 --> pins.toml:5:8
  |
5 | seed = true
  |        ^^^^
  = help: remove the key: {why}"
            )
        );
        // Turning off what is off already is no mistake.
        let off = base_with(
            "kind = \"openai\"",
            &format!("kind = \"{kind}\"\nseed = false"),
        );
        let config = Dir::new().pins(&off).load().expect("`seed = false` loads");
        assert!(!config.providers[0].endpoint.seed, "{kind}");
    }
}

#[test]
fn provider_concurrency_zero() {
    let pins = base_with("kind = \"openai\"", "kind = \"openai\"\nconcurrency = 0");
    assert_eq!(
        error(&pins),
        r"error: `concurrency` must be at least 1
 --> pins.toml:5:15
  |
5 | concurrency = 0
  |               ^"
    );
}

#[test]
fn header_names_are_http_tokens() {
    let pins = base_with(
        "kind = \"openai\"",
        "kind = \"openai\"\nheaders = { \"X Title\" = \"modelpin\" }",
    );
    assert_eq!(
        error(&pins),
        r#"error: invalid header name `X Title`
 --> pins.toml:5:13
  |
5 | headers = { "X Title" = "modelpin" }
  |             ^^^^^^^^^"#
    );
}
