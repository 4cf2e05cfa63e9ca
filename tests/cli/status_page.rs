//! The status page served by a real daemon: pins worst first with what they serve and what to
//! do, hostile model IDs shown as text, conditional requests, gzip and the bearer token.

use std::io::Read as _;

use crate::support::daemon::Daemon;
use crate::support::http::fetch;
use crate::support::pins::{EVERY_SECOND, HOURLY};
use crate::support::status::{STEADY, SWAPPED, fleet, wait_for};

const HOSTILE: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>";

const WORST_FIRST: [(&str, &str); 3] = [
    ("swapped", "drift"),
    ("unlocked", "inconclusive"),
    ("steady", "ok"),
];

#[test]
fn status_page_lists_pins_worst_first_with_what_they_serve_and_what_to_do() {
    let (_sim, test) = fleet(HOSTILE, EVERY_SECOND, None);
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    let html = wait_for(&daemon, &WORST_FIRST);
    assert!(
        html.contains("Needs attention: 1 drift, 1 inconclusive"),
        "{html}"
    );
    assert!(html.contains(&format!("<code>{STEADY}</code>")), "{html}");
    assert!(html.contains("What to do:"), "{html}");
    assert!(html.contains("not at lock"), "{html}");
    assert!(
        html.contains("<div class=\"strip\" role=\"group\""),
        "{html}"
    );
    assert!(html.contains("href=\"pins/swapped#a-"), "{html}");
    // The served model `<script>…<img …>` is text: escaped, and no element of its own.
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"),
        "{html}"
    );
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(!html.contains("<img"), "{html}");

    let reply = fetch(port, "/", "").unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    let csp = reply.header("content-security-policy").unwrap();
    assert!(
        csp.starts_with("default-src 'none'; style-src 'sha256-"),
        "{csp}"
    );
    assert!(
        csp.contains("script-src 'sha256-") && csp.contains("img-src data:"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe"), "{csp}");

    let pin = fetch(port, "/pins/swapped", "").unwrap();
    assert_eq!(pin.status, 200, "{}", pin.head);
    let page = pin.text();
    for part in [
        "<h1>swapped</h1>",
        "Input tokens per call",
        "Cost per call (USD)",
        "Smallest adjusted p-value",
        "<caption>Served models</caption>",
        "<tr id=\"a-",
        &format!("<code>{SWAPPED}</code>"),
        "&lt;script&gt;alert(1)",
    ] {
        assert!(page.contains(part), "{part}\n{page}");
    }
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    let missing = fetch(port, "/pins/%3Cb%3Enope", "").unwrap();
    assert_eq!(missing.status, 404);
    assert!(
        missing.text().contains("&lt;b&gt;nope"),
        "{}",
        missing.text()
    );
}

#[test]
fn status_page_revalidates_with_304_gzips_and_needs_the_token_like_the_api() {
    let token = "tok-status-0123456789";
    let (_sim, test) = fleet("acme-flash-009", HOURLY, Some("MODELPIN_API_TOKEN"));
    let test = test.env("MODELPIN_API_TOKEN", token);
    let daemon = Daemon::start(&test).token(token);
    let port = daemon.port();
    let auth = format!("Authorization: Bearer {token}\r\n");
    wait_for(&daemon, &WORST_FIRST);

    for path in ["/", "/pins/steady"] {
        assert_eq!(fetch(port, path, "").unwrap().status, 401, "{path}");
        let wrong = fetch(port, path, "Authorization: Bearer nope\r\n").unwrap();
        assert_eq!(wrong.status, 401, "{path}");
    }
    assert_eq!(
        fetch(port, "/metrics", "").unwrap().status,
        200,
        "metrics stay open"
    );

    // Each pin was audited once at start; the hourly schedule keeps the pages unchanged.
    let first = fetch(port, "/pins/steady", &auth).unwrap();
    assert_eq!(first.status, 200);
    let etag = first.header("etag").unwrap();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert!(first.header("cache-control").unwrap().contains("no-cache"));
    let modified = first.header("last-modified").unwrap();
    let again = fetch(
        port,
        "/pins/steady",
        &format!("{auth}If-None-Match: \"x\", {etag}\r\n"),
    )
    .unwrap();
    assert_eq!(again.status, 304, "{}", again.head);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag").as_deref(), Some(etag.as_str()));
    let since = fetch(
        port,
        "/pins/steady",
        &format!("{auth}If-Modified-Since: {modified}\r\n"),
    )
    .unwrap();
    assert_eq!(since.status, 304, "{}", since.head);
    let unauthorized = fetch(port, "/", &format!("If-None-Match: {etag}\r\n")).unwrap();
    assert_eq!(unauthorized.status, 401, "no 304 without the token either");
    let stale = fetch(
        port,
        "/pins/steady",
        &format!("{auth}If-None-Match: W/\"0000\"\r\n"),
    )
    .unwrap();
    assert_eq!(stale.status, 200, "a different ETag gets the page");

    let zipped = fetch(
        port,
        "/",
        &format!("{auth}Accept-Encoding: br;q=1, gzip;q=0.8\r\n"),
    )
    .unwrap();
    assert_eq!(zipped.status, 200);
    assert_eq!(zipped.header("content-encoding").as_deref(), Some("gzip"));
    assert_eq!(zipped.header("vary").as_deref(), Some("Accept-Encoding"));
    let mut html = String::new();
    flate2::read::GzDecoder::new(zipped.body.as_slice())
        .read_to_string(&mut html)
        .unwrap();
    assert!(html.contains("<h1>modelpin status</h1>"), "{html}");
    let refused = fetch(port, "/", &format!("{auth}Accept-Encoding: gzip;q=0\r\n")).unwrap();
    assert_eq!(refused.header("content-encoding"), None);
}
