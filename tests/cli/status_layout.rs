//! The status page as a person sees it: laid out by a real Chromium (driven over the DevTools
//! protocol by `playwright-core`, since `--dump-dom` cannot measure layout) at a laptop's
//! 1280 × 800 and a phone's 390 × 844, with the long IDs real fleets have. Nothing may scroll
//! sideways, and every pin's status and served model must be on screen. Also here: the start
//! line that names the page's URL, and the rule by which a traffic verdict stops counting.
//!
//! `playwright-core` is the npm package `.ci/run` installs into `/opt/modelpin-browser`
//! (`MODELPIN_PLAYWRIGHT` names another copy), run by `node`; Chromium is Debian's. Without
//! either the browser test fails under CI and is skipped elsewhere with a notice.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{KEY_VAR, Sim, Test};
use crate::support::daemon::Daemon;
use crate::support::http::fetch;
use crate::support::status::rows;
use crate::support::wait::eventually;
use crate::world::{model, reroute, single};

/// Bedrock cross-region profile IDs: the longest shape of ID providers hand out.
const LONG_MODEL: &str = "us.anthropic.claude-sonnet-5-5-20261104-v1:0";
const LONG_STEADY: &str = "eu.anthropic.claude-haiku-5-1-20261020-v1:0";
const LONG_SWAP: &str = "us.anthropic.claude-opus-4-8-20260611-v1:0";
/// Pin ids of 40 characters, as teams name them.
const DRIFTING: &str = "payments-support-summariser-eu-west-prod";
const UNLOCKED: &str = "claims-intake-classifier-us-east-staging";
const STEADY: &str = "search-query-rewriter-ap-south-canary-01";

/// The URL of the status page: the address the daemon bound (its start line names it).
pub fn page_url(daemon: &Daemon) -> String {
    format!("http://127.0.0.1:{}/", daemon.port())
}

/// The port of a page URL `http://127.0.0.1:PORT/`.
pub fn port_of(url: &str) -> u16 {
    url.trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .unwrap_or_else(|_| panic!("a loopback URL with a port: {url}"))
}

/// Three pins with 40-character ids on long model IDs: one served another model after its lock
/// (drift), one never locked (inconclusive), one steady (ok); audited every second, the
/// listener on a port the system picks.
fn long_fleet() -> (Sim, Test) {
    let sim = Sim::start(reroute(
        single(LONG_MODEL, model(LONG_MODEL, 4.0, (3.0, 15.0))),
        LONG_STEADY,
        model(LONG_STEADY, 4.0, (0.8, 4.0)),
        Reported::Honest,
    ));
    let pins = format!(
        "version = 1\n\n[settings]\ntimeout = \"5s\"\nbudget = \"30s\"\nschedule = \"* * * * * *\"\nmetrics = \"127.0.0.1:0\"\nstore = \"store\"\n\n[providers.bedrock-gw]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\napi_key_env = \"{KEY_VAR}\"\n\n{}{}{}",
        sim.url(ProviderKind::OpenAi),
        pin(DRIFTING, LONG_MODEL),
        pin(UNLOCKED, LONG_STEADY),
        pin(STEADY, LONG_STEADY),
    );
    let test = Test::new()
        .pins(&pins)
        .file("probes/arith.toml", crate::harness::ARITH);
    test.run(&["lock", "--pin", DRIFTING, "--pin", STEADY])
        .code(0);
    (sim, test)
}

fn pin(id: &str, model: &str) -> String {
    format!(
        "[[pin]]\nid = \"{id}\"\nprovider = \"bedrock-gw\"\nmodel = \"{model}\"\nprobes = [\"probes/*.toml\"]\nsamples = 2\nprice = {{ input = 3.0, output = 15.0 }}\n\n"
    )
}

/// node and playwright-core, or `None` (after a notice) outside CI when either is missing.
fn playwright() -> Option<(PathBuf, PathBuf)> {
    let module = std::env::var_os("MODELPIN_PLAYWRIGHT").map_or_else(
        || PathBuf::from("/opt/modelpin-browser/node_modules/playwright-core"),
        PathBuf::from,
    );
    let chromium = std::env::var_os("MODELPIN_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let node = Command::new("node").arg("--version").output();
    let ready = node.is_ok_and(|o| o.status.success())
        && module.join("package.json").is_file()
        && chromium.is_file();
    if ready {
        return Some((module, chromium));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "node, playwright-core ({}) and Chromium ({}) are required in CI (.ci/run installs them)",
        module.display(),
        chromium.display()
    );
    eprintln!(
        "notice: node, playwright-core or chromium missing; skipping the status page layout test"
    );
    None
}

/// Where the screenshots go: `MODELPIN_SCREENSHOTS` (set it to `docs` to refresh docs/daemon.md's),
/// else the build's temporary directory.
fn screenshot(name: &str) -> PathBuf {
    let path = match std::env::var_os("MODELPIN_SCREENSHOTS") {
        Some(dir) => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(dir)
            .join(name),
        // Apart from the browser test's own screenshots, which run beside these.
        None => PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("layout-{name}")),
    };
    std::fs::create_dir_all(path.parent().expect("a directory")).expect("screenshot dir");
    path
}

#[test]
fn status_page_reads_at_1280_and_on_a_phone_with_long_ids_and_no_sideways_scroll() {
    let Some((module, chromium)) = playwright() else {
        return;
    };
    let (sim, test) = long_fleet();
    sim.set(reroute(
        sim.sim.scenario(),
        LONG_MODEL,
        model(LONG_SWAP, 4.0, (3.0, 15.0)),
        Reported::Honest,
    ));
    let daemon = Daemon::start(&test);
    let url = page_url(&daemon);
    let port = port_of(&url);
    // Synchronise on what the page shows: all three verdicts, and a strip of several audits.
    let want = [
        (DRIFTING, "drift"),
        (UNLOCKED, "inconclusive"),
        (STEADY, "ok"),
    ];
    let mut html = String::new();
    let ready = eventually(Duration::from_secs(60), || {
        html = fetch(port, "/", "").map(|r| r.text()).unwrap_or_default();
        let shown = rows(&html);
        shown.len() == 3
            && shown
                .iter()
                .zip(&want)
                .all(|((i, s), (wi, ws))| i == wi && s == ws)
            // Marks on the card's strip (its title and served IDs link to the pin too).
            && html.split("<article").skip(1).all(|c| {
                c.split("<div class=\"strip\"")
                    .nth(1)
                    .is_some_and(|strip| strip.split("</div>").next().unwrap_or_default().matches("<a href=").count() >= 7)
            })
    });
    assert!(ready, "{:?}\n{html}\n{}", rows(&html), daemon.log());

    let jobs = serde_json::json!([
        {"url": url, "width": 1280, "height": 800, "screenshot": screenshot("status-page.png")},
        {"url": url, "width": 390, "height": 844, "screenshot": screenshot("status-page-phone.png")},
        {"url": url, "width": 1280, "height": 800, "dark": true, "screenshot": PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("layout-status-page-dark.png")},
        {"url": format!("{url}pins/{DRIFTING}"), "width": 1280, "height": 800, "screenshot": screenshot("status-page-pin.png")},
        {"url": format!("{url}pins/{DRIFTING}"), "width": 390, "height": 844, "screenshot": null},
    ]);
    let out = Command::new("node")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cli/status_layout.js"))
        .arg(&module)
        .arg(&chromium)
        .arg(jobs.to_string())
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "playwright: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pages: serde_json::Value = serde_json::from_slice(&out.stdout).expect("measurements");
    for page in pages.as_array().unwrap() {
        let (scroll, client) = (&page["scroll_width"], &page["client_width"]);
        assert_eq!(page["status"], 200, "{page}");
        assert!(
            scroll.as_f64() <= client.as_f64(),
            "{} at {} px scrolls sideways: scrollWidth {scroll} > clientWidth {client}",
            page["url"],
            page["width"]
        );
        let Some(cards) = page["cards"].as_array().filter(|c| !c.is_empty()) else {
            continue; // a pin's own page has no cards
        };
        let shown: Vec<&str> = cards.iter().map(|c| c["pin"].as_str().unwrap()).collect();
        assert_eq!(shown, [DRIFTING, UNLOCKED, STEADY], "{page}");
        for card in cards {
            assert_card_reads(card, &page["width"]);
        }
        if page["width"] == 1280 {
            let drifting = &cards[0];
            assert!(
                drifting["card_height"].as_f64() <= Some(420.0),
                "the drifting pin's card reads at a glance at 1280 px: {drifting}"
            );
        }
    }
}

/// One pin's card as measured: status and served model on screen, the whole ID in reach, marks
/// a person can read and click, findings across the card.
fn assert_card_reads(card: &serde_json::Value, width: &serde_json::Value) {
    let at = format!("{} at {width} px", card["pin"]);
    assert_eq!(
        card["status_visible"], true,
        "{at}: status off screen: {card}"
    );
    // A pin without a baseline is not called (nothing to compare with), so it serves nothing.
    if card["pin"] == UNLOCKED {
        assert_eq!(card["served"], serde_json::json!([]), "{at}: {card}");
    } else {
        assert_card_serves(card, &at);
    }
    assert_marks_read(card, &at);
}

/// The served model on screen, its whole ID in reach.
fn assert_card_serves(card: &serde_json::Value, at: &str) {
    assert_eq!(
        card["served_visible"], true,
        "{at}: served model off screen: {card}"
    );
    let served = card["served"][0].as_str().unwrap();
    let expected = if card["pin"] == DRIFTING {
        LONG_SWAP
    } else {
        LONG_STEADY
    };
    assert_eq!(
        served, expected,
        "{at}: the whole ID is in the title: {card}"
    );
}

/// Marks a person can read and click; findings across the card.
fn assert_marks_read(card: &serde_json::Value, at: &str) {
    // Marks a person can read and click: 8 px wide at least, probe marks 1.6rem tall.
    assert!(card["marks"].as_u64() >= Some(7), "{at}: {card}");
    assert!(card["mark_min_width"].as_f64() >= Some(8.0), "{at}: {card}");
    assert!(
        card["mark_min_height"].as_f64() >= Some(14.0),
        "{at}: {card}"
    );
    assert_eq!(card["marks_clickable"], true, "{at}: {card}");
    // The findings get the card's width, not a squeezed column.
    if let Some(what) = card["findings_width"].as_f64() {
        let width = card["card_width"].as_f64().unwrap();
        assert!(
            what >= 0.8 * width,
            "{at}: findings {what} px of {width}: {card}"
        );
    }
}

#[test]
fn daemon_start_names_the_status_page_url_plainly() {
    let (_sim, test) = long_fleet();
    let daemon = Daemon::start(&test);
    let url = page_url(&daemon);
    assert_ne!(daemon.port(), 0, "the bound port, not the configured 0");
    // The start line is what a person reads: it names the page's URL in full.
    assert!(
        daemon.log().contains(&format!("url={url}")),
        "the start line names {url}: {}",
        daemon.log()
    );
    let answer = fetch(port_of(&url), "/", "").expect("the page answers at that URL");
    assert_eq!(answer.status, 200);
    assert!(answer.text().contains("<h1>modelpin status</h1>"));
}

#[test]
fn a_traffic_drift_stops_setting_the_status_once_a_later_probe_audit_finds_none() {
    use prost::Message as _;

    use crate::support::http::post;
    use crate::support::traffic::ID;
    use crate::support::traffic::{request, span};
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let settings = "timeout = \"5s\"\nschedule = \"* * * * * *\"\nmetrics = \"127.0.0.1:0\"\nstore = \"store\"";
    let test = Test::new()
        .pins(&crate::harness::one_pin_with(
            settings,
            ProviderKind::OpenAi,
            &sim.url(ProviderKind::OpenAi),
            ID,
            "samples = 2\n\n[traffic]\n",
        ))
        .file("probes/arith.toml", crate::harness::ARITH);
    test.run(&["lock"]).code(0);
    let daemon = Daemon::start(&test);
    let port = port_of(&page_url(&daemon));
    let spans = (0..4).map(|i| span(i, ID, "acme-flash-002")).collect();
    let answer = post(
        port,
        "/v1/traces",
        &["Content-Type: application/x-protobuf"],
        &request(spans).encode_to_vec(),
    )
    .expect("the receiver answers");
    assert_eq!(answer.status, 200);
    let judged = eventually(Duration::from_secs(10), || {
        let page = fetch(port, "/api/history?limit=1000", "").map(|r| r.text());
        let records: Vec<serde_json::Value> = page
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        records
            .iter()
            .any(|r| r["source"] == "traffic" && r["pin"]["status"] == "drift")
    });
    assert!(judged, "a traffic drift verdict: {}", daemon.log());
    // The probe audits that follow find nothing wrong: the pin stands on them, and the page
    // still says what traffic saw and why it no longer counts.
    let mut html = String::new();
    let cleared = eventually(Duration::from_secs(20), || {
        html = fetch(port, "/", "").map(|r| r.text()).unwrap_or_default();
        rows(&html) == [("pin".to_owned(), "ok".to_owned())]
    });
    assert!(cleared, "{:?}\n{html}\n{}", rows(&html), daemon.log());
    assert!(
        html.contains("Traffic verdict drift of <time")
            && html.contains("no longer counts: a later probe audit"),
        "{html}"
    );
    assert!(
        html.contains("until 30 minutes pass without a newer one"),
        "the rule is stated: {html}"
    );
    let pin = fetch(port, "/pins/pin", "").unwrap().text();
    assert!(pin.contains("no longer counts"), "{pin}");
}
