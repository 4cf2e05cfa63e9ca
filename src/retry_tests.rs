//! The classifier as a table, including every error response recorded under
//! `tests/fixtures/real/` (parsed by the real adapters), and the retry loop under tokio's paused clock.

use std::time::{Duration, SystemTime};

use super::*;
use crate::provider::{Parsed, ProviderKind, RawResponse, parse_reply};

use crate::fixtures::ROOT as FIXTURES;
use crate::provider::fixture_table::COVERED;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Done,
    Retry,
    Stop,
}

fn kind_of(decision: &Decision) -> Want {
    match decision {
        Decision::Done => Want::Done,
        Decision::Retry { .. } => Want::Retry,
        Decision::Stop { .. } => Want::Stop,
    }
}

/// A recorded response, loaded as the adapters' fixture table loads it.
fn recorded(file: &str, status: u16) -> RawResponse {
    crate::provider::fixture_table::load(file, Some(status))
}

fn decide_recorded(file: &str, kind: ProviderKind, status: u16) -> Decision {
    let response = recorded(file, status);
    let parsed = parse_reply(kind, &response);
    let (class, message) = match &parsed {
        Parsed::Rejected(r) => (Some(r.class), Some(r.message.as_str())),
        _ => (None, None),
    };
    let signal = Signal {
        status: Some(response.status),
        headers: &response.headers,
        class,
        message,
        transport: None,
        unparseable: matches!(parsed, Parsed::Unparseable { .. }),
    };
    classify(&signal, &Operation::Read, SystemTime::UNIX_EPOCH)
}

#[test]
#[allow(clippy::too_many_lines)] // one row per recorded file reads best as one list
fn every_recorded_error_is_classified() {
    use ProviderKind::{Anthropic, Azure, Gemini, OpenAi, OpenRouter};
    use Want::{Retry, Stop};
    let rows: &[(&str, ProviderKind, u16, Want)] = &[
        ("openai-chat/error-400-code-null.json", OpenAi, 400, Stop),
        (
            "openai-chat/error-400-unsupported-value.json",
            OpenAi,
            400,
            Stop,
        ),
        (
            "openai-chat/error-401-invalid-api-key.inner.json",
            OpenAi,
            401,
            Stop,
        ),
        (
            "openai-chat/error-404-embeddings-model-not-found.json",
            OpenAi,
            404,
            Stop,
        ),
        (
            "openai-chat/error-404-model-not-found.json",
            OpenAi,
            404,
            Stop,
        ),
        (
            "openai-chat/error-429-rate-limit-exceeded.json",
            OpenAi,
            429,
            Retry,
        ),
        (
            "openai-chat/error-retired-model-text-davinci-003.json",
            OpenAi,
            404,
            Stop,
        ),
        (
            "openai-responses/error-400-invalid-param.json",
            OpenAi,
            400,
            Stop,
        ),
        (
            "openai-responses/error-400-model-not-found.json",
            OpenAi,
            400,
            Stop,
        ),
        (
            "anthropic/error-400-invalid-request.json",
            Anthropic,
            400,
            Stop,
        ),
        (
            "anthropic/error-401-authentication.json",
            Anthropic,
            401,
            Stop,
        ),
        (
            "anthropic/error-404-count-tokens-model-not-found.json",
            Anthropic,
            404,
            Stop,
        ),
        (
            "anthropic/error-404-model-not-found.json",
            Anthropic,
            404,
            Stop,
        ),
        ("anthropic/error-429-rate-limit.json", Anthropic, 429, Retry),
        (
            "anthropic/error-529-overloaded-with-request-id.json",
            Anthropic,
            529,
            Retry,
        ),
        ("anthropic/error-529-overloaded.json", Anthropic, 529, Retry),
        ("gemini/error-404-count-tokens.json", Gemini, 404, Stop),
        ("gemini/error-404-model-not-found.json", Gemini, 404, Stop),
        (
            "gemini/error-404-retired-model-message.txt",
            Gemini,
            404,
            Stop,
        ),
        (
            "gemini/error-429-resource-exhausted.json",
            Gemini,
            429,
            Stop,
        ),
        ("gemini/error-503-high-demand.json", Gemini, 503, Retry),
        ("gemini/error-503-overloaded.json", Gemini, 503, Retry),
        ("vertex/error-400-invalid-argument.json", Gemini, 400, Stop),
        (
            "vertex/error-404-publisher-model-not-found.txt",
            Gemini,
            404,
            Stop,
        ),
        (
            "azure-openai/error-404-deployment-not-found.json",
            Azure,
            404,
            Stop,
        ),
        ("azure-openai/error-429-rate-limit.json", Azure, 429, Retry),
        (
            "azure-openai/error-429-token-rate-limit-retry-after-text.json",
            Azure,
            429,
            Retry,
        ),
        (
            "openrouter/error-400-not-a-valid-model-id.json",
            OpenRouter,
            400,
            Stop,
        ),
        (
            "openrouter/error-429-upstream-rate-limited.json",
            OpenRouter,
            429,
            Retry,
        ),
        ("mistral/error-400-invalid-model.json", OpenAi, 400, Stop),
        ("groq/error-400-tool-use-failed.json", OpenAi, 400, Stop),
        ("groq/error-404-model-not-found.json", OpenAi, 404, Stop),
        (
            "groq/error-429-rate-limit-exceeded.json",
            OpenAi,
            429,
            Retry,
        ),
        ("deepseek/error-400-invalid-request.json", OpenAi, 400, Stop),
        (
            "deepseek/error-402-insufficient-balance.json",
            OpenAi,
            402,
            Stop,
        ),
        (
            "ollama/error-404-model-not-found-native-api.json",
            OpenAi,
            404,
            Stop,
        ),
        (
            "ollama/error-404-model-not-found-openai-compat.json",
            OpenAi,
            404,
            Stop,
        ),
    ];
    for (file, kind, status, want) in rows {
        let decision = decide_recorded(file, *kind, *status);
        assert_eq!(kind_of(&decision), *want, "{file}: {decision:?}");
    }
    // Every error file of the covered providers is in the table.
    for dir in COVERED {
        for entry in std::fs::read_dir(format!("{FIXTURES}/{dir}")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.starts_with("error-") && !name.ends_with(".headers.txt") {
                let file = format!("{dir}/{name}");
                assert!(
                    rows.iter().any(|r| r.0 == file),
                    "{file} has no classification row"
                );
            }
        }
    }
}

#[test]
fn recorded_waits_are_read() {
    let azure = recorded(
        "azure-openai/error-429-token-rate-limit-retry-after-text.json",
        429,
    );
    let Parsed::Rejected(r) = parse_reply(ProviderKind::Azure, &azure) else {
        panic!("rejected")
    };
    let signal = Signal {
        status: Some(429),
        headers: &azure.headers,
        class: Some(r.class),
        message: Some(&r.message),
        ..Signal::default()
    };
    assert_eq!(
        server_wait(&signal, SystemTime::UNIX_EPOCH),
        Some(Duration::from_secs(86_400))
    );
    let openai = recorded("openai-chat/error-429-rate-limit-exceeded.json", 429);
    let Parsed::Rejected(r) = parse_reply(ProviderKind::OpenAi, &openai) else {
        panic!("rejected")
    };
    let signal = Signal {
        status: Some(429),
        message: Some(&r.message),
        ..Signal::default()
    };
    assert_eq!(
        server_wait(&signal, SystemTime::UNIX_EPOCH),
        Some(Duration::from_millis(6))
    );
}

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
#[allow(clippy::too_many_lines)] // one row per case reads best as one list
fn status_header_and_transport_table() {
    use FailureKind::{BodyTooLarge, Connect, Io, Refused, Request, Timeout};
    use Want::{Done, Retry, Stop};
    let read = Operation::Read;
    let keyed = Operation::Write {
        idempotency_key: Some("n-1".into()),
    };
    let unkeyed = Operation::Write {
        idempotency_key: None,
    };
    let no = h(&[("x-should-retry", "false")]);
    let yes = h(&[("x-should-retry", "true")]);
    let none: Vec<(String, String)> = Vec::new();
    #[allow(clippy::type_complexity)]
    let rows: Vec<(
        Option<u16>,
        &Vec<(String, String)>,
        Option<ErrorClass>,
        Option<FailureKind>,
        bool,
        &Operation,
        Want,
    )> = vec![
        (Some(200), &none, None, None, false, &read, Done),
        (Some(204), &none, None, None, false, &read, Done),
        (Some(200), &none, None, None, true, &read, Stop),
        (
            Some(200),
            &none,
            Some(ErrorClass::RateLimited),
            None,
            false,
            &read,
            Retry,
        ),
        (
            Some(200),
            &none,
            Some(ErrorClass::NotFound),
            None,
            false,
            &read,
            Stop,
        ),
        (
            Some(400),
            &none,
            Some(ErrorClass::InvalidRequest),
            None,
            false,
            &read,
            Stop,
        ),
        (
            Some(401),
            &none,
            Some(ErrorClass::Auth),
            None,
            false,
            &read,
            Stop,
        ),
        (Some(403), &none, None, None, false, &read, Stop),
        (Some(404), &none, None, None, false, &read, Stop),
        (Some(410), &none, None, None, false, &read, Stop),
        (Some(422), &none, None, None, false, &read, Stop),
        (Some(501), &none, None, None, false, &read, Stop),
        (Some(408), &none, None, None, false, &read, Retry),
        (Some(409), &none, None, None, false, &read, Retry),
        (Some(409), &none, None, None, false, &unkeyed, Stop),
        (
            Some(429),
            &none,
            Some(ErrorClass::RateLimited),
            None,
            false,
            &read,
            Retry,
        ),
        (
            Some(429),
            &none,
            Some(ErrorClass::Quota),
            None,
            false,
            &read,
            Stop,
        ),
        (Some(500), &none, None, None, false, &read, Retry),
        (Some(502), &none, None, None, false, &read, Retry),
        (Some(503), &none, None, None, false, &read, Retry),
        (Some(504), &none, None, None, false, &read, Retry),
        (Some(529), &none, None, None, false, &read, Retry),
        (Some(599), &none, None, None, false, &read, Retry),
        (Some(500), &no, None, None, false, &read, Stop),
        (
            Some(503),
            &no,
            Some(ErrorClass::Overloaded),
            None,
            false,
            &read,
            Stop,
        ),
        (Some(400), &yes, None, None, false, &read, Retry),
        (Some(529), &yes, None, None, false, &read, Retry),
        (Some(302), &none, None, None, false, &read, Stop),
        (None, &none, None, Some(Connect), false, &read, Retry),
        (None, &none, None, Some(Connect), false, &unkeyed, Retry),
        // A refusal comes back at once and would again: a probe call stops; a delivery, which
        // its outbox holds, is retried (nothing reached the receiver).
        (None, &none, None, Some(Refused), false, &read, Stop),
        (None, &none, None, Some(Refused), false, &keyed, Retry),
        (None, &none, None, Some(Refused), false, &unkeyed, Retry),
        (None, &none, None, Some(Timeout), false, &read, Retry),
        (None, &none, None, Some(Timeout), false, &keyed, Retry),
        (None, &none, None, Some(Timeout), false, &unkeyed, Stop),
        (None, &none, None, Some(Io), false, &read, Retry),
        (None, &none, None, Some(Io), false, &unkeyed, Stop),
        (None, &none, None, Some(BodyTooLarge), false, &read, Stop),
        (None, &none, None, Some(Request), false, &read, Stop),
    ];
    for (i, (status, headers, class, transport, unparseable, op, want)) in rows.iter().enumerate() {
        let signal = Signal {
            status: *status,
            headers,
            class: *class,
            message: None,
            transport: *transport,
            unparseable: *unparseable,
        };
        let decision = classify(&signal, op, SystemTime::UNIX_EPOCH);
        assert_eq!(
            kind_of(&decision),
            *want,
            "row {i}: {status:?} {class:?} {transport:?} {op:?}: {decision:?}"
        );
    }
}

#[test]
fn an_unknown_write_outcome_is_named_as_such() {
    let signal = Signal {
        transport: Some(FailureKind::Timeout),
        ..Signal::default()
    };
    let decision = classify(
        &signal,
        &Operation::Write {
            idempotency_key: None,
        },
        SystemTime::UNIX_EPOCH,
    );
    assert!(
        matches!(
            decision,
            Decision::Stop {
                class: StopClass::UnknownOutcome,
                ..
            }
        ),
        "{decision:?}"
    );
}

#[test]
fn retry_after_forms() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let date = httpdate::fmt_http_date(now + Duration::from_secs(90));
    let past = httpdate::fmt_http_date(now - Duration::from_secs(90));
    let cases: Vec<(&str, Option<Duration>)> = vec![
        ("1", Some(Duration::from_secs(1))),
        ("0", Some(Duration::ZERO)),
        (" 120 ", Some(Duration::from_secs(120))),
        ("1.5", Some(Duration::from_millis(1500))),
        (&date, Some(Duration::from_secs(90))),
        (&past, Some(Duration::ZERO)),
        ("-3", None),
        ("soon", None),
        ("", None),
        ("NaN", None),
        ("Wed, 99 Foo 2024 25:61:61 GMT", None),
    ];
    for (value, want) in cases {
        assert_eq!(parse_retry_after(value, now), want, "{value:?}");
    }
    let ms = h(&[("retry-after-ms", "250"), ("retry-after", "9")]);
    let signal = Signal {
        headers: &ms,
        ..Signal::default()
    };
    assert_eq!(
        server_wait(&signal, now),
        Some(Duration::from_millis(250)),
        "retry-after-ms wins"
    );
    let garbage = h(&[("retry-after", "later")]);
    let signal = Signal {
        headers: &garbage,
        message: Some("Please retry after 5 seconds"),
        ..Signal::default()
    };
    assert_eq!(
        server_wait(&signal, now),
        None,
        "a garbage header is no ask, whatever the prose says"
    );
}

#[test]
fn backoff_is_capped_exponential_with_full_jitter() {
    let policy = RetryPolicy::default();
    for failures in 1..=12 {
        let ceiling = f64::from(2u32.pow(failures - 1)).min(30.0);
        assert_eq!(policy.backoff(failures, 0.0), Duration::ZERO);
        let top = policy.backoff(failures, 0.999_999).as_secs_f64();
        assert!(
            top <= ceiling && top > ceiling * 0.999,
            "failures {failures}: {top} vs {ceiling}"
        );
        let mid = policy.backoff(failures, 0.5).as_secs_f64();
        assert!((mid - ceiling / 2.0).abs() < 1e-9);
    }
    assert_eq!(
        policy.backoff(1000, 1.0),
        Duration::from_secs(30),
        "no overflow, still capped"
    );
}

fn always(decision: Decision) -> impl Fn(&u32) -> Decision {
    move |_| decision.clone()
}

#[tokio::test(start_paused = true)]
async fn retries_until_the_attempt_limit_and_sleeps_between() {
    let started = Instant::now();
    let out = run(
        RetryPolicy::default(),
        started + Duration::from_secs(600),
        |n| async move { n },
        always(Decision::Retry {
            min_wait: None,
            reason: "503".into(),
        }),
        || 1.0,
    )
    .await;
    assert_eq!(out.count, 4);
    assert_eq!(out.last, 4);
    assert_eq!(
        out.waits,
        vec![
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_secs(4)
        ]
    );
    assert_eq!(
        out.stopped.as_ref().map(|s| s.class),
        Some(StopClass::Exhausted)
    );
    assert_eq!(started.elapsed(), Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_a_minimum_wait() {
    let started = Instant::now();
    let out = run(
        RetryPolicy::default(),
        started + Duration::from_secs(600),
        |n| async move { n },
        |n: &u32| {
            if *n < 2 {
                Decision::Retry {
                    min_wait: Some(Duration::from_secs(3)),
                    reason: "429".into(),
                }
            } else {
                Decision::Done
            }
        },
        || 0.0,
    )
    .await;
    assert_eq!((out.count, out.stopped), (2, None));
    assert_eq!(out.waits, vec![Duration::from_secs(3)]);
}

#[tokio::test(start_paused = true)]
async fn a_wait_past_the_budget_stops_at_once() {
    let started = Instant::now();
    let out = run(
        RetryPolicy::default(),
        started + Duration::from_secs(60),
        |n| async move { n },
        always(Decision::Retry {
            min_wait: Some(Duration::from_secs(3600)),
            reason: "429".into(),
        }),
        || 0.5,
    )
    .await;
    assert_eq!(out.count, 1);
    assert!(out.waits.is_empty());
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "never sleeps past the budget"
    );
    let stopped = out.stopped.unwrap();
    assert_eq!(stopped.class, StopClass::Budget);
    assert!(
        stopped.reason.contains("asked to wait 60m"),
        "{}",
        stopped.reason
    );
}

#[tokio::test(start_paused = true)]
async fn stop_and_done_end_the_sequence_at_once() {
    let out = run(
        RetryPolicy::default(),
        Instant::now() + Duration::from_secs(60),
        |n| async move { n },
        always(Decision::Stop {
            class: StopClass::Terminal,
            reason: "404".into(),
        }),
        || 0.5,
    )
    .await;
    assert_eq!(out.count, 1);
    assert_eq!(out.stopped.map(|s| s.class), Some(StopClass::Terminal));
}

#[test]
fn a_refused_connection_stops_in_its_own_class_on_the_first_attempt() {
    let signal = Signal {
        transport: Some(FailureKind::Refused),
        ..Signal::default()
    };
    match classify(&signal, &Operation::Read, SystemTime::now()) {
        Decision::Stop { class, reason } => {
            assert_eq!(class, StopClass::Refused);
            assert!(reason.contains("refused"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}
