use std::collections::BTreeMap;

use super::{GenAiSpan, judge};
use crate::audit::lifecycle::Facts;
use crate::config::tests::{BASE, PROBE};
use crate::config::tests_support::config_with;
use crate::finding::Code;
use crate::lock::{LOCK_VERSION, LoadedLock, Lock, LockedPin, LockedProbe};
use crate::traffic::spans::Deployment;

fn span(served: &str) -> GenAiSpan {
    GenAiSpan {
        trace_id: "5b".repeat(16),
        span_id: "eee19b7ec3c1b174".to_owned(),
        provider: Some("openai".to_owned()),
        requested: Some("gpt-4o-2024-08-06".to_owned()),
        served: Some(served.to_owned()),
        ..GenAiSpan::default()
    }
}

fn codes(pins: &str, spans: &[GenAiSpan]) -> Vec<Code> {
    let config = config_with(pins, PROBE);
    let judged = judge(&config, None, spans, &Facts::default(), false);
    judged.report.pins[0]
        .findings
        .iter()
        .map(|f| f.code)
        .collect()
}

#[test]
fn a_retired_model_still_answering_in_traffic_is_retired_still_served() {
    let retired = BASE.replacen(
        "model = \"gpt-4o-2024-08-06\"",
        "model = \"gpt-4o-2024-08-06\"\nretires_on = 2020-01-01",
        1,
    );
    let found = codes(&retired, &[span("gpt-4o-2024-08-06")]);
    assert!(found.contains(&Code::RetiredStillServed), "{found:?}");
}

#[test]
fn traffic_answered_by_another_model_is_a_mismatch() {
    let found = codes(BASE, &[span("gpt-4o-2024-08-06"), span("gpt-4o-mini")]);
    assert!(found.contains(&Code::ServedModelMismatch), "{found:?}");
    assert!(codes(BASE, &[span("gpt-4o-2024-08-06")]).is_empty());
}

#[test]
fn traffic_that_never_names_the_answering_model_is_inconclusive_not_ok() {
    let silent = GenAiSpan {
        served: None,
        ..span("unused")
    };
    let config = config_with(BASE, PROBE);
    let judged = judge(
        &config,
        None,
        &[silent.clone(), silent.clone()],
        &Facts::default(),
        false,
    );
    let pin = &judged.report.pins[0];
    assert_eq!(pin.status, crate::finding::PinStatus::Inconclusive);
    assert!(
        pin.findings[0]
            .message
            .contains("none of 2 spans named the model"),
        "{:?}",
        pin.findings
    );
    // One span that names it is a measurement; the silent ones add nothing to it.
    assert!(codes(BASE, &[silent, span("gpt-4o-2024-08-06")]).is_empty());
}

const UPSTREAM: &str = "https://api.openai.com/v1";

/// A lock for `BASE`: the probe answered with 20 prompt tokens, through `UPSTREAM`.
fn lock(probe_digest: &str) -> LoadedLock {
    let probe = LockedProbe {
        digest: probe_digest.to_owned(),
        max_tokens: 8,
        temperature: 1.0,
        prompt_tokens: vec![20],
        outputs: vec!["391".to_owned()],
        completion_tokens: vec![2],
    };
    let pin = LockedPin {
        provider: "openai".to_owned(),
        kind: "openai".to_owned(),
        model: "gpt-4o-2024-08-06".to_owned(),
        served_models: BTreeMap::from([("gpt-4o-2024-08-06".to_owned(), 1)]),
        upstreams: BTreeMap::from([(UPSTREAM.to_owned(), 1)]),
        system_fingerprints: Vec::new(),
        effective_price: None,
        probes: BTreeMap::from([("arith-17x23".to_owned(), probe)]),
        first_tokens: None,
        tiers_missing: BTreeMap::new(),
    };
    LoadedLock {
        lock: Lock {
            lock_version: LOCK_VERSION,
            modelpin_version: "0".to_owned(),
            config_digest: "sha256:0".to_owned(),
            pins: BTreeMap::from([("support-bot".to_owned(), pin)]),
        },
        digest: "sha256:1".to_owned(),
    }
}

fn tokens(n: Option<u64>, digest: Option<&str>) -> GenAiSpan {
    GenAiSpan {
        input_tokens: n,
        probe_digest: digest.map(str::to_owned),
        ..span("gpt-4o-2024-08-06")
    }
}

fn deployed(model: &str, api_base: &str) -> GenAiSpan {
    GenAiSpan {
        deployment: Some(Deployment {
            model: Some(model.to_owned()),
            id: Some("9f3c".to_owned()),
            api_base: Some(api_base.to_owned()),
        }),
        ..span("gpt-4o-2024-08-06")
    }
}

#[test]
fn fingerprinted_spans_and_gateway_deployments_are_judged_against_the_lock() {
    let config = config_with(BASE, PROBE);
    let digest = config.probes[0].digest.clone();
    let other = format!("sha256:{}", "0".repeat(64));
    let d = Some(digest.as_str());
    let rows: Vec<(&str, Vec<GenAiSpan>, &str, Vec<Code>)> = vec![
        (
            "the locked count",
            vec![tokens(Some(20), d)],
            &digest,
            vec![],
        ),
        (
            "a count the lock lacks",
            vec![tokens(Some(20), d), tokens(Some(31), d)],
            &digest,
            vec![Code::TokenizerChanged],
        ),
        (
            "no fingerprint: any count",
            vec![tokens(Some(31), None)],
            &digest,
            vec![],
        ),
        (
            "another digest",
            vec![tokens(Some(31), Some(&other))],
            &digest,
            vec![],
        ),
        (
            "a fingerprint but no count",
            vec![tokens(None, d)],
            &digest,
            vec![],
        ),
        (
            "the probe changed since the lock",
            vec![tokens(Some(31), d)],
            &other,
            vec![],
        ),
        (
            "the locked deployment",
            vec![deployed("gpt-4o-2024-08-06", UPSTREAM)],
            &digest,
            vec![],
        ),
        (
            "another deployment behind the name",
            vec![deployed("gpt-4o-mini", UPSTREAM)],
            &digest,
            vec![Code::ServedModelMismatch],
        ),
        (
            "another upstream",
            vec![deployed("gpt-4o-2024-08-06", "https://proxy.example")],
            &digest,
            vec![Code::UpstreamMismatch],
        ),
    ];
    for (name, spans, locked_digest, want) in rows {
        let lock = lock(locked_digest);
        let judged = judge(&config, Some(&lock), &spans, &Facts::default(), false);
        let codes: Vec<Code> = judged.report.pins[0]
            .findings
            .iter()
            .map(|f| f.code)
            .collect();
        assert_eq!(codes, want, "{name}");
    }
}

#[test]
fn a_tokenizer_change_in_traffic_names_the_spans() {
    let config = config_with(BASE, PROBE);
    let d = Some(config.probes[0].digest.as_str());
    let mut moved = tokens(Some(31), d);
    moved.span_id = "00000000000000aa".to_owned();
    let spans = [tokens(Some(20), d), moved, tokens(Some(99), None)];
    let lock = lock(&config.probes[0].digest);
    let judged = judge(&config, Some(&lock), &spans, &Facts::default(), false);
    let finding = &judged.report.pins[0].findings[0];
    assert_eq!(finding.code, Code::TokenizerChanged);
    let counts = &finding.evidence["probes"][0];
    assert_eq!(counts["locked"], serde_json::json!([20]));
    assert_eq!(counts["now"], serde_json::json!([20, 31]));
    let example = format!("trace {} span 00000000000000aa", "5b".repeat(16));
    assert_eq!(counts["examples"], serde_json::json!([example]));
}
