//! Golden messages for literal secrets; none of them may echo the secret.

use super::{BASE, base_with, error};

#[test]
fn api_key_key() {
    let pins = base_with(
        "api_key_env = \"OPENAI_API_KEY\"",
        "api_key = \"sk-proj-Abc123Def456Ghi789\"",
    );
    let err = error(&pins);
    assert_eq!(
        err,
        r#"error: literal secrets are not allowed in pins.toml
 --> pins.toml:5:11
  |
5 | api_key = "**************************"
  |           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: put it in an environment variable and name it with `api_key_env`"#
    );
}

#[test]
fn every_secret_key_name_is_refused() {
    for key in ["key", "token", "secret", "password", "API_KEY", "api-key"] {
        let pins = base_with(
            "api_key_env = \"OPENAI_API_KEY\"",
            &format!("{key} = \"hunter2\""),
        );
        let err = error(&pins);
        assert!(
            err.starts_with("error: literal secrets are not allowed in pins.toml\n"),
            "{key}: {err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
    }
}

#[test]
fn credential_shaped_value_anywhere() {
    let pins = base_with(
        "api_key_env = \"OPENAI_API_KEY\"",
        "api_key_env = \"sk-ant-api03-Abc123Def456\"",
    );
    assert_eq!(
        error(&pins),
        r#"error: literal secrets are not allowed in pins.toml
 --> pins.toml:5:15
  |
5 | api_key_env = "sk-ant-******************"
  |               ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = note: this value looks like a credential (it starts with `sk-ant-`)
  = help: put it in an environment variable and name it with `api_key_env`"#
    );
    for value in [
        "sk-or-v1-0123456789abcdef",
        "AIzaSyD0123456789abcdefgh",
        "gsk_0123456789abcdefgh",
        "xai-0123456789abcdefgh",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    ] {
        let err = error(&format!("{BASE}accept = [\"gpt-4o\", \"{value}\"]\n"));
        assert!(err.starts_with("error: literal secrets"), "{value}: {err}");
        assert!(!err.contains(value), "{err}");
    }
}

#[test]
fn bearer_header() {
    let pins = base_with(
        "api_key_env = \"OPENAI_API_KEY\"",
        "api_key_env = \"OPENAI_API_KEY\"\nheaders = { X-Gateway-Auth = \"Bearer eyJhbGciOi\" }",
    );
    assert_eq!(
        error(&pins),
        r#"error: literal secrets are not allowed in pins.toml
 --> pins.toml:6:30
  |
6 | headers = { X-Gateway-Auth = "Bearer **********" }
  |                              ^^^^^^^^^^^^^^^^^^^
  = note: this value is a `Bearer` token
  = help: put it in an environment variable and name it with `api_key_env`"#
    );
}

#[test]
fn two_secrets_on_one_line_are_both_masked() {
    let pins = base_with(
        "api_key_env = \"OPENAI_API_KEY\"",
        "api_key_env = \"OPENAI_API_KEY\"\nheaders = { Authorization = \"Bearer abcdefgh\", X-Other = \"sk-0123456789abc\" }",
    );
    let err = error(&pins);
    assert_eq!(err.matches("error: literal secrets").count(), 2, "{err}");
    assert!(
        !err.contains("abcdefgh") && !err.contains("0123456789abc"),
        "{err}"
    );
}

#[test]
fn alert_secrets_name_the_channel_key() {
    let pins = format!(
        "{BASE}\n[alerts.mail]\nkind = \"email\"\nsmtp = \"smtp://mail.example.com\"\npassword = \"hunter2\"\n\n[alerts.hook]\nkind = \"webhook\"\nurl = \"https://hooks.example.com\"\nsecret_env = \"whsec_0123456789abcdef\"\n"
    );
    assert_eq!(
        error(&pins),
        r#"error: literal secrets are not allowed in pins.toml
  --> pins.toml:15:12
   |
15 | password = "*******"
   |            ^^^^^^^^^
   = help: put it in an environment variable and name it with `password_env`

error: literal secrets are not allowed in pins.toml
  --> pins.toml:20:14
   |
20 | secret_env = "whsec_****************"
   |              ^^^^^^^^^^^^^^^^^^^^^^^^
   = note: this value looks like a credential (it starts with `whsec_`)
   = help: put it in an environment variable and name it with `secret_env`"#
    );
}

#[test]
fn names_that_merely_contain_a_prefix_are_fine() {
    let pins = format!("{BASE}accept = [\"gpt-4o\", \"sk-2\", \"task-sk-0123456789\"]\n");
    super::Dir::new().pins(&pins).config();
}
