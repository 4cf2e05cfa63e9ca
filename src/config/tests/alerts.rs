//! Golden messages for `[alerts.NAME]`.

use super::{BASE, Dir, error};

fn with_alert(table: &str) -> String {
    format!("{BASE}\n[alerts.oncall]\n{table}\n")
}

#[test]
fn unknown_alert_kind() {
    assert_eq!(
        error(&with_alert("kind = \"pagerduty\"")),
        r#"error: unknown alert kind `pagerduty`
  --> pins.toml:13:8
   |
13 | kind = "pagerduty"
   |        ^^^^^^^^^^^
   = note: valid alert kinds: `email`, `webhook`, `slack`, `alertmanager`"#
    );
}

#[test]
fn plain_http_alert_url_off_loopback() {
    assert_eq!(
        error(&with_alert(
            "kind = \"webhook\"\nurl = \"http://hooks.example.com/modelpin\""
        )),
        r#"error: refusing plain `http://` to `hooks.example.com`
  --> pins.toml:14:7
   |
14 | url = "http://hooks.example.com/modelpin"
   |       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   = note: `http://` is allowed only to loopback hosts (127.0.0.0/8, `localhost`, `[::1]`)
   = help: use `https://`"#
    );
    Dir::new()
        .pins(&with_alert(
            "kind = \"alertmanager\"\nurl = \"http://127.0.0.1:9093/\"",
        ))
        .config();
}

#[test]
fn email_needs_smtp_from_to() {
    assert_eq!(
        error(&with_alert(
            "kind = \"email\"\nsmtp = \"mail.example.com:587\"\nto = []"
        )),
        r#"error: missing key `from` in [alerts.oncall]
  --> pins.toml:12:1
   |
12 | [alerts.oncall]
   | ^^^^^^^^^^^^^^^
   = help: kind `email` needs `smtp`, `from`, `to`

error: `smtp` must be an `smtp://` or `smtps://` URL
  --> pins.toml:14:8
   |
14 | smtp = "mail.example.com:587"
   |        ^^^^^^^^^^^^^^^^^^^^^^
   = help: `smtp://host:587` uses STARTTLS; `smtps://host:465` is TLS from the start

error: `to` needs at least one address
  --> pins.toml:15:6
   |
15 | to = []
   |      ^^"#
    );
}

#[test]
fn keys_of_another_kind() {
    assert_eq!(
        error(&with_alert(
            "kind = \"slack\"\nurl_env = \"SLACK_WEBHOOK_URL\"\nurl = \"https://hooks.slack.com/x\""
        )),
        r#"error: `url` does not apply to kind `slack`
  --> pins.toml:15:7
   |
15 | url = "https://hooks.slack.com/x"
   |       ^^^^^^^^^^^^^^^^^^^^^^^^^^^
   = note: kind `slack` takes `url_env`"#
    );
}

#[test]
fn webhook_secret_must_be_standard_webhooks_when_set() {
    let pins = with_alert(
        "kind = \"webhook\"\nurl = \"https://hooks.example.com\"\nsecret_env = \"HOOK_SECRET\"",
    );
    assert_eq!(
        Dir::new()
            .env("HOOK_SECRET", "not-a-whsec")
            .pins(&pins)
            .error(),
        r#"error: environment variable `HOOK_SECRET` does not hold a webhook signing secret: it does not start with `whsec_`
  --> pins.toml:15:14
   |
15 | secret_env = "HOOK_SECRET"
   |              ^^^^^^^^^^^^^
   = help: Standard Webhooks secrets are `whsec_` followed by base64"#
    );
    // Unset is fine (checked when sending); a `whsec_` value is fine.
    Dir::new().pins(&pins).config();
    Dir::new()
        .env("HOOK_SECRET", "whsec_abc")
        .pins(&pins)
        .config();
}

/// Delivery never reads the environment: the values are in the loaded channel, the webhook
/// secret already decoded into the key it signs with.
#[test]
fn channel_secrets_are_read_once_at_load() {
    use crate::config::AlertKind;
    let hook = with_alert(
        "kind = \"webhook\"\nurl = \"https://hooks.example.com\"\nsecret_env = \"HOOK_SECRET\"",
    );
    let config = Dir::new()
        .env("HOOK_SECRET", "whsec_bWFya2VyLXdlYmhvb2stc2VjcmU=")
        .pins(&hook)
        .config();
    let AlertKind::Webhook { signing_key, .. } = &config.alerts[0].kind else {
        panic!("{:?}", config.alerts[0]);
    };
    assert_eq!(
        signing_key.as_ref().map(crate::config::WebhookKey::bytes),
        Some(b"marker-webhook-secre".as_slice())
    );
    let unset = Dir::new().pins(&hook).config();
    assert!(matches!(
        &unset.alerts[0].kind,
        AlertKind::Webhook {
            signing_key: None,
            ..
        }
    ));
    let slack = with_alert("kind = \"slack\"\nurl_env = \"SLACK_URL\"");
    let config = Dir::new()
        .env("SLACK_URL", "https://hooks.slack.com/services/T/B/x")
        .pins(&slack)
        .config();
    let AlertKind::Slack { url: Some(url), .. } = &config.alerts[0].kind else {
        panic!("{:?}", config.alerts[0]);
    };
    assert_eq!(url.expose(), "https://hooks.slack.com/services/T/B/x");
}

#[test]
fn repeat_and_min_severity() {
    assert_eq!(
        error(&with_alert(
            "kind = \"slack\"\nurl_env = \"SLACK_URL\"\nrepeat = \"soon\"\nmin_severity = \"warn\""
        )),
        r#"error: invalid duration `soon` for `repeat`
  --> pins.toml:15:10
   |
15 | repeat = "soon"
   |          ^^^^^^
   = help: use whole numbers with units ms, s, m, h or d, largest first, like `90s`, `10m` or `1h30m`

error: unknown severity `warn`
  --> pins.toml:16:16
   |
16 | min_severity = "warn"
   |                ^^^^^^
   = note: valid severities: `info`, `warning`, `error`
   = help: did you mean `warning`?"#
    );
}
