//! Property tests: every renderer, given reports full of arbitrary Unicode, control characters
//! and very long values, returns (no panic), writes no raw control character, lets no outside
//! text begin a line, keeps human lines bounded, and (JSON) reads back as the same report.

use std::collections::BTreeMap;

use proptest::prelude::{Just, Strategy, any, prop, prop_oneof, proptest};
use proptest::test_runner::Config as Runner;

use crate::finding::{Code, Finding, PinStatus, Severity};
use crate::report::{Calls, PinReport, Report, Tokens, github, human, junit, to_json};

/// Text a hostile provider might send: any Unicode, workflow commands after line breaks,
/// escape sequences, and now and then something very long.
fn hostile() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        any::<String>(),
        Just("\n::error::pwned".to_owned()),
        Just("\r\n::add-mask::x".to_owned()),
        Just("\u{1b}]0;t\u{7}\u{1b}[2J".to_owned()),
        Just("\u{9b}31m\u{202e}\u{2028}".to_owned()),
        Just("%0A|`<&>\"'".to_owned()),
        "[\\x00-\\x1f\\x7f-\\x9f]{1,8}",
    ];
    let text = prop::collection::vec(pieces, 0..4).prop_map(|v| v.concat());
    prop_oneof![
        8 => text,
        1 => (any::<char>(), 60_000usize..70_000).prop_map(|(c, n)| c.to_string().repeat(n)),
    ]
}

fn finding() -> impl Strategy<Value = Finding> {
    (
        0..Code::ALL.len(),
        hostile(),
        hostile(),
        hostile(),
        hostile(),
    )
        .prop_map(|(code, message, key, value, action)| {
            let code = Code::ALL[code];
            Finding {
                code,
                severity: code.severity_hint(),
                message,
                evidence: serde_json::json!({ key: value, "nested": { "list": [1, "x"] } }),
                action: Some(action),
            }
        })
}

fn pin() -> impl Strategy<Value = PinReport> {
    (
        (hostile(), hostile(), hostile()),
        prop::collection::btree_map(hostile(), 0..5u64, 0..3),
        prop::collection::vec(finding(), 0..3),
        0..PinStatus::ALL.len(),
    )
        .prop_map(
            |((id, provider, model), served, findings, status)| PinReport {
                id,
                provider,
                model,
                status: PinStatus::ALL[status],
                served_models: served,
                upstreams: BTreeMap::new(),
                calls: Calls::default(),
                tokens: Tokens::default(),
                cost_usd: None,
                lifecycle: None,
                behaviour: Vec::new(),
                findings,
                capped: BTreeMap::new(),
                lifetime: None,
            },
        )
}

fn report() -> impl Strategy<Value = Report> {
    prop::collection::vec(pin(), 0..3).prop_map(|pins| {
        Report::new(
            "sha256:00".into(),
            None,
            "2026-01-01T00:00:00Z".into(),
            "2026-01-01T00:00:01Z".into(),
            pins,
            false,
        )
    })
}

#[track_caller]
fn assert_inert(what: &str, out: &str) {
    let raw = out
        .chars()
        .find(|c| *c != '\n' && crate::text::needs_escape(*c));
    assert!(raw.is_none(), "{what}: raw {raw:?}");
    for line in out.lines() {
        let line = line.trim_start();
        assert!(
            !line.starts_with("::") || own_annotation(line),
            "{what}: a line begins with outside text: {line:.200}"
        );
    }
}

/// The workflow commands `--format github` writes itself.
fn own_annotation(line: &str) -> bool {
    [
        "::notice title=",
        "::error file=",
        "::warning file=",
        "::error title=",
        "::warning title=",
    ]
    .iter()
    .any(|own| line.starts_with(own))
}

proptest! {
    #![proptest_config(Runner { cases: 64, ..Runner::default() })]

    #[test]
    fn renderers_never_panic_and_keep_outside_text_inert(report in report()) {
        let human = human::render(&report);
        assert_inert("human", &human);
        assert!(human.lines().all(|l| l.chars().count() <= 2000), "human lines are bounded");
        assert_inert("junit", &junit::render(&report));
        assert_inert("github", &github::render(&report, "pins.toml", &|_| Some(3)));
        assert_inert("summary", &github::summary(&report));
        let json = to_json(&report);
        assert_inert("json", &json);
        let back: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(back, serde_json::to_value(&report).unwrap());
    }

    #[test]
    fn xml_escaping_leaves_no_markup_and_no_line_break(text in any::<String>()) {
        let escaped = junit::xml(&text);
        assert!(!escaped.contains(['<', '>', '"', '\'', '\n', '\r']));
    }
}

impl Code {
    /// A plausible severity for a generated finding.
    fn severity_hint(self) -> Option<Severity> {
        match self {
            Code::NoBaseline | Code::ProbeChanged | Code::Inconclusive => None,
            Code::DeprecationScheduled | Code::SunsetAnnounced => Some(Severity::Warning),
            Code::FingerprintChanged => Some(Severity::Info),
            _ => Some(Severity::Error),
        }
    }
}
