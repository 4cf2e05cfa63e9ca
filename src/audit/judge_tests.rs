//! The judge as a table: observations made in memory, a baseline recorded from an honest one by
//! the real `baseline::record`, and for each case the codes and the evidence a user would read.

use std::time::Duration;

use serde_json::Value;

use super::*;
use crate::audit::baseline::record;
use crate::config::Config;
use crate::config::tests_support::config_with;
use crate::finding::Code;
use crate::provider::{Rejected, Usage};
use crate::transport::{FailureKind, TransportFailure};

const MODEL: &str = "gpt-4o-2024-08-06";
const PROBE: &str = "arith-17x23";

fn config() -> Config {
    let pins = crate::config::tests::BASE.replace(
        &format!("model = \"{MODEL}\""),
        &format!("model = \"{MODEL}\"\nprice = {{ input = 2.5, output = 10.0 }}"),
    );
    config_with(&pins, crate::config::tests::PROBE)
}

/// An answer as the adapter would return it.
fn reply(served: &str, prompt_tokens: u64, text: &str) -> CallResult {
    CallResult::Reply(Reply {
        served_model: Some(served.to_owned()),
        usage: Usage {
            input: Some(prompt_tokens),
            output: Some(2),
            ..Usage::default()
        },
        system_fingerprint: Some("fp_a".to_owned()),
        text: text.to_owned(),
        ..Reply::default()
    })
}

fn observation(results: impl IntoIterator<Item = CallResult>) -> Observation {
    Observation::complete(
        "support-bot",
        results
            .into_iter()
            .enumerate()
            .map(|(i, result)| CallRecord {
                probe: PROBE.to_owned(),
                kind: CallKind::Probe,
                sample: i as u32,
                result,
                latency: Duration::from_millis(5),
                attempts: 1,
                waits: Vec::new(),
                stopped: None,
            })
            .collect(),
    )
}

fn honest() -> Observation {
    observation((0..10).map(|_| reply(MODEL, 20, "391")))
}

fn not_found() -> CallResult {
    CallResult::Rejected(Rejected {
        status: 404,
        class: ErrorClass::NotFound,
        code: Some("model_not_found".to_owned()),
        error_type: Some("invalid_request_error".to_owned()),
        message: "The model `gpt-4o-2024-08-06` does not exist".to_owned(),
        request_id: Some("req_1".to_owned()),
    })
}

fn timeout() -> CallResult {
    CallResult::Failed(TransportFailure {
        kind: FailureKind::Timeout,
        message: "no complete response within 1s".to_owned(),
    })
}

/// How the case's lock entry is made.
#[derive(Clone, Copy)]
enum Baseline {
    Honest,
    None,
    OtherModel,
}

struct Row {
    name: &'static str,
    baseline: Baseline,
    now: Observation,
    codes: &'static [Code],
    /// (JSON pointer into the first finding's evidence, expected value).
    evidence: &'static [(&'static str, &'static str)],
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            name: "unchanged model",
            baseline: Baseline::Honest,
            now: honest(),
            codes: &[],
            evidence: &[],
        },
        Row {
            name: "another model named in the body",
            baseline: Baseline::Honest,
            now: observation((0..10).map(|_| reply("gpt-4o-mini-2024-07-18", 20, "391"))),
            codes: &[Code::ServedModelMismatch],
            evidence: &[
                ("/unexpected/gpt-4o-mini-2024-07-18", "10"),
                ("/requested", "\"gpt-4o-2024-08-06\""),
            ],
        },
        Row {
            name: "same ID, other tokenizer",
            baseline: Baseline::Honest,
            now: observation((0..10).map(|_| reply(MODEL, 25, "391"))),
            codes: &[Code::TokenizerChanged, Code::CostChanged],
            evidence: &[("/probes/0/locked", "[20]"), ("/probes/0/now", "[25]")],
        },
        Row {
            name: "same ID, other answers",
            baseline: Baseline::Honest,
            now: observation((0..10).map(|_| reply(MODEL, 20, "392"))),
            codes: &[Code::BehaviorDrift],
            evidence: &[("/drift", "true"), ("/alpha", "0.001")],
        },
        Row {
            name: "new system fingerprint only",
            baseline: Baseline::Honest,
            now: observation((0..10).map(|i| {
                let CallResult::Reply(mut r) = reply(MODEL, 20, "391") else {
                    unreachable!()
                };
                r.system_fingerprint = Some(format!("fp_{}", if i < 5 { "a" } else { "b" }));
                CallResult::Reply(r)
            })),
            codes: &[Code::FingerprintChanged],
            evidence: &[("/new/0", "\"fp_b\"")],
        },
        Row {
            name: "no lock entry",
            baseline: Baseline::None,
            now: honest(),
            codes: &[Code::NoBaseline],
            evidence: &[("/locked_model", "null")],
        },
        Row {
            name: "lock recorded for another model",
            baseline: Baseline::OtherModel,
            now: honest(),
            codes: &[Code::NoBaseline],
            evidence: &[("/locked_model", "\"gpt-4-0613\"")],
        },
        Row {
            name: "model gone",
            baseline: Baseline::Honest,
            now: observation([not_found()]),
            codes: &[Code::ModelNotFound],
            evidence: &[("/status", "404"), ("/calls_refused", "1")],
        },
        Row {
            name: "nothing answered",
            baseline: Baseline::Honest,
            now: observation((0..3).map(|_| timeout())),
            codes: &[Code::Inconclusive],
            evidence: &[("/reasons/timeout: no complete response within 1s", "3")],
        },
    ]
}

fn locked_for(baseline: Baseline, config: &Config) -> Option<crate::lock::LockedPin> {
    let pin = &config.pins[0];
    let probes = config.probes_of(pin);
    let mut locked = record(pin, "openai", &probes, &honest())?;
    match baseline {
        Baseline::Honest => Some(locked),
        Baseline::None => None,
        Baseline::OtherModel => {
            locked.model = "gpt-4-0613".to_owned();
            Some(locked)
        }
    }
}

#[test]
fn judge_table() {
    let config = config();
    let pin = &config.pins[0];
    for row in rows() {
        let locked = locked_for(row.baseline, &config);
        let case = Case::new(pin, config.probes_of(pin), &row.now, locked.as_ref());
        let findings = judge(&case);
        let codes: Vec<Code> = findings.iter().map(|f| f.code).collect();
        assert_eq!(codes, row.codes, "{}: {findings:#?}", row.name);
        for (pointer, want) in row.evidence {
            let got = findings[0].evidence.pointer(pointer);
            let want: Value = serde_json::from_str(want).unwrap();
            assert_eq!(
                got,
                Some(&want),
                "{}: {pointer} in {:#}",
                row.name,
                findings[0].evidence
            );
        }
        for f in &findings {
            assert!(!f.message.is_empty(), "{}: {f:?}", row.name);
            assert_eq!(f.severity, f.code.severity(), "{}: {f:?}", row.name);
        }
    }
}

#[test]
fn messages_are_built_from_the_evidence() {
    let config = config();
    let pin = &config.pins[0];
    let locked = locked_for(Baseline::Honest, &config);
    let now = observation((0..10).map(|i| {
        let served = if i < 7 {
            "gpt-4o-mini-2024-07-18"
        } else {
            MODEL
        };
        reply(served, 20, "391")
    }));
    let findings = judge(&Case::new(
        pin,
        config.probes_of(pin),
        &now,
        locked.as_ref(),
    ));
    assert_eq!(
        findings[0].message,
        "served `gpt-4o-mini-2024-07-18` (7 of 10 calls) where the pin accepts `gpt-4o-2024-08-06`"
    );
    let now = observation((0..10).map(|_| reply(MODEL, 25, "391")));
    let findings = judge(&Case::new(
        pin,
        config.probes_of(pin),
        &now,
        locked.as_ref(),
    ));
    assert_eq!(
        findings[0].message,
        "prompt token count of unchanged probe `arith-17x23` went from [20] to [25]: a different tokenizer or chat template answers"
    );
    assert_eq!(
        findings[1].message,
        "prompt tokens per call changed by +25.0%: at the pinned input price, $0.00005 → $0.000063 per call"
    );
}

#[test]
fn one_token_tier_calls_answered_at_length_are_max_tokens_exceeded() {
    let config = config();
    let pin = &config.pins[0];
    let locked = locked_for(Baseline::Honest, &config);
    let mut records = honest().calls;
    for i in 0..3 {
        let CallResult::Reply(mut long) = reply(MODEL, 20, "391") else {
            unreachable!()
        };
        long.usage.output = Some(5000);
        records.push(CallRecord {
            probe: "first-token:color".to_owned(),
            kind: CallKind::Tier,
            sample: i,
            result: CallResult::Reply(long),
            latency: Duration::from_millis(5),
            attempts: 1,
            waits: Vec::new(),
            stopped: None,
        });
    }
    let now = Observation::complete("support-bot", records);
    let findings = judge(&Case::new(
        pin,
        config.probes_of(pin),
        &now,
        locked.as_ref(),
    ));
    let over = findings
        .iter()
        .find(|f| f.code == Code::MaxTokensExceeded)
        .unwrap_or_else(|| panic!("{findings:#?}"));
    assert_eq!(
        over.evidence.pointer("/probes/0"),
        Some(&serde_json::json!({
            "probe": "first-token tier",
            "max_tokens": 1,
            "completion_tokens": 5000,
            "answers": 3
        }))
    );
}
