//! Alerts that arrive once, end to end: the daemon (or `check --notify`) against the simulator,
//! with real receivers on loopback — a webhook endpoint, an SMTP server, Alertmanager — and the
//! faults that make "nothing lost, nothing doubled" hard: a receiver that is down, a daemon
//! killed with an undelivered notification, a receiver slower than the client's timeout.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::harness::Test;
use crate::support::daemon::Daemon;
use crate::support::drift::{ID, clean_sim, pins, reroute_now, restore};
use crate::support::pins::{Channel, Pins};
use crate::support::ports::ClosedPort;
use crate::support::receivers::{Alertmanager, Hit, Smtp, Webhook, verify_signatures};
use crate::support::wait::{DEADLINE, eventually};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A locked project audited every second, with the given alert channels.
fn project(sim: &crate::harness::Sim, channels: Vec<Channel>) -> Test {
    channels
        .into_iter()
        .fold(pins(sim, 1), Pins::alert)
        .setting("external_url", EXTERNAL)
        .project()
        .env("HOOK_SECRET", SECRET)
        .locked()
}

/// Where the tests say people reach the daemon: alerts link to pages under it.
const EXTERNAL: &str = "https://modelpin.example.com/status/";

/// A signed webhook channel `hook`.
fn webhook(url: &str, repeat: &str) -> Channel {
    Channel::webhook("hook", url)
        .set("secret_env", "HOOK_SECRET")
        .set("repeat", repeat)
}

fn logical(hits: &[Hit]) -> BTreeSet<String> {
    hits.iter()
        .filter_map(|h| h.header("webhook-id").map(str::to_owned))
        .collect()
}

#[test]
fn a_reroute_sends_exactly_one_email_and_one_signed_webhook() {
    let dir = tempfile::tempdir().unwrap();
    let Some(smtp) = Smtp::start(dir.path()) else {
        return;
    };
    let hook = Webhook::start();
    let sim = clean_sim();
    let test = project(
        &sim,
        vec![
            webhook(&hook.url(), "1h"),
            Channel::email("mail", smtp.port),
        ],
    );
    let mut daemon = Daemon::start(&test);
    daemon.wait_stored(1);
    assert!(
        hook.hits().is_empty() && smtp.messages().is_empty(),
        "a clean pin alerts nobody"
    );
    reroute_now(&sim);
    daemon.wait_notifications("hook", "delivered", 1);
    daemon.wait_notifications("mail", "delivered", 1);
    assert!(
        !hook.hits().is_empty() && !smtp.messages().is_empty(),
        "{}",
        daemon.log()
    );
    // Several more audits of the same drift, each with its alert evaluated and nothing queued.
    daemon.wait_more_stored(3);
    let hits = hook.hits();
    assert_eq!(
        hits.len(),
        1,
        "one webhook while the alert keeps firing: {hits:?}"
    );
    let mails = smtp.messages();
    assert_eq!(mails.len(), 1, "one email");

    let body = hits[0].json();
    assert_eq!(body["status"], "firing");
    assert_eq!(body["pin"], "pin");
    let mismatch = body["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "served_model_mismatch")
        .expect("the mismatch finding")
        .clone();
    // The finding's own `→` line, as the CLI prints it, and a link to the pin's page.
    let action = mismatch["action"].as_str().expect("an action").to_owned();
    let cli = test.run(&["check", "--format", "json"]);
    let reported = cli.json();
    let from_cli = reported
        .pin("pin")
        .finding("served_model_mismatch")
        .action
        .clone()
        .unwrap();
    assert_eq!(action, from_cli);
    assert_eq!(body["url"], "https://modelpin.example.com/status/pins/pin");
    let id = hits[0].header("webhook-id").unwrap();
    assert_eq!(hits[0].header("idempotency-key"), Some(id));
    assert_eq!(body["id"], id);
    assert!(
        verify_signatures(SECRET, &hits),
        "signature verifies independently"
    );

    let mail = &mails[0];
    assert!(
        mail.contains(&format!("Message-ID: <{}@modelpin>", mail_id(mail))),
        "{mail}"
    );
    assert!(
        mail.contains("What changed:")
            && mail.contains("What to do:")
            && mail.contains("served_model_mismatch"),
        "{mail}"
    );
    let unfolded = mail.replace("=\r\n", "").replace("=\n", "");
    assert!(
        unfolded.contains(&format!(
            "  - served_model_mismatch: {}",
            &action[..40.min(action.len())]
        )) && unfolded.contains("Pin page: https://modelpin.example.com/status/pins/pin")
            && !unfolded.contains("pin a dated snapshot"),
        "{mail}"
    );
    assert!(
        mail.contains("MIME-Version: 1.0") && mail.contains("Auto-Submitted: auto-generated"),
        "{mail}"
    );
    // Evidence reads as lines (what was accepted, what was served), not a cut JSON blob.
    assert!(
        mail.contains("    accepted: ")
            && mail.contains("    unexpected:")
            && !mail.contains("{\""),
        "{mail}"
    );
    daemon.signal("TERM");
    assert_eq!(daemon.wait_exit(Duration::from_secs(12)), Some(0));
}

fn mail_id(mail: &str) -> String {
    mail.lines()
        .find_map(|l| l.strip_prefix("Message-ID: <"))
        .and_then(|rest| rest.split('@').next())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_receiver_down_when_the_alert_fires_gets_it_exactly_once_when_it_comes_back() {
    let down = ClosedPort::new();
    let sim = clean_sim();
    let test = project(&sim, vec![webhook(&down.url("/hook"), "1h")]);
    reroute_now(&sim);
    let daemon = Daemon::start(&test);
    daemon.wait_notifications("hook", "retried", 2);
    let hook = Webhook::on(down);
    daemon.wait_notifications("hook", "delivered", 1);
    assert!(!hook.hits().is_empty(), "{}", daemon.log());
    // Audits go on after the delivery, and the channel is passed over with them.
    daemon.wait_more_stored(3);
    assert_eq!(hook.hits().len(), 1, "delivered exactly once");
    assert_eq!(daemon.notifications("hook", "delivered"), 1, "delivered");
}

#[test]
fn a_notification_undelivered_at_kill_9_is_delivered_after_restart() {
    let down = ClosedPort::new();
    let sim = clean_sim();
    let test = project(&sim, vec![webhook(&down.url("/hook"), "1h")]);
    reroute_now(&sim);
    let mut first = Daemon::start(&test);
    first.wait_notifications("hook", "retried", 1);
    first.kill();
    let hook = Webhook::on(down);
    let second = Daemon::start(&test);
    second.wait_notifications("hook", "delivered", 1);
    assert!(!hook.hits().is_empty(), "{}", second.log());
    second.wait_more_stored(3);
    let hits = hook.hits();
    assert_eq!(
        hits.len(),
        1,
        "the queued notification, once; the restart does not fire it again"
    );
    assert_eq!(hits[0].json()["status"], "firing");
}

#[test]
fn a_receiver_slower_than_the_client_timeout_sees_one_logical_notification() {
    let hook = Webhook::slow_first(Duration::from_secs(4));
    let sim = clean_sim();
    let test = project(&sim, vec![webhook(&hook.url(), "1h")]);
    reroute_now(&sim);
    let daemon = Daemon::start(&test);
    daemon.wait_notifications("hook", "delivered", 1);
    assert!(hook.hits().len() >= 2, "{}", daemon.log());
    let hits = hook.hits();
    assert_eq!(
        logical(&hits).len(),
        1,
        "every attempt carried the same id: {:?}",
        logical(&hits)
    );
    assert!(verify_signatures(SECRET, &hits));
}

#[test]
fn repeat_and_resolve_timing_with_a_short_repeat() {
    let hook = Webhook::start();
    let sim = clean_sim();
    let test = project(&sim, vec![webhook(&hook.url(), "3s")]);
    let daemon = Daemon::start(&test);
    daemon.wait_stored(1);
    reroute_now(&sim);
    daemon.wait_notifications("hook", "delivered", 2);
    assert!(hook.hits().len() >= 2, "a repeat arrives: {}", daemon.log());
    restore(&sim);
    let resolved = eventually(DEADLINE, || {
        hook.hits().iter().any(|h| h.json()["status"] == "resolved")
    });
    assert!(resolved, "{}", daemon.log());
    // More audits of the fixed pin, and every delivery the daemon counted is at the receiver.
    daemon.wait_more_stored(3);
    daemon.wait_scrape("every delivery counted", |s| {
        s.count(
            "modelpin_notifications_total",
            &[("channel", "hook"), ("result", "delivered")],
        ) == hook.hits().len() as u64
    });
    let hits = hook.hits();
    let firing: Vec<_> = hits
        .iter()
        .filter(|h| h.json()["status"] == "firing")
        .collect();
    let times: Vec<i64> = firing
        .iter()
        .map(|h| h.header("webhook-timestamp").unwrap().parse().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[1] - w[0] >= 3),
        "repeats no closer than `repeat`: {times:?}"
    );
    assert_eq!(
        hits.iter()
            .filter(|h| h.json()["status"] == "resolved")
            .count(),
        1,
        "resolved once"
    );
    assert_eq!(
        logical(&hits).len(),
        hits.len(),
        "every notification has its own id"
    );
}

#[test]
fn alertmanager_shows_the_alert_active_then_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let Some(am) = Alertmanager::start(dir.path()) else {
        return;
    };
    let sim = clean_sim();
    let test = project(&sim, vec![Channel::alertmanager("am", am.port)]);
    let daemon = Daemon::start(&test);
    reroute_now(&sim);
    let active = eventually(DEADLINE, || {
        am.active()
            .iter()
            .any(|a| a["labels"]["code"] == "served_model_mismatch")
    });
    assert!(active, "{}", daemon.log());
    let alert = am
        .active()
        .into_iter()
        .find(|a| a["labels"]["code"] == "served_model_mismatch")
        .unwrap();
    assert_eq!(alert["labels"]["pin"], "pin");
    assert_eq!(alert["labels"]["model"], ID);
    assert_eq!(alert["labels"]["severity"], "error");
    // Alertmanager's own API shows what to do and where the pin's page is.
    let page = "https://modelpin.example.com/status/pins/pin";
    assert_eq!(alert["annotations"]["url"], page, "{alert}");
    assert_eq!(alert["generatorURL"], page, "{alert}");
    assert!(
        alert["annotations"]["action"]
            .as_str()
            .is_some_and(|a| a.contains("modelpin lock --pin pin")),
        "{alert}"
    );
    restore(&sim);
    let resolved = eventually(DEADLINE, || am.active().is_empty());
    assert!(
        resolved,
        "resolved after the model is restored: {:?}\n{}",
        am.active(),
        daemon.log()
    );
}

#[test]
fn alerts_test_reports_each_channel_and_fails_on_an_unreachable_one() {
    let hook = Webhook::start();
    let sim = clean_sim();
    let dead = ClosedPort::new();
    let test = project(
        &sim,
        vec![
            webhook(&hook.url(), "1h"),
            Channel::webhook("dead", &dead.url("/hook")),
        ],
    );
    let ok = test.run(&["alerts", "test", "--channel", "hook"]);
    ok.code(0);
    assert!(ok.stdout.contains("hook: delivered"), "{}", ok.stdout);
    let hits = hook.hits();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].json()["test"], true);
    assert!(verify_signatures(SECRET, &hits));
    let started = Instant::now();
    let all = test.run(&["alerts", "test"]);
    all.code(1);
    assert!(
        all.stdout.contains("dead: FAILED") && all.stdout.contains("connect"),
        "{}",
        all.stdout
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn check_notify_uses_the_same_outbox_and_dedup() {
    let hook = Webhook::start();
    let sim = clean_sim();
    let test = project(&sim, vec![webhook(&hook.url(), "1h")]);
    reroute_now(&sim);
    test.run(&["check", "--notify"]).code(1);
    assert_eq!(hook.hits().len(), 1);
    test.run(&["check", "--notify"]).code(1);
    assert_eq!(
        hook.hits().len(),
        1,
        "still firing, repeat not due: nothing doubled"
    );
    restore(&sim);
    let run = test.run(&["check", "--notify"]);
    run.code(0);
    let hits = hook.hits();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[1].json()["status"], "resolved");
    assert!(run.stderr.contains("1 delivered"), "{}", run.stderr);
}

/// A server reached over `smtp://` off loopback that offers no STARTTLS: refused before AUTH
/// and not tried again, since the same server answers the same way. (`0.0.0.0` is not loopback
/// to the config, yet Linux delivers it to the local server.)
#[cfg(target_os = "linux")]
#[test]
fn an_smtp_server_without_starttls_is_refused_once_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let Some(smtp) = Smtp::start(dir.path()) else {
        return;
    };
    let sim = clean_sim();
    let mail = Channel::email("mail", smtp.port)
        .set("smtp", format!("smtp://0.0.0.0:{}", smtp.port))
        .set("username_env", "SMTP_USER")
        .set("password_env", "SMTP_PASSWORD");
    let test = project(&sim, vec![mail])
        .env("SMTP_USER", "alerts")
        .env("SMTP_PASSWORD", "hunter2-password");
    let run = test.run(&["alerts", "test"]);
    run.code(1);
    assert!(run.stdout.contains("mail: FAILED"), "{}", run.stdout);
    assert!(run.stdout.contains("STARTTLS"), "{}", run.stdout);
    assert!(!run.stdout.contains("gave up after"), "{}", run.stdout);
    assert!(smtp.messages().is_empty());
}
