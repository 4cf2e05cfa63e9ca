//! The secret, echoed by a provider in random mixes of JSON and percent escapes inside bodies,
//! headers and error texts, followed through every pure step that turns provider text into
//! something a user or a machine reads: the parser, the report in each format, the lock, the
//! store record, an alert payload, the metrics and a log line. None may hold it in any spelling.

use chrono::Utc;
use proptest::prelude::*;

use super::Redactor;
use super::tests::{encoded, holds};
use crate::alert::state::{PinAlerts, step};
use crate::audit::judge::Case;
use crate::audit::{CallKind, CallRecord, CallResult, Observation, baseline, verdict};
use crate::config::tests_support::minimal_config;
use crate::config::{AlertChannel, AlertKind, Severity};
use crate::lock::{LOCK_VERSION, Lock};
use crate::provider::{Parsed, ProviderKind, RawResponse, parse_reply_masked};
use crate::report::{github, human, junit, to_json};
use crate::store::AuditRecord;

/// A chat completion whose string fields carry `echo` (already escaped as it goes on the wire).
fn reply_body(echo: &str) -> Vec<u8> {
    format!(
        r#"{{"id":"chatcmpl-{echo}","object":"chat.completion","model":"gpt-4o-{echo}","system_fingerprint":"fp_{echo}","choices":[{{"index":0,"message":{{"role":"assistant","content":"391 {echo}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":21,"completion_tokens":1}}}}"#
    )
    .into_bytes()
}

fn refusal_body(echo: &str) -> Vec<u8> {
    format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {echo}.","type":"invalid_request_error","code":"key_{echo}"}}}}"#
    )
    .into_bytes()
}

/// What the transport and the adapter make of one response.
fn received(redactor: &Redactor, status: u16, body: Vec<u8>, header: &str) -> CallResult {
    let raw = RawResponse {
        status,
        headers: vec![
            ("x-request-id".to_owned(), header.to_owned()),
            ("sunset".to_owned(), format!("soon {header}")),
        ],
        body,
    };
    match parse_reply_masked(
        ProviderKind::OpenAi,
        &crate::transport::scrub_response(redactor, raw),
        redactor,
    ) {
        Parsed::Reply(r) => CallResult::Reply(r),
        Parsed::Rejected(r) => CallResult::Rejected(r),
        Parsed::Unparseable { reason, .. } => CallResult::Unparseable(reason),
    }
}

fn call(probe: &str, sample: u32, result: CallResult) -> CallRecord {
    CallRecord {
        probe: probe.to_owned(),
        kind: CallKind::Probe,
        sample,
        result,
        latency: std::time::Duration::ZERO,
        attempts: 1,
        waits: Vec::new(),
        stopped: None,
    }
}

/// Every text the pure steps produce from the two responses.
fn outputs(redactor: &Redactor, in_body: &str, in_header: &str) -> Vec<(&'static str, String)> {
    let config = minimal_config();
    let pin = &config.pins[0];
    let probes = config.probes_of(pin);
    let probe = probes[0].id.clone();
    let obs = Observation::complete(
        &pin.id,
        vec![
            call(
                &probe,
                0,
                received(redactor, 200, reply_body(in_body), in_header),
            ),
            call(
                &probe,
                1,
                received(redactor, 401, refusal_body(in_body), in_header),
            ),
        ],
    );
    let locked = baseline::record(pin, pin.kind.as_str(), &probes, &obs).expect("one answer");
    let lock = Lock {
        lock_version: LOCK_VERSION,
        modelpin_version: "0".into(),
        config_digest: config.digest.clone(),
        pins: [(pin.id.clone(), locked.clone())].into(),
    };
    let pin_report = verdict::pin_report(&Case::new(pin, probes.clone(), &obs, None));
    let report = verdict::report(
        &config,
        None,
        verdict::now(),
        vec![pin_report.clone()],
        false,
    );
    let record = AuditRecord {
        audit_id: "1".into(),
        started_at: Utc::now(),
        finished_at: Utc::now(),
        config_digest: config.digest.clone(),
        lock_digest: None,
        pin: pin_report,
        source: None,
    };
    let channel = AlertChannel {
        name: "hook".into(),
        kind: AlertKind::Webhook {
            url: "https://hooks.example/in".into(),
            secret_env: None,
            signing_key: None,
        },
        send_resolved: true,
        repeat: std::time::Duration::from_secs(4 * 3600),
        min_severity: Severity::Info,
    };
    let channels = [&channel];
    let alerts = step(&PinAlerts::default(), &record, &channels, Utc::now());
    let metrics = crate::daemon::metrics::Metrics::new();
    crate::daemon::metrics::record(&metrics, &record);
    let mut out = vec![
        ("human", human::render(&report)),
        ("json", to_json(&report)),
        ("junit", junit::render(&report)),
        ("github", github::render(&report, "pins.toml", &|_| Some(1))),
        ("step summary", github::summary(&report)),
        (
            "lock",
            String::from_utf8(crate::lock::encode(&lock)).unwrap(),
        ),
        // The file holds the answers compressed, where no text search sees them: the same lock
        // with every sample inline, as the in-memory value serialises.
        ("lock samples", serde_json::to_string(&lock).unwrap()),
        ("store record", serde_json::to_string(&record).unwrap()),
        ("metrics", metrics.render()),
        (
            "log line",
            String::from_utf8_lossy(&redactor.scrub_bytes(
                format!("WARN delivery failed: {in_body:?} {in_header:?}").into_bytes(),
            ))
            .into_owned(),
        ),
    ];
    for n in &alerts.notifications {
        out.push((
            "webhook payload",
            crate::alert::deliver::webhook_payload(n).to_string(),
        ));
        out.push(("alert text", n.text()));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn an_echoed_secret_in_any_escape_mix_reaches_no_sink(
        tail in "[A-Za-z0-9]{16,24}",
        body_hows in prop::collection::vec(0u8..5, 1..8),
        header_hows in prop::collection::vec(prop::sample::select(vec![0u8, 3, 4]), 1..8),
    ) {
        let secret = format!("sk-{tail}");
        let redactor = Redactor::new([secret.as_str()]);
        let in_body = encoded(&secret, &body_hows);
        let in_header = encoded(&secret, &header_hows);
        for (sink, text) in outputs(&redactor, &in_body, &in_header) {
            prop_assert!(!holds(&text, &secret), "{sink} holds the secret:\n{text}");
        }
    }
}

#[test]
fn without_a_redactor_the_secret_does_reach_the_sinks() {
    // The property above would pass vacuously if the pipeline dropped the echoed text.
    let secret = "sk-0123456789abcdefXYZ";
    let leaked = outputs(&Redactor::default(), &encoded(secret, &[1, 0]), secret);
    for sink in [
        "json",
        "lock",
        "lock samples",
        "store record",
        "metrics",
        "webhook payload",
    ] {
        let (_, text) = leaked.iter().find(|(s, _)| *s == sink).unwrap();
        assert!(holds(text, secret), "{sink} never carried the echo");
    }
}
