//! One identifier rule for every id a user names, look-alike ids warned about, and provider text
//! that reorders characters kept inert in metric labels.

use std::time::Duration;

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{ARITH, SETTINGS, Sim, Test, one_pin_with};
use crate::support::daemon::Daemon;
use crate::support::wait::eventually;
use crate::world::{model, single};

const ID: &str = "acme-pro-001";

fn project(sim: &Sim) -> (String, Test) {
    let pins = one_pin_with(
        SETTINGS,
        ProviderKind::OpenAi,
        &sim.url(ProviderKind::OpenAi),
        ID,
        "samples = 1",
    );
    let test = Test::new().pins(&pins).file("probes/arith.toml", ARITH);
    (pins, test)
}

#[test]
fn a_bidi_override_in_a_probe_id_is_refused_like_in_a_pin_id() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let (_, test) = project(&sim);
    let test = test.file(
        "probes/arith.toml",
        &ARITH.replace("id = \"arith\"", "id = \"ar\u{202e}ith\""),
    );
    let run = test.run(&["check"]);
    run.code(2);
    assert!(
        run.stderr.contains("probes/arith.toml:1:6")
            && run
                .stderr
                .contains("`id` must not contain control or invisible characters (found U+202E)"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains('\u{202e}'),
        "the error shows it escaped"
    );
}

#[test]
fn provider_and_channel_names_follow_the_same_rule() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let (pins, test) = project(&sim);
    let pins = pins
        .replace("[providers.p]", "[providers.\"p\u{200b}\"]")
        .replace("provider = \"p\"", "provider = \"p\u{200b}\"");
    let pins = format!(
        "{pins}\n[alerts.\"team\u{2066}\"]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:9/hook\"\n"
    );
    let run = test.pins(&pins).run(&["check"]);
    run.code(2);
    for says in [
        "`provider name` must not contain control or invisible characters (found U+200B)",
        "`alert channel name` must not contain control or invisible characters (found U+2066)",
    ] {
        assert!(run.stderr.contains(says), "{says}: {}", run.stderr);
    }
}

#[test]
fn pin_ids_that_differ_only_by_look_alike_characters_are_warned_about_with_both_places() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let (pins, test) = project(&sim);
    let first = pins.replace("id = \"pin\"", "id = \"p1\"");
    let second =
        first[first.find("[[pin]]").unwrap()..].replace("id = \"p1\"", "id = \"\u{440}1\"");
    let test = test.pins(&format!("{first}\n{second}"));
    let written = test.read("pins.toml");
    let line_of = |id: &str| {
        1 + written
            .lines()
            .position(|l| l == format!("id = \"{id}\""))
            .unwrap()
    };
    let run = test.run(&["lock"]);
    run.code(0);
    let want = format!(
        "warning: pin ids `p1` ({dir}/pins.toml:{a}:6) and `\u{440}1` ({dir}/pins.toml:{b}:6) differ only in characters that look alike (U+0440)",
        dir = test.dir.path().display(),
        a = line_of("p1"),
        b = line_of("\u{440}1"),
    );
    assert!(
        run.stderr.contains(&want)
            || run
                .stderr
                .contains(&want.replace(&format!("{}/", test.dir.path().display()), "")),
        "{want}\n{}",
        run.stderr
    );
}

#[test]
fn a_served_model_with_a_bidi_override_is_escaped_in_metric_labels() {
    let served = "y\u{202e}gnp.exe";
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.routes.get_mut(ID).unwrap().report = Reported::Fixed(served.to_owned());
    let sim = Sim::start(scenario);
    let settings = "timeout = \"3s\"\nbudget = \"10s\"\nschedule = \"* * * * * *\"\nmetrics = \"127.0.0.1:0\"\nstore = \"store\"";
    let test = Test::new()
        .pins(&one_pin_with(
            settings,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 1",
        ))
        .file("probes/arith.toml", ARITH);
    test.run(&["lock"]).code(0);
    let daemon = Daemon::start(&test);
    let mut scrape = String::new();
    assert!(
        eventually(Duration::from_secs(30), || {
            scrape = daemon.get("/metrics").map(|r| r.text()).unwrap_or_default();
            scrape.contains("gnp.exe")
        }),
        "the served model reached the metrics: {}",
        daemon.log()
    );
    assert!(
        !scrape.contains('\u{202e}'),
        "a raw U+202E in a label: {scrape}"
    );
    assert!(
        scrape.contains("served=\"y\\\\u{202e}gnp.exe\""),
        "the label shows the override as an escape: {scrape}"
    );
    crate::support::tools::promtool_accepts(&scrape);
    // The history answer escapes it as the report does, and no cache keeps the answer.
    let history = daemon.get("/api/history").unwrap();
    let body = history.text();
    assert!(body.contains("gnp.exe"), "{body}");
    assert!(
        !body.contains('\u{202e}'),
        "a raw U+202E in /api/history: {body}"
    );
    assert!(body.contains("y\\u202egnp.exe"), "{body}");
    assert_eq!(
        history.header("cache-control").as_deref(),
        Some("private, no-store")
    );
    assert_eq!(history.header("vary").as_deref(), Some("Authorization"));
}

#[test]
fn a_webhook_body_carries_a_bidi_override_only_as_an_escape() {
    use crate::support::pins::Channel;
    use crate::support::receivers::Webhook;
    let hook = Webhook::start();
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))));
    let test = crate::support::drift::pins(&sim, 1)
        .alert(Channel::webhook("hook", &hook.url()))
        .locked();
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.routes.get_mut(ID).unwrap().report = Reported::Fixed("y\u{202e}gnp.exe".to_owned());
    sim.set(scenario);
    let daemon = Daemon::start(&test);
    daemon.wait_notifications("hook", "delivered", 1);
    let hits = hook.hits();
    let body = hits[0].text();
    assert!(body.contains("gnp.exe"), "{body}");
    assert!(
        !body.contains('\u{202e}'),
        "a raw U+202E in the webhook body: {body}"
    );
    // serde writes the character raw: the escape reads back as the served name.
    assert!(
        hits[0].json().to_string().contains("y\u{202e}gnp.exe"),
        "{body}"
    );
}
