//! Secrets that come back encoded: a provider echoing the key JSON-escaped or percent-encoded, a
//! Slack receiver quoting the secret path of its URL. None of it may reach an output, a file, the
//! store, a log, a metric or an alert, in any spelling.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::{FaultKind, Scenario};

use crate::harness::{ARITH, KEY_VAR, SETTINGS, Sim, Test, one_pin_with};
use crate::support::daemon::Daemon;
use crate::support::receivers::Webhook;
use crate::support::wait::eventually;
use crate::world::{fault, model, single};

const KEY: &str = "sk-escaped-Mk3y-0123456789";
const SLACK_TOKEN: &str = "slackTOKENabcdefghijklmnop";
const ID: &str = "acme-pro-001";

/// `KEY` with some characters as JSON `\uXXXX` escapes, in both hex cases.
fn json_escaped() -> String {
    r"\u0073k-escaped\u002DMk3y-\u00301234567\u0038\u0039".to_owned()
}

/// `KEY` percent-encoded in part, lower-case hex.
fn percent_encoded() -> String {
    "%73k-escaped%2dMk3y-0123456789".to_owned()
}

/// A chat completion whose `model` is the key, JSON-escaped.
fn echoing_body() -> String {
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion","model":"{}","choices":[{{"index":0,"message":{{"role":"assistant","content":"391"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":21,"completion_tokens":1,"total_tokens":22}}}}"#,
        json_escaped()
    )
}

fn echoing(status: u16, body: String) -> Scenario {
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.api_key = Some(KEY.to_owned());
    fault(
        scenario,
        ID,
        None,
        FaultKind::Raw {
            status,
            body,
            headers: vec![
                ("x-request-id".into(), percent_encoded()),
                ("x-echo".into(), format!("Bearer {}", json_escaped())),
            ],
        },
    )
}

fn honest() -> Scenario {
    let mut scenario = single(ID, model(ID, 4.0, (1.0, 2.0)));
    scenario.api_key = Some(KEY.to_owned());
    scenario
}

fn project(sim: &Sim, settings: &str, extra: &str) -> Test {
    Test::new()
        .pins(&format!(
            "{}{extra}",
            one_pin_with(
                settings,
                ProviderKind::OpenAi,
                &sim.url(ProviderKind::OpenAi),
                ID,
                "samples = 2"
            )
        ))
        .file("probes/arith.toml", ARITH)
        .env(KEY_VAR, KEY)
}

/// Whether `text` holds `secret` as written, or once JSON escapes and percent-encoding are
/// undone the way a reader (or a JSON parser) would.
fn holds(text: &str, secret: &str) -> bool {
    if text.contains(secret) {
        return true;
    }
    let strings = serde_json::from_str::<serde_json::Value>(text)
        .map(|v| strings_of(&v))
        .unwrap_or_default();
    strings.iter().any(|s| s.contains(secret)) || percent_decoded(text).contains(secret)
}

fn strings_of(value: &serde_json::Value) -> Vec<String> {
    match value {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Array(items) => items.iter().flat_map(strings_of).collect(),
        serde_json::Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| std::iter::once(k.clone()).chain(strings_of(v)))
            .collect(),
        _ => Vec::new(),
    }
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[track_caller]
fn assert_clean(what: &str, text: &str) {
    for secret in [KEY, SLACK_TOKEN] {
        assert!(
            !holds(text, secret),
            "{what} holds a secret:\n{}",
            &text[..text.len().min(3000)]
        );
    }
}

/// Every file under `dir` but pins.toml, as text.
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else if !path.ends_with("pins.toml")
            && let Ok(bytes) = std::fs::read(&path)
        {
            out.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    out
}

#[test]
fn a_key_echoed_json_escaped_reaches_no_report_format_lock_or_progress() {
    let sim = Sim::start(echoing(200, echoing_body()));
    let summary = tempfile::NamedTempFile::new().unwrap();
    let test =
        project(&sim, SETTINGS, "").env("GITHUB_STEP_SUMMARY", summary.path().to_str().unwrap());
    let lock = test.run(&["lock"]);
    lock.code(0);
    assert_clean("lock progress", &lock.stderr);
    assert!(
        lock.stderr.contains("[redacted]"),
        "the echoed model is kept, masked: {}",
        lock.stderr
    );
    for format in ["human", "json", "junit", "github"] {
        let run = test.run(&["check", "--format", format]);
        assert!(run.code == 0 || run.code == 1, "{format}: {}", run.stderr);
        assert_clean(&format!("check --format {format}"), &run.stdout);
        assert_clean(&format!("check --format {format} (stderr)"), &run.stderr);
    }
    assert_clean(
        "step summary",
        &std::fs::read_to_string(summary.path()).unwrap(),
    );
    for (path, text) in files(test.dir.path()) {
        assert_clean(&path, &text);
    }
}

#[test]
fn a_refusal_quoting_the_key_json_escaped_keeps_its_message_masked() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#,
        json_escaped()
    );
    let sim = Sim::start(echoing(401, body));
    let test = project(&sim, SETTINGS, "");
    test.run(&["lock"]);
    let run = test.run(&["check", "--format", "json"]);
    assert_clean("check --format json", &run.stdout);
    let lock = test.run(&["lock"]);
    lock.code(3);
    assert_clean("lock progress", &lock.stderr);
    assert!(
        lock.stderr
            .contains("Incorrect API key provided: [redacted]."),
        "the provider's words are kept, masked: {}",
        lock.stderr
    );
}

/// A Slack stand-in that answers every request 500, quoting the path it was sent to.
fn echoing_slack() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 8192];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let token = path.rsplit('/').next().unwrap_or_default();
            let body = format!("no_service: nothing at {path} (token {token})");
            let reply = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    port
}

#[test]
fn a_slack_receiver_echoing_its_secret_path_leaves_no_trace_in_alerts_test() {
    let slack = format!(
        "http://127.0.0.1:{}/services/T0ABCDEF/B0ABCDEF/{SLACK_TOKEN}",
        echoing_slack()
    );
    let test = Test::new()
        .pins("version = 1\n[alerts.team]\nkind = \"slack\"\nurl_env = \"SLACK_URL\"\n")
        .env("SLACK_URL", &slack);
    let run = test.run(&["alerts", "test"]);
    run.code(1);
    assert!(run.stdout.contains("team: FAILED"), "{}", run.stdout);
    assert!(
        run.stdout.contains("500"),
        "the failure is shown: {}",
        run.stdout
    );
    assert_clean("alerts test stdout", &run.stdout);
    assert_clean("alerts test stderr", &run.stderr);
}

#[test]
fn a_key_echoed_json_escaped_reaches_no_daemon_page_metric_history_store_log_or_alert() {
    let sim = Sim::start(honest());
    let hook = Webhook::start();
    let settings = "timeout = \"3s\"\nbudget = \"10s\"\nschedule = \"* * * * * *\"\nmetrics = \"127.0.0.1:0\"\nstore = \"store\"";
    let slack = format!(
        "http://127.0.0.1:{}/services/T0ABCDEF/B0ABCDEF/{SLACK_TOKEN}",
        echoing_slack()
    );
    let channels = format!(
        "alerts = [\"hook\", \"team\"]\n\n[alerts.hook]\nkind = \"webhook\"\nurl = \"{}\"\n\n[alerts.team]\nkind = \"slack\"\nurl_env = \"SLACK_URL\"\n",
        hook.url()
    );
    let test = project(&sim, settings, &channels)
        .env("SLACK_URL", &slack)
        .env("RUST_LOG", "trace");
    test.run(&["lock"]).code(0);
    // From now on the provider reports the key, escaped, as the served model.
    sim.set(echoing(200, echoing_body()));
    let daemon = Daemon::start(&test);
    assert!(
        eventually(Duration::from_secs(40), || !hook.hits().is_empty()
            && daemon.log().contains("500")),
        "the mismatch was sent to the webhook and Slack's delivery failed: {}",
        daemon.log()
    );
    let hits = hook.hits();
    assert!(
        String::from_utf8_lossy(&hits[0].body).contains("[redacted]"),
        "the alert names the served model, masked: {}",
        String::from_utf8_lossy(&hits[0].body)
    );
    for hit in &hits {
        assert_clean("webhook payload", &String::from_utf8_lossy(&hit.body));
        assert_clean("webhook headers", &format!("{:?}", hit.headers));
    }
    let metrics = daemon.get("/metrics").expect("metrics").text();
    assert!(
        metrics.contains("served=\"[redacted]\""),
        "the served label is masked: {metrics}"
    );
    for path in ["/api/history", "/metrics", "/", "/healthz"] {
        let reply = daemon.get(path).expect("daemon answers");
        let (head, body) = (reply.head.clone(), reply.text());
        assert_clean(path, &head);
        assert_clean(path, &body);
    }
    assert_clean(
        "history",
        &test.run(&["history", "--format", "json"]).stdout,
    );
    assert_clean("daemon log", &daemon.log());
    drop(daemon);
    for (path, text) in files(test.dir.path()) {
        assert_clean(&path, &text);
    }
}

#[test]
fn a_key_in_exported_spans_reaches_no_traffic_report() {
    // The instrumented client recorded the model field the provider answered with: the key,
    // escaped in the JSON export.
    let served = format!("gpt-4o-{}", json_escaped());
    let span = format!(
        r#"{{"traceId":"{t:032x}","spanId":"{t:016x}","name":"chat","attributes":[{{"key":"gen_ai.provider.name","value":{{"stringValue":"openai"}}}},{{"key":"gen_ai.request.model","value":{{"stringValue":"{ID}"}}}},{{"key":"gen_ai.response.model","value":{{"stringValue":"{served}"}}}}]}}"#,
        t = 7
    );
    let export = format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[]}},"scopeSpans":[{{"spans":[{span}]}}]}}]}}"#
    );
    let test = Test::new()
        .pins(&one_pin_with(
            "",
            ProviderKind::OpenAi,
            "https://api.example.com/v1",
            ID,
            "",
        ))
        .file("probes/arith.toml", ARITH)
        .env(KEY_VAR, KEY)
        .file("spans.json", &export);
    for format in ["human", "json", "junit", "github"] {
        let run = test.run(&["traffic", "spans.json", "--format", format]);
        run.code(1);
        assert_clean(&format!("traffic --format {format}"), &run.stdout);
        assert_clean(&format!("traffic --format {format} (stderr)"), &run.stderr);
    }
    let json = test.run(&["traffic", "spans.json", "--format", "json"]);
    assert!(json.stdout.contains("gpt-4o-[redacted]"), "{}", json.stdout);
}
