//! `[traffic]`: defaults, every key, and golden messages.

use std::time::Duration;

use super::{BASE, Dir, error};

fn with_traffic(lines: &str) -> String {
    format!("{BASE}\n[traffic]\n{lines}\n")
}

#[test]
fn no_table_means_an_open_loopback_receiver_with_default_matching() {
    let t = Dir::new().pins(BASE).config().traffic;
    assert!(t.enabled);
    assert_eq!(t.token_env, None);
    assert!(t.services.is_empty() && t.server_addresses.is_empty() && t.provider_names.is_empty());
    assert_eq!(
        (t.window, t.interval, t.max_requests),
        (1000, Duration::from_secs(1), 4)
    );
}

#[test]
fn every_traffic_key() {
    let pins = with_traffic(
        r#"enabled = false
token_env = "OTLP_TOKEN"
services = ["support-api"]
server_addresses = ["gateway.internal"]
provider_names = ["LiteLLM"]
window = 200
interval = "500ms"
max_requests = 2"#,
    );
    let t = Dir::new().pins(&pins).config().traffic;
    assert!(!t.enabled);
    assert_eq!(t.token_env.as_deref(), Some("OTLP_TOKEN"));
    assert_eq!(t.services, ["support-api"]);
    assert_eq!(t.server_addresses, ["gateway.internal"]);
    assert_eq!(t.provider_names, ["litellm"]);
    assert_eq!(
        (t.window, t.interval, t.max_requests),
        (200, Duration::from_millis(500), 2)
    );
}

#[test]
fn unknown_traffic_key_suggests_the_nearest() {
    assert_eq!(
        error(&with_traffic("servces = [\"x\"]")),
        r#"error: unknown key `servces` in [traffic]
  --> pins.toml:13:1
   |
13 | servces = ["x"]
   | ^^^^^^^
   = help: did you mean `services`?"#
    );
}

#[test]
fn traffic_interval_out_of_range() {
    assert_eq!(
        error(&with_traffic("interval = \"5m\"")),
        r#"error: `interval` must be between 100ms and 60s, found `5m`
  --> pins.toml:13:12
   |
13 | interval = "5m"
   |            ^^^^
   = help: traffic is judged this often; 1s shows a reroute within two seconds"#
    );
}

#[test]
fn traffic_window_too_large() {
    assert_eq!(
        error(&with_traffic("window = 1000000")),
        r"error: `window` is 1000000; at most 100000 is allowed
  --> pins.toml:13:10
   |
13 | window = 1000000
   |          ^^^^^^^"
    );
}
