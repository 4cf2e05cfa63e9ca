//! Hostile setups at the CLI boundary: a base URL that hides its real host, a symlink planted
//! next to the lock, two `lock` runs at once, and alert channels whose secrets are missing or
//! malformed.

use std::process::{Command, Stdio};

use modelpin::provider::ProviderKind;

use crate::harness::{Sim, Test, one_pin_with};
use crate::support::pins::{Channel, Pin, Pins, Provider};
use crate::support::receivers::Webhook;
use crate::world::{model, single};

const ID: &str = "acme-pro-001";

/// One pin of `ID` on the simulator, one sample, short deadlines.
fn plain_pins(sim: &Sim) -> Pins {
    Pins::new()
        .short()
        .provider(Provider::new(
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
        ))
        .pin(Pin::new("pin", ID).samples(1))
}

#[test]
fn a_base_url_that_hides_its_real_host_is_refused() {
    for (url, says) in [
        (
            r"http://evil.example\@127.0.0.1:9/v1",
            "refusing plain `http://` to `evil.example`",
        ),
        (
            "http://user:pw@127.0.0.1:9/v1",
            "`base_url` must not contain user info",
        ),
    ] {
        let pins = one_pin_with(
            crate::harness::SETTINGS,
            ProviderKind::OpenAi,
            "URL",
            ID,
            "",
        )
        .replace("base_url = \"URL\"", &format!("base_url = '{url}'"));
        let test = Test::new()
            .pins(&pins)
            .file("probes/arith.toml", crate::harness::ARITH);
        let run = test.run(&["check"]);
        run.code(2);
        assert!(run.stderr.contains(says), "{url}: {}", run.stderr);
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_planted_at_the_temporary_path_is_not_followed() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = plain_pins(&sim).project().file("victim", "precious");
    std::os::unix::fs::symlink(test.path("victim"), test.path("modelpin.lock.tmp")).unwrap();
    test.run(&["lock"]).code(0);
    assert_eq!(test.read("victim"), "precious");
    let lock = test.path("modelpin.lock");
    assert!(!lock.symlink_metadata().unwrap().is_symlink());
    assert!(test.read("modelpin.lock").contains("\"pin\""));
}

#[test]
fn two_lock_runs_at_once_keep_both_baselines() {
    let mut slow = model(ID, 4.0, (1.0, 2.0));
    slow.latency_ms = 300;
    let sim = Sim::start(single(ID, slow));
    let test = plain_pins(&sim)
        .pin(Pin::new("pin2", ID).samples(1))
        .project();
    for round in 0..3 {
        let _ = std::fs::remove_file(test.path("modelpin.lock"));
        let runs: Vec<_> = ["pin", "pin2"]
            .into_iter()
            .map(|pin| {
                Command::new(assert_cmd::cargo::cargo_bin("modelpin"))
                    .current_dir(test.dir.path())
                    .args(["lock", "--pin", pin])
                    .envs(test.envs().iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .env_remove("MODELPIN_CONFIG")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for run in runs {
            let out = run.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let lock: serde_json::Value = serde_json::from_str(&test.read("modelpin.lock")).unwrap();
        let pins = lock["pins"].as_object().unwrap();
        assert!(
            pins.contains_key("pin") && pins.contains_key("pin2"),
            "round {round}: a baseline was lost: {:?}",
            pins.keys().collect::<Vec<_>>()
        );
    }
}

fn hook_project(hook: &Webhook, secret: Option<&str>) -> Test {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = plain_pins(&sim)
        .alert(Channel::webhook("hook", &hook.url()).set("secret_env", "HOOK_SECRET"))
        .project();
    // The simulator is not needed after loading; keep it alive for `check` anyway.
    std::mem::forget(sim);
    match secret {
        Some(secret) => test.env("HOOK_SECRET", secret),
        None => test,
    }
}

#[test]
fn a_channel_whose_secret_variable_is_unset_fails_closed_at_load() {
    let hook = Webhook::start();
    let test = hook_project(&hook, None);
    for args in [
        &["alerts", "test"][..],
        &["daemon"][..],
        &["check", "--notify"][..],
    ] {
        let run = test.run(args);
        run.code(2);
        assert!(
            run.stderr
                .contains("environment variable `HOOK_SECRET` is not set"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert!(hook.hits().is_empty(), "nothing was sent unsigned");
    // Auditing alone needs no channel secret.
    let check = test.run(&["check"]);
    assert_ne!(check.code, 2, "{}", check.stderr);
}

#[test]
fn an_unpadded_whsec_secret_signs() {
    let hook = Webhook::start();
    // 20 key bytes: base64 with one `=` of padding, dropped here.
    let test = hook_project(&hook, Some("whsec_bWFya2VyLXdlYmhvb2stc2VjcmU"));
    let run = test.run(&["alerts", "test"]);
    run.code(0);
    let hits = hook.hits();
    assert_eq!(hits.len(), 1);
    assert!(
        hits[0]
            .header("webhook-signature")
            .is_some_and(|s| s.starts_with("v1,")),
        "{hits:?}"
    );
}

#[test]
fn a_bad_webhook_secret_is_named_with_its_actual_problem() {
    let hook = Webhook::start();
    for (secret, says) in [
        ("not-a-whsec-secret", "it does not start with `whsec_`"),
        ("whsec_!!!!", "the part after `whsec_` is not base64"),
    ] {
        let run = hook_project(&hook, Some(secret)).run(&["alerts", "test"]);
        run.code(2);
        assert!(run.stderr.contains(says), "{secret}: {}", run.stderr);
        assert!(!run.stderr.contains(secret), "the secret is not echoed");
    }
}
