//! Property tests: `parse_reply` never panics on any status, headers and body, for every
//! provider kind, and every string it keeps is bounded (`text::bounded`), whether the body is
//! random bytes or JSON shaped like a real reply with hostile values in it.

use proptest::prelude::{Just, Strategy, any, prop, prop_oneof, proptest};
use proptest::test_runner::Config as Runner;
use serde_json::{Value, json};

use crate::provider::{Parsed, ProviderKind, RawResponse, parse_reply};
use crate::text::{MAX_ANSWER_CHARS, MAX_ID_CHARS, MAX_MESSAGE_CHARS};

fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => any::<String>(),
        1 => (any::<char>(), 0usize..70_000).prop_map(|(c, n)| c.to_string().repeat(n)),
        1 => Just("gpt\n::error::x\u{1b}[2J".to_owned()),
    ]
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        hostile_text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("model".to_owned()),
                    Just("error".to_owned()),
                    any::<String>()
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Bodies shaped like each provider's replies and errors, with arbitrary values in the fields.
fn shaped_body() -> impl Strategy<Value = Vec<u8>> {
    (hostile_text(), hostile_text(), json_value(), json_value()).prop_map(|(model, text, a, b)| {
        let shapes = [
            json!({"model": model, "choices": [{"message": {"content": text}}], "usage": a, "system_fingerprint": b}),
            json!({"model": model, "content": [{"type": "text", "text": text}], "usage": a}),
            json!({"modelVersion": model, "candidates": [{"content": {"parts": [{"text": text}]}}], "usageMetadata": a}),
            json!({"error": {"message": text, "code": model, "type": a}, "provider": b}),
            json!({"type": "error", "error": {"type": model, "message": text}}),
        ];
        let i = text.len() % shapes.len();
        serde_json::to_vec(&shapes[i]).unwrap_or_default()
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        json_value().prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
        shaped_body(),
    ]
}

fn response() -> impl Strategy<Value = RawResponse> {
    let status = prop_oneof![
        Just(200u16),
        Just(400),
        Just(401),
        Just(404),
        Just(429),
        Just(500),
        100u16..600
    ];
    let header = (
        prop_oneof![
            Just("sunset".to_owned()),
            Just("deprecation".to_owned()),
            Just("retry-after".to_owned()),
            Just("x-request-id".to_owned()),
            "[a-z-]{1,12}",
        ],
        hostile_text(),
    );
    (status, prop::collection::vec(header, 0..4), body()).prop_map(|(status, headers, body)| {
        RawResponse {
            status,
            headers,
            body,
        }
    })
}

fn bounded(text: &str, max: usize) -> bool {
    text.chars().count() <= max
}

#[track_caller]
fn assert_bounded(parsed: &Parsed) {
    match parsed {
        Parsed::Reply(r) => {
            for id in [
                &r.served_model,
                &r.upstream,
                &r.fallback_model,
                &r.system_fingerprint,
                &r.request_id,
            ]
            .into_iter()
            .flatten()
            {
                assert!(bounded(id, MAX_ID_CHARS), "{} chars", id.chars().count());
            }
            assert!(bounded(&r.text, MAX_ANSWER_CHARS));
        }
        Parsed::Rejected(r) => {
            assert!(bounded(&r.message, MAX_MESSAGE_CHARS));
            for id in [&r.code, &r.error_type, &r.request_id]
                .into_iter()
                .flatten()
            {
                assert!(bounded(id, MAX_ID_CHARS));
            }
        }
        Parsed::Unparseable { reason, .. } => assert!(bounded(reason, MAX_MESSAGE_CHARS)),
    }
}

proptest! {
    #![proptest_config(Runner { cases: 256, ..Runner::default() })]

    #[test]
    fn any_response_parses_to_a_bounded_outcome_for_every_kind(response in response()) {
        for kind in ProviderKind::ALL {
            assert_bounded(&parse_reply(kind, &response));
        }
    }
}
