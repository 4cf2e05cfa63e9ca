//! The status page in a real browser: headless Chromium loads it from a daemon whose pins are ok,
//! drifting and inconclusive, and the test reads the DOM Chromium built, saves a screenshot, and
//! checks from Chromium's own network log that the page asked nothing of any other host.
//!
//! Chromium is the Debian package `chromium` (`.ci/run` installs it). Without it the test fails
//! under CI and is skipped elsewhere with a notice. Every host name but 127.0.0.1 resolves to
//! nothing (`--host-resolver-rules`), so a request outside the daemon could not succeed even if
//! the page tried one; the network log says whether it tried.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::daemon::Daemon;
use crate::support::pins::EVERY_SECOND;
use crate::support::status::{STEADY, fleet, rows, wait_for};

/// The browser, or `None` (after a notice) when it is not installed outside CI.
fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var_os("MODELPIN_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(PathBuf::from));
    for path in candidates {
        if path.is_file() {
            return Some(path);
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "Chromium is required in CI (.ci/run installs the Debian package `chromium`)"
    );
    eprintln!("notice: chromium not installed; skipping the browser test of the status page");
    None
}

/// Headless Chromium with a throwaway profile, no background services, no hosts but loopback.
fn run_chromium(browser: &Path, profile: &Path, args: &[String]) -> Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-sync",
            "--disable-extensions",
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("chromium runs")
}

/// The URL of every request Chromium started on behalf of a page on 127.0.0.1, from its net-log:
/// those whose network isolation key is that site. The browser's own background requests
/// (clock sync, account checks) carry other keys and are not the page's doing.
fn page_requests(netlog: &str) -> Vec<String> {
    let log: serde_json::Value = serde_json::from_str(netlog).expect("the net-log is JSON");
    let start = &log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"];
    let events = log["events"].as_array().map_or(&[][..], Vec::as_slice);
    events
        .iter()
        .filter(|e| &e["type"] == start)
        .filter(|e| {
            e["params"]["network_isolation_key"]
                .as_str()
                .is_some_and(|key| key.starts_with("http://127.0.0.1 "))
        })
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn chromium_shows_each_pins_status_and_served_model_and_asks_no_other_host() {
    let Some(browser) = chromium() else {
        return;
    };
    let (_sim, test) = fleet("acme-flash-009", EVERY_SECOND, None);
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    wait_for(
        &daemon,
        &[
            ("swapped", "drift"),
            ("unlocked", "inconclusive"),
            ("steady", "ok"),
        ],
    );
    audited_thrice(&daemon);
    let url = format!("http://127.0.0.1:{port}/");
    let netlog = test.path("netlog.json");
    // Virtual time runs the page's 30-second refresh once while the DOM is dumped.
    let dom = run_chromium(
        &browser,
        &test.path("profile-dom"),
        &[
            format!("--log-net-log={}", netlog.display()),
            "--virtual-time-budget=40000".to_owned(),
            "--dump-dom".to_owned(),
            url.clone(),
        ],
    );
    let html = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(
        dom.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let shown = rows(&html);
    assert_eq!(
        shown,
        [
            ("swapped".to_owned(), "drift".to_owned()),
            ("unlocked".to_owned(), "inconclusive".to_owned()),
            ("steady".to_owned(), "ok".to_owned()),
        ],
        "{html}"
    );
    for served in [STEADY, "acme-flash-009"] {
        assert!(
            html.contains(&format!("<code>{served}</code>")),
            "{served}\n{html}"
        );
    }

    let log = std::fs::read_to_string(&netlog).expect("chromium wrote its net-log");
    let urls = page_requests(&log);
    assert!(
        urls.iter().any(|u| u == &url),
        "the page was loaded: {urls:?}"
    );
    let outside: Vec<&String> = urls
        .iter()
        .filter(|u| !u.starts_with(&format!("http://127.0.0.1:{port}/")))
        .collect();
    assert!(
        outside.is_empty(),
        "requests outside the daemon: {outside:?}"
    );
    let refreshed = urls.iter().filter(|u| *u == &url).count();
    assert!(
        refreshed >= 2,
        "the refresh script fetched the page again: {urls:?}"
    );

    // A desktop window, a phone, a pin's page, and the dark scheme.
    for (name, extra) in [
        ("status-page.png", &["--window-size=1280,720"][..]),
        ("status-page-phone.png", &["--window-size=390,844"][..]),
        ("status-page-pin.png", &["--window-size=1280,1400"][..]),
        (
            "status-page-dark.png",
            &["--window-size=1280,720", "--force-dark-mode"][..],
        ),
    ] {
        let shot = screenshot_path(name);
        let _ = std::fs::remove_file(&shot);
        let mut args = vec![
            format!("--screenshot={}", shot.display()),
            "--hide-scrollbars".to_owned(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args.push(if name.contains("pin") {
            format!("{url}pins/swapped")
        } else {
            url.clone()
        });
        let taken = run_chromium(&browser, &test.path(&format!("profile-{name}")), &args);
        assert!(
            taken.status.success() && shot.is_file(),
            "screenshot: {}",
            String::from_utf8_lossy(&taken.stderr)
        );
        println!("status page screenshot: {}", shot.display());
    }
}

/// A few audits more of each pin, so the strips have something to show.
fn audited_thrice(daemon: &Daemon) {
    daemon.wait_records("three audits of each pin", |records| {
        ["steady", "swapped", "unlocked"]
            .iter()
            .all(|id| records.iter().filter(|r| r.pin.id == *id).count() >= 3)
    });
}

/// Where a screenshot is kept: the build's temporary directory, which outlives the test.
fn screenshot_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).expect("target tmp dir");
    dir.join(name)
}
