//! What a valid configuration turns into: defaults, resolved paths, digests, keys.

use std::time::Duration;

use chrono::NaiveDate;

use super::{BASE, Dir, PROBE};
use crate::config::{AlertKind, Compare, Config, Expect, Normalize, Price, Severity};
use crate::provider::ProviderKind;

const DAY: u64 = 86_400;

#[test]
fn settings_defaults_match_the_design() {
    let dir = Dir::new().pins(BASE);
    let s = dir.config().settings;
    let base = dir.path().parent().unwrap().to_path_buf();
    assert_eq!(s.lockfile, base.join("modelpin.lock"));
    assert_eq!(
        s.store,
        crate::config::location::Location::Sled(base.join(".modelpin"))
    );
    assert_eq!(s.schedule.expression, "0 0 * * * *");
    assert_eq!(s.timeout, Duration::from_secs(60));
    assert_eq!(s.budget, Duration::from_secs(600));
    assert_eq!(s.concurrency, 16);
    assert!((s.alpha - 0.001).abs() < f64::EPSILON);
    assert_eq!(
        s.warn_before,
        [90 * DAY, 30 * DAY, 7 * DAY].map(Duration::from_secs)
    );
    assert!(s.deprecation_feeds.is_empty());
    assert_eq!(s.metrics, "127.0.0.1:9464".parse().unwrap());
    assert!(!s.metrics_public);
    assert_eq!(s.api_token_env, None);
}

#[test]
fn pin_and_provider_defaults() {
    let config = Dir::new().pins(BASE).config();
    let pin = &config.pins[0];
    assert_eq!(pin.id, "support-bot");
    assert_eq!(pin.kind, ProviderKind::OpenAi);
    assert_eq!(pin.accept, ["gpt-4o-2024-08-06"]);
    assert_eq!(pin.deployment, "gpt-4o-2024-08-06");
    assert_eq!(pin.samples, 10);
    assert!((pin.cost_tolerance - 0.02).abs() < f64::EPSILON);
    assert!(pin.probes.is_empty() && pin.upstream.is_empty() && pin.alerts.is_empty());
    assert_eq!(
        (pin.price, pin.retires_on, pin.schedule.clone()),
        (None, None, None)
    );
    let provider = &config.providers[0];
    assert_eq!(provider.endpoint.base_url, "https://api.openai.com/v1");
    assert_eq!(provider.concurrency, 16);
    assert_eq!(provider.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert!(config.alerts.is_empty() && config.probes.is_empty());
}

/// A pins.toml that sets every key pins.toml version 1 has.
const EVERY_KEY: &str = r#"version = 1

[settings]
lockfile = "state/pins.lock"
store = "/var/lib/modelpin"
schedule = "0 */5 * * * *"
timeout = "1m30s"
budget = "1h"
concurrency = 4
alpha = 0.01
warn_before = ["14d", "12h"]
deprecation_feeds = ["feeds/local.json", "https://example.com/feed.json"]
metrics = "0.0.0.0:9000"
metrics_public = true
api_token_env = "MODELPIN_API_TOKEN"

[providers.router]
kind = "openrouter"
api_key_env = "OPENROUTER_API_KEY"
base_url = "https://openrouter.ai/api/v1/"
concurrency = 2
headers = { "X-Title" = "modelpin", "HTTP-Referer" = "https://example.com" }

[providers.az]
kind = "azure"
base_url = "https://res.openai.azure.com"
api_version = "2024-10-21"
api_key_env = "AZURE_KEY"
seed = false

[[pin]]
id = "router"
provider = "router"
model = "anthropic/claude-sonnet-4.6"
accept = ["anthropic/claude-sonnet-4.6", "anthropic/claude-4.6-sonnet-20260217"]
upstream = ["Anthropic"]
samples = 3
price = { input = 3, output = 15 }
cost_tolerance = 0.05
retires_on = 2026-10-20
schedule = "0 0 */6 * * *"
alerts = ["hook"]

[[pin]]
id = "azure"
provider = "az"
model = "gpt-4o-2024-11-20"
deployment = "prod-4o"
price = { input = 2.5, output = 10, cached_input = 1.25 }

[alerts.hook]
kind = "webhook"
url = "https://hooks.example.com/x"
secret_env = "HOOK_SECRET"
send_resolved = false
repeat = "30m"
min_severity = "error"

[alerts.chat]
kind = "slack"
url_env = "SLACK_URL"
"#;

fn every_key() -> (Dir, Config) {
    let dir = Dir::new()
        .without_env()
        .env("OPENROUTER_API_KEY", "sk-or-v1-x")
        .env("AZURE_KEY", "azure-key")
        .pins(EVERY_KEY);
    let config = dir.config();
    (dir, config)
}

#[test]
fn every_settings_key() {
    let (dir, config) = every_key();
    let base = dir.path().parent().unwrap().to_path_buf();
    let s = &config.settings;
    assert_eq!(s.lockfile, base.join("state/pins.lock"));
    assert_eq!(
        s.store,
        crate::config::location::Location::Sled("/var/lib/modelpin".into())
    );
    assert_eq!(s.schedule.expression, "0 */5 * * * *");
    assert_eq!(
        (s.timeout, s.budget, s.concurrency),
        (Duration::from_secs(90), Duration::from_secs(3600), 4)
    );
    assert!((s.alpha - 0.01).abs() < f64::EPSILON);
    assert_eq!(
        s.warn_before,
        [
            Duration::from_secs(14 * DAY),
            Duration::from_secs(12 * 3600)
        ]
    );
    assert_eq!(
        s.deprecation_feeds,
        [
            base.join("feeds/local.json").display().to_string(),
            "https://example.com/feed.json".to_string()
        ]
    );
    assert_eq!(s.metrics, "0.0.0.0:9000".parse().unwrap());
    assert!(s.metrics_public);
    assert_eq!(s.api_token_env.as_deref(), Some("MODELPIN_API_TOKEN"));
}

#[test]
fn every_provider_and_pin_key() {
    let (_dir, config) = every_key();
    let names: Vec<&str> = config.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["router", "az"], "file order, not sorted");
    let router = &config.providers[0];
    assert_eq!(router.endpoint.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(router.concurrency, 2);
    assert_eq!(
        router.endpoint.headers,
        [
            ("x-title".to_string(), "modelpin".to_string()),
            (
                "http-referer".to_string(),
                "https://example.com".to_string()
            )
        ]
    );
    assert!(
        router.endpoint.seed,
        "OpenAI-shaped: a seed per sampled call unless turned off"
    );
    let az = &config.providers[1].endpoint;
    assert!(!az.seed, "`seed = false` turns it off");
    assert_eq!(az.api_version.as_deref(), Some("2024-10-21"));
    assert_eq!(az.api_key.as_ref().unwrap().expose(), "azure-key");

    let router_pin = &config.pins[0];
    assert_eq!(router_pin.accept.len(), 2);
    assert_eq!(router_pin.upstream, ["Anthropic"]);
    assert_eq!(router_pin.samples, 3);
    assert_eq!(router_pin.retires_on, NaiveDate::from_ymd_opt(2026, 10, 20));
    assert_eq!(
        router_pin.schedule.as_ref().map(|s| s.expression.as_str()),
        Some("0 0 */6 * * *")
    );
    assert_eq!(router_pin.alerts, ["hook"]);
    let price = |input, output, cached_input| Price {
        input,
        output,
        cached_input,
    };
    assert_eq!(
        router_pin.price,
        Some(price(3.0, 15.0, 3.0)),
        "cached defaults to input"
    );
    let azure_pin = &config.pins[1];
    assert_eq!(azure_pin.deployment, "prod-4o");
    assert_eq!(azure_pin.price, Some(price(2.5, 10.0, 1.25)));
}

#[test]
fn every_alert_key() {
    let (_dir, config) = every_key();
    let channels: Vec<&str> = config.alerts.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(channels, ["hook", "chat"], "file order, not sorted");
    let hook = &config.alerts[0];
    assert!(!hook.send_resolved);
    assert_eq!(
        (hook.repeat, hook.min_severity),
        (Duration::from_secs(1800), Severity::Error)
    );
    assert!(matches!(
        &hook.kind,
        AlertKind::Webhook { url, secret_env: Some(secret), .. }
            if url == "https://hooks.example.com/x" && secret == "HOOK_SECRET"
    ));
    let chat = &config.alerts[1];
    assert!(chat.send_resolved, "default");
    assert_eq!(
        (chat.repeat, chat.min_severity),
        (Duration::from_secs(4 * 3600), Severity::Warning),
        "defaults"
    );
    assert!(matches!(&chat.kind, AlertKind::Slack { url_env, .. } if url_env == "SLACK_URL"));
}

#[test]
fn probes_resolve_relative_to_pins_toml_with_defaults() {
    let dir = Dir::new()
        .pins(&format!("{BASE}probes = [\"probes/*.toml\"]\n"))
        .file(
            "probes/minimal.toml",
            "id = \"minimal\"\nprompt = \"Say hi.\"\n",
        )
        .file(
            "probes/full.toml",
            &format!("system = \"Be terse.\"\nnormalize = [\"trim\", \"lower\"]\n{PROBE}"),
        );
    let config = dir.config();
    let ids: Vec<&str> = config.probes.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["arith-17x23", "minimal"], "sorted by id");
    assert_eq!(config.pins[0].probes, ["arith-17x23", "minimal"]);

    let minimal = &config.probes[1];
    assert_eq!(
        minimal.source,
        dir.path().parent().unwrap().join("probes/minimal.toml")
    );
    assert_eq!((minimal.max_tokens, minimal.compare), (16, Compare::Choice));
    assert!((minimal.temperature - 1.0).abs() < f64::EPSILON);
    assert_eq!(
        (minimal.system.clone(), minimal.expect.clone()),
        (None, None)
    );
    assert!(minimal.normalize.is_empty());

    let full = &config.probes[0];
    assert_eq!(full.system.as_deref(), Some("Be terse."));
    assert_eq!(full.max_tokens, 8);
    assert_eq!(full.expect, Some(Expect::Equals("391".into())));
    assert_eq!(full.normalize, [Normalize::Trim, Normalize::Lower]);
    assert_ne!(full.digest, minimal.digest);
}

#[test]
fn expect_rules() {
    for (rule, expected) in [
        ("contains = \"391\"", Expect::Contains("391".into())),
        ("regex = \"^39\\\\d$\"", Expect::Regex("^39\\d$".into())),
        (
            "one_of = [\"a\", \"b\"]",
            Expect::OneOf(vec!["a".into(), "b".into()]),
        ),
        ("json = true", Expect::Json),
    ] {
        let probe = format!("id = \"p\"\nprompt = \"x\"\ncompare = \"text\"\n[expect]\n{rule}\n");
        let config = Dir::new()
            .pins(&format!("{BASE}probes = [\"p.toml\"]\n"))
            .file("p.toml", &probe)
            .config();
        assert_eq!(config.probes[0].expect, Some(expected), "{rule}");
        assert_eq!(config.probes[0].compare, Compare::Text);
    }
}

#[test]
fn config_digest_covers_pins_and_probes_in_id_order() {
    let pins = format!("{BASE}probes = [\"probes/*.toml\"]\n");
    let b_probe = "id = \"b\"\nprompt = \"B\"\n";
    let a_probe = "id = \"a\"\nprompt = \"A\"\n";
    // File names sort the other way round from ids, so id order is what is tested.
    let dir = Dir::new()
        .pins(&pins)
        .file("probes/1.toml", b_probe)
        .file("probes/2.toml", a_probe);
    let first = dir.config();
    assert_eq!(first.digest, dir.config().digest, "stable across loads");
    let expected = crate::config::probe::sha256(format!("{pins}{a_probe}{b_probe}").as_bytes());
    assert_eq!(first.digest, expected);
    assert!(first.digest.starts_with("sha256:") && first.digest.len() == 71);

    let edited = Dir::new()
        .pins(&pins)
        .file("probes/1.toml", b_probe)
        .file("probes/2.toml", &a_probe.replace('A', "A!"));
    assert_ne!(
        edited.config().digest,
        first.digest,
        "a probe edit changes it"
    );
    let probe_digests = |d: &Dir| {
        d.config()
            .probes
            .iter()
            .map(|p| p.digest.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(probe_digests(&dir), probe_digests(&dir));
    assert_ne!(probe_digests(&edited)[0], probe_digests(&dir)[0]);
    assert_eq!(probe_digests(&edited)[1], probe_digests(&dir)[1]);
}

#[test]
fn keys_come_from_the_env_lookup_only_and_never_show() {
    let secret = "sk-test-0123456789-do-not-print";
    let dir = Dir::new()
        .without_env()
        .env("OPENAI_API_KEY", secret)
        .pins(BASE);
    let config = dir.config();
    let key = config.providers[0].endpoint.api_key.as_ref().unwrap();
    assert_eq!(key.expose(), secret);
    let debug = format!("{config:?} {config:#?}");
    assert!(!debug.contains(secret), "{debug}");
    assert!(debug.contains("Secret(***)"));
    // The same name looked up elsewhere yields nothing: the process environment is not read.
    let other = Dir::new()
        .without_env()
        .env("OPENAI_API_KEY", "another")
        .pins(BASE)
        .config();
    assert_eq!(
        other.providers[0]
            .endpoint
            .api_key
            .as_ref()
            .unwrap()
            .expose(),
        "another"
    );
}

#[test]
fn loopback_http_is_fine() {
    for url in [
        "http://127.0.0.1:8080/v1",
        "http://localhost:1234",
        "http://[::1]:9/v1",
    ] {
        let pins = BASE.replacen(
            "kind = \"openai\"",
            &format!("kind = \"openai\"\nbase_url = \"{url}\""),
            1,
        );
        let config = Dir::new().pins(&pins).config();
        assert_eq!(
            config.providers[0].endpoint.base_url,
            url.trim_end_matches('/')
        );
    }
}

#[test]
fn email_channel() {
    let pins = format!(
        "{BASE}\n[alerts.oncall]\nkind = \"email\"\nsmtp = \"smtps://mail.example.com:465\"\nfrom = \"modelpin <m@example.com>\"\nto = [\"a@example.com\", \"b@example.com\"]\nusername_env = \"SMTP_USER\"\npassword_env = \"SMTP_PASSWORD\"\n"
    );
    let config = Dir::new().pins(&pins).config();
    let AlertKind::Email {
        smtp,
        from,
        to,
        username_env,
        password_env,
        ..
    } = &config.alerts[0].kind
    else {
        panic!("{:?}", config.alerts[0]);
    };
    assert_eq!(smtp, "smtps://mail.example.com:465");
    assert_eq!(from, "modelpin <m@example.com>");
    assert_eq!(to, &["a@example.com", "b@example.com"]);
    assert_eq!(username_env.as_deref(), Some("SMTP_USER"));
    assert_eq!(password_env.as_deref(), Some("SMTP_PASSWORD"));
}

#[test]
fn load_from_env_reads_the_process_environment() {
    let pins = BASE.replace(
        "kind = \"openai\"\napi_key_env = \"OPENAI_API_KEY\"",
        "kind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:1/v1\"",
    );
    let dir = Dir::new().pins(&pins);
    let config = crate::config::load_from_env(&dir.path()).unwrap();
    assert_eq!(config.pins[0].kind, ProviderKind::OpenAiCompatible);
}

#[test]
fn the_fleet_digest_leaves_out_what_each_member_sets_its_own_way() {
    use crate::config::tests_support::config_with;
    let with = |settings: &str| {
        let pins = BASE.replacen(
            "version = 1\n",
            &format!("version = 1\n\n[settings]\n{settings}\n"),
            1,
        );
        config_with(&pins, PROBE)
    };
    let a = with("store = \"store-a\"\nmetrics = \"127.0.0.1:9464\"\ntimeout = \"30s\"");
    let b = with(
        "store = \"store-b\"  # another disk\nmetrics = \"127.0.0.1:9465\"\ntimeout = \"30s\"",
    );
    let c = with("store = \"store-a\"\nmetrics = \"127.0.0.1:9464\"\ntimeout = \"20s\"");
    assert_ne!(a.digest, b.digest);
    assert_eq!(a.fleet_digest, b.fleet_digest);
    assert_ne!(a.fleet_digest, c.fleet_digest);
}
