//! The daemon's OTLP/HTTP traces receiver as a real process: spans posted in protobuf, JSON and
//! gzip become traffic verdicts in history and metrics; hostile bodies are refused with a
//! status, never a crash; the token and the request slots hold.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

use crate::harness::Sim;
use crate::schema::Record;
use crate::support::daemon::Daemon;
use crate::support::http::{Reply, get};
use crate::support::traffic::{ID, kv, pins, request, span, text};
use crate::support::wait::{DEADLINE, eventually, poll};
use crate::world::{model, single};

const OTHER: &str = "acme-flash-002";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn post(port: u16, path: &str, headers: &[&str], body: &[u8]) -> Option<Reply> {
    crate::support::http::post(port, path, headers, body)
}

const PROTOBUF: &str = "Content-Type: application/x-protobuf";
const JSON: &str = "Content-Type: application/json";

fn metrics(daemon: &Daemon) -> String {
    get(daemon.port(), "/metrics")
        .map(|(_, _, body)| body)
        .unwrap_or_default()
}

fn traffic_records(records: &[Record]) -> Vec<&Record> {
    records.iter().filter(|r| r.is_traffic()).collect()
}

#[test]
fn traffic_spans_posted_to_the_daemon_become_a_finding_and_a_metric() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = pins(&sim).locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();

    let mut spans: Vec<Span> = (0..3).map(|i| span(i, ID, ID)).collect();
    spans.extend((3..7).map(|i| span(i, ID, OTHER)));
    spans.push(span(7, "unrelated", "unrelated"));
    let body = gzip(&request(spans).encode_to_vec());
    let answer = post(
        port,
        "/v1/traces",
        &[PROTOBUF, "Content-Encoding: gzip"],
        &body,
    )
    .unwrap();
    assert_eq!(answer.status, 200, "{}", answer.head);
    assert_eq!(
        answer.header("content-type").as_deref(),
        Some("application/x-protobuf")
    );
    let decoded = ExportTraceServiceResponse::decode(answer.body.as_slice()).unwrap();
    assert_eq!(decoded.partial_success, None);

    daemon.wait_records("a traffic verdict with the mismatch", |records| {
        traffic_records(records)
            .iter()
            .any(|r| r.has_finding("served_model_mismatch"))
    });
    let exposition = metrics(&daemon);
    for line in [
        format!("modelpin_traffic_spans_total{{pin=\"pin\",served=\"{OTHER}\"}} 4"),
        format!("modelpin_traffic_spans_total{{pin=\"pin\",served=\"{ID}\"}} 3"),
        "modelpin_traffic_spans_received_total{result=\"unmatched\"} 1".to_owned(),
        "modelpin_traffic_served_model_mismatch{pin=\"pin\"} 1".to_owned(),
    ] {
        assert!(exposition.contains(&line), "{line} in\n{exposition}");
    }
    let human = daemon.history_run(&test, &[]);
    assert!(human.stdout.contains("pin (traffic)"), "{}", human.stdout);
    // The probe audit's own verdict stands: traffic is history beside it, not over it.
    assert!(
        daemon.history(&test).iter().any(|r| r.source.is_none()),
        "the start-up probe audit is kept"
    );
    // The status page shows the traffic verdict as one, beside the probe audit in the strip.
    let (status, _, page) = get(port, "/").expect("the status page answers");
    assert_eq!(status, 200);
    assert!(page.contains("from traffic: 7 spans"), "{page}");
    assert!(page.contains("drift (traffic)\""), "{page}");
}

#[test]
fn traffic_json_with_unreadable_spans_is_a_partial_success() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = pins(&sim).locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    let body = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "00", "spanId": "01", "attributes": 7},
        {"traceId": "00", "spanId": "02", "attributes": [
            {"key": "gen_ai.request.model", "value": {"stringValue": ID}},
            {"key": "gen_ai.response.model", "value": {"stringValue": ID}}
        ]}
    ]}]}]});
    let answer = post(port, "/v1/traces", &[JSON], body.to_string().as_bytes()).unwrap();
    assert_eq!(answer.status, 200);
    let json: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(json["partialSuccess"]["rejectedSpans"], "1", "{json}");
    let records = daemon.wait_records("a traffic verdict", |records| {
        !traffic_records(records).is_empty()
    });
    assert_eq!(traffic_records(&records)[0].pin.status, "ok");
}

#[test]
fn traffic_hostile_payloads_are_refused_with_a_status_and_the_daemon_lives() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = pins(&sim).locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    let send = |headers: &[&str], body: &[u8]| post(port, "/v1/traces", headers, body).unwrap();

    assert_eq!(send(&["Content-Type: text/plain"], b"hello").status, 415);
    assert_eq!(send(&[PROTOBUF, "Content-Encoding: br"], b"x").status, 415);
    let garbage = send(&[PROTOBUF], b"\xff\xff\xff\xff");
    assert_eq!(garbage.status, 400);
    assert_eq!(send(&[JSON], b"{\"resourceSpans\": [").status, 400);
    // Over the 4 MiB body cap: refused on the declared length, before the body is read.
    let mut big = TcpStream::connect(("127.0.0.1", port)).unwrap();
    big.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        big,
        "POST /v1/traces HTTP/1.1\r\nHost: x\r\n{PROTOBUF}\r\nContent-Length: {}\r\n\r\n",
        5 << 20
    )
    .unwrap();
    let mut answer = [0u8; 12];
    big.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 413");
    // 64 MiB of zeros in a few kilobytes of gzip.
    let bomb = gzip(&vec![0u8; 64 << 20]);
    assert_eq!(
        send(&[PROTOBUF, "Content-Encoding: gzip"], &bomb).status,
        413
    );
    // JSON nested 100,000 deep.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(send(&[JSON], deep.as_bytes()).status, 400);
    // Wrong types where strings and integers belong.
    let wrong = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
    {"traceId": 5, "spanId": [], "attributes": [
        {"key": "gen_ai.request.model", "value": {"intValue": ID}},
        {"key": "gen_ai.usage.input_tokens", "value": {"stringValue": 3}},
        {"key": 7, "value": null}
    ]}]}]}]});
    assert_eq!(send(&[JSON], wrong.to_string().as_bytes()).status, 200);
    // One span with 150,000 attributes (about 3.5 MB).
    let mut many = span(1, ID, ID);
    many.attributes
        .extend((0..150_000).map(|i| text(&format!("k{i}"), "v")));
    let many = request(vec![many]).encode_to_vec();
    assert!(many.len() < 4 << 20);
    assert_eq!(send(&[PROTOBUF], &many).status, 200);

    let (status, _, _) = get(port, "/healthz").expect("still answering");
    assert_eq!(status, 200, "{}", daemon.log());
    let exposition = metrics(&daemon);
    assert!(
        exposition.contains("modelpin_traffic_requests_total{status=\"413\"} 2"),
        "{exposition}"
    );
}

#[test]
fn traffic_receiver_requires_the_token_when_one_is_set() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = pins(&sim)
        .traffic("token_env", "OTLP_TOKEN")
        .locked()
        .env("OTLP_TOKEN", "s3cret-token");
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    let body = request(vec![span(1, ID, ID)]).encode_to_vec();
    let none = post(port, "/v1/traces", &[PROTOBUF], &body).unwrap();
    assert_eq!(none.status, 401);
    let wrong = post(
        port,
        "/v1/traces",
        &[PROTOBUF, "Authorization: Bearer s3cret-tokeX"],
        &body,
    )
    .unwrap();
    assert_eq!(wrong.status, 401);
    let right = post(
        port,
        "/v1/traces",
        &[PROTOBUF, "Authorization: Bearer s3cret-token"],
        &body,
    )
    .unwrap();
    assert_eq!(right.status, 200, "{}", daemon.log());
}

#[test]
fn traffic_receiver_answers_429_with_retry_after_when_the_body_budget_is_spent() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = pins(&sim).traffic("max_requests", 1).locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();
    // One request body of nearly 4 MiB that has not quite arrived holds the whole budget
    // (`max_requests` × 4 MiB) until its deadline.
    let hold = || {
        let mut slow = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            slow,
            "POST /v1/traces HTTP/1.1\r\nHost: localhost\r\n{PROTOBUF}\r\nContent-Length: {}\r\n\r\n",
            4 << 20
        )
        .unwrap();
        slow.write_all(&vec![0u8; (4 << 20) - 1]).unwrap();
        slow.set_nonblocking(true).unwrap();
        slow
    };
    let mut slow = hold();
    let body = request(vec![span(1, ID, ID)]).encode_to_vec();
    let mut busy = None;
    eventually(DEADLINE, || {
        busy = post(port, "/v1/traces", &[PROTOBUF], &body).filter(|a| a.status == 429);
        // The holder was the one refused, or ran out of time (it has an answer): start it again.
        let mut byte = [0u8; 1];
        if busy.is_none() && slow.peek(&mut byte).is_ok_and(|n| n > 0) {
            slow = hold();
        }
        busy.is_some()
    });
    let busy = busy.unwrap_or_else(|| panic!("a 429 while the budget is held: {}", daemon.log()));
    assert_eq!(
        busy.header("retry-after").as_deref(),
        Some("1"),
        "{}",
        busy.head
    );
    drop(slow);
    let freed = eventually(DEADLINE, || {
        post(port, "/v1/traces", &[PROTOBUF], &body).is_some_and(|a| a.status == 200)
    });
    assert!(freed, "the budget is free again once that request ends");
}

#[test]
fn traffic_fingerprinted_spans_posted_to_the_daemon_are_held_against_the_locked_token_count() {
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let test = pins(&sim).locked();
    let lock: serde_json::Value = serde_json::from_str(&test.read("modelpin.lock")).unwrap();
    let probe = &lock["pins"]["pin"]["probes"]["arith"];
    let digest = probe["digest"].as_str().unwrap();
    let tokens = probe["prompt_tokens"][0].as_i64().unwrap();
    let daemon = Daemon::start(&test);
    let port = daemon.port();

    let fingerprinted = |i: u64, input: i64| {
        let mut s = span(i, ID, ID);
        s.attributes
            .retain(|kv| kv.key != "gen_ai.usage.input_tokens");
        s.attributes.push(kv(
            "gen_ai.usage.input_tokens",
            any_value::Value::IntValue(input),
        ));
        s.attributes.push(text("modelpin.probe.digest", digest));
        s
    };
    let spans = vec![
        span(0, ID, ID),
        fingerprinted(1, tokens),
        fingerprinted(2, tokens + 7),
    ];
    let answer = post(
        port,
        "/v1/traces",
        &[PROTOBUF],
        &request(spans).encode_to_vec(),
    )
    .unwrap();
    assert_eq!(answer.status, 200, "{}", answer.head);

    let finding = poll(DEADLINE, || {
        traffic_records(&daemon.records()).iter().find_map(|r| {
            r.pin
                .findings
                .iter()
                .find(|f| f.code == "tokenizer_changed")
                .map(|f| f.evidence.clone())
        })
    });
    let evidence =
        finding.unwrap_or_else(|| panic!("a traffic tokenizer_changed: {}", daemon.log()));
    let counts = &evidence["probes"][0];
    assert_eq!(counts["locked"], serde_json::json!([tokens]));
    assert_eq!(counts["now"], serde_json::json!([tokens, tokens + 7]));
    let example = format!("trace {} span {:016x}", format!("{:016x}", 2).repeat(2), 2);
    assert_eq!(counts["examples"], serde_json::json!([example]));
}
