//! Every wire signal against real fixtures, past dates, garbage, padding and lowercase values.

use chrono::{NaiveDate, TimeZone, Utc};

use super::{
    SignalKind, body_warning, deprecation_header, from_hint, mistral_deprecation_header,
    mistral_models, openai_models, openrouter_models, sunset_header,
};
use crate::lifecycle::resolve::PinRef;
use crate::lifecycle::{Origin, Retirement, fixture};
use crate::provider::{LifecycleHint, ProviderKind};

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Retirement {
    Retirement::At(Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap())
}

#[test]
fn deprecation_header_forms() {
    let table = [
        ("@1688169599", Some(Some(date(2023, 6, 30)))),
        (" @1688169599 ", Some(Some(date(2023, 6, 30)))),
        ("@0", Some(Some(date(1970, 1, 1)))),
        ("@-86400", Some(Some(date(1969, 12, 31)))),
        ("true", Some(None)),
        ("TRUE", Some(None)),
        ("  True\t", Some(None)),
        (
            "Sun, 11 Nov 2018 23:59:59 GMT",
            Some(Some(date(2018, 11, 11))),
        ),
        (
            "sun, 11 nov 2018 23:59:59 gmt",
            Some(Some(date(2018, 11, 11))),
        ),
        ("false", None),
        ("", None),
        ("@", None),
        ("@-", None),
        ("@12a", None),
        ("@1688169599.5", None),
        ("@1688169599;x", None),
        ("@9999999999999999", None),
        ("@999999999999999", None),
        ("yes", None),
        ("2026-01-01", None),
    ];
    for (raw, want) in table {
        let got = deprecation_header(raw);
        assert_eq!(got.as_ref().map(|s| s.announced), want, "{raw:?}");
        if let Some(signal) = got {
            assert_eq!(signal.retirement, Retirement::Announced, "{raw:?}");
            assert_eq!(signal.kind, SignalKind::DeprecationHeader);
            assert!(signal.source.starts_with("Deprecation: "), "{raw:?}");
        }
    }
}

#[test]
fn sunset_header_forms() {
    let table = [
        (
            "Wed, 11 Nov 2026 23:59:59 GMT",
            Some(at(2026, 11, 11, 23, 59, 59)),
        ),
        (
            "wed, 11 nov 2026 23:59:59 gmt",
            Some(at(2026, 11, 11, 23, 59, 59)),
        ),
        (
            "\tWed, 11 Nov 2026 23:59:59 GMT  ",
            Some(at(2026, 11, 11, 23, 59, 59)),
        ),
        (
            "Sat, 01 Jan 2000 00:00:00 GMT",
            Some(at(2000, 1, 1, 0, 0, 0)),
        ),
        ("2026-11-11", Some(Retirement::On(date(2026, 11, 11)))),
        ("Wed, 11 Nov 2026", None),
        ("@1688169599", None),
        ("true", None),
        ("", None),
        ("Wed, 11 Nov 2026 25:00:00 GMT", None),
        ("\u{1F600}", None),
    ];
    for (raw, want) in table {
        assert_eq!(sunset_header(raw).map(|s| s.retirement), want, "{raw:?}");
    }
    let signal = sunset_header(" Wed, 11 Nov 2026 23:59:59 GMT ").unwrap();
    assert_eq!(signal.source, "Sunset: Wed, 11 Nov 2026 23:59:59 GMT");
}

#[test]
fn mistral_header_forms() {
    let table = [
        ("2026-01-31T12:00:00Z", Some(at(2026, 1, 31, 12, 0, 0))),
        ("2026-01-31t12:00:00z", Some(at(2026, 1, 31, 12, 0, 0))),
        (
            " 2026-01-31T12:00:00+00:00 ",
            Some(at(2026, 1, 31, 12, 0, 0)),
        ),
        ("2026-01-31T12:00:00", Some(at(2026, 1, 31, 12, 0, 0))),
        ("2024-01-31", Some(Retirement::On(date(2024, 1, 31)))),
        ("2026-01-31T12:00", None),
        ("31/01/2026", None),
        ("", None),
        ("null", None),
    ];
    for (raw, want) in table {
        assert_eq!(
            mistral_deprecation_header(raw).map(|s| s.retirement),
            want,
            "{raw:?}"
        );
    }
}

#[test]
fn openai_body_warning() {
    let warning = "This model version is deprecated. Migrate before January 4, 2024 to avoid \
                   disruption of service. Learn more https://platform.openai.com/docs/deprecations";
    let fragment = String::from_utf8(fixture(
        "openai-chat/deprecation-warning-in-body.fragment.txt",
    ))
    .unwrap();
    assert!(fragment.contains(warning));
    let table = [
        (warning, Some(Retirement::On(date(2024, 1, 4)))),
        ("This model is deprecated.", Some(Retirement::Announced)),
        (
            "Deprecated: migrate before someday.",
            Some(Retirement::Announced),
        ),
        ("Rate limits will change before March 1, 2026.", None),
        ("", None),
    ];
    for (text, want) in table {
        assert_eq!(body_warning(text).map(|s| s.retirement), want, "{text:?}");
    }
}

#[test]
fn adapter_hints_map_to_signals() {
    let table = [
        (
            LifecycleHint::Deprecation("@1688169599".to_owned()),
            Some(SignalKind::DeprecationHeader),
        ),
        (
            LifecycleHint::Sunset("Wed, 11 Nov 2026 23:59:59 GMT".to_owned()),
            Some(SignalKind::SunsetHeader),
        ),
        (
            LifecycleHint::ModelDeprecationTimestamp("2026-01-31T12:00:00Z".to_owned()),
            Some(SignalKind::MistralDeprecationHeader),
        ),
        (
            LifecycleHint::BodyWarning("This model version is deprecated.".to_owned()),
            Some(SignalKind::BodyWarning),
        ),
        (LifecycleHint::Sunset("soon".to_owned()), None),
    ];
    for (hint, want) in table {
        assert_eq!(from_hint(&hint).map(|s| s.kind), want, "{hint:?}");
    }
}

#[test]
fn openai_models_list_and_single_model() {
    let signals = openai_models(&fixture("openai-chat/models-list-docs-example.json")).unwrap();
    assert_eq!(signals.len(), 1);
    assert_eq!(signals[0].models, ["model-id-2"]);
    assert_eq!(signals[0].retirement, Retirement::On(date(2026, 10, 23)));
    assert_eq!(signals[0].kind, SignalKind::OpenAiShutdownDate);

    let table: [(&[u8], Option<usize>); 8] = [
        (br#"{"id": "gpt-4", "object": "model", "shutdown_date": "2026-10-23"}"#, Some(1)),
        (br#"{"id": "gpt-4", "shutdown_date": null}"#, Some(0)),
        (br#"{"data": [{"id": "a", "shutdown_date": "never"}, {"id": 3, "shutdown_date": "2026-01-01"}]}"#, Some(0)),
        (br#"[{"id": "a", "shutdown_date": "2020-01-01"}]"#, Some(1)),
        (br#"{"object": "list"}"#, None),
        (b"42", None),
        (b"<html>", None),
        (b"\xff\xfe", None),
    ];
    for (body, want) in table {
        let got = openai_models(body).ok().map(|s| s.len());
        assert_eq!(got, want, "{}", String::from_utf8_lossy(body));
    }
}

#[test]
fn mistral_models_entry_with_aliases_and_replacement() {
    let signals =
        mistral_models(&fixture("mistral/models-list-entry-codestral-2501.json")).unwrap();
    assert_eq!(signals.len(), 1);
    let signal = &signals[0];
    assert_eq!(
        signal.models,
        ["codestral-2501", "codestral-2412", "codestral-2411-rc5"]
    );
    assert_eq!(signal.retirement, at(2026, 1, 31, 12, 0, 0));
    assert_eq!(signal.replacement.as_deref(), Some("codestral-latest"));

    let list = br#"{"object": "list", "data": [
        {"id": "mistral-large-latest", "deprecation": null, "aliases": []},
        {"id": "open-mistral-7b", "deprecation": "2025-03-30T12:00:00Z", "aliases": ["mistral-tiny", 7, " "],
         "deprecation_replacement_model": null}]}"#;
    let signals = mistral_models(list).unwrap();
    assert_eq!(signals.len(), 1);
    assert_eq!(signals[0].models, ["open-mistral-7b", "mistral-tiny"]);
    assert_eq!(signals[0].replacement, None);
}

#[test]
fn openrouter_models_with_canonical_slugs() {
    let signals = openrouter_models(&fixture("openrouter/models-list.json")).unwrap();
    let rows: Vec<_> = signals
        .iter()
        .map(|s| (s.models.clone(), s.retirement))
        .collect();
    assert_eq!(
        rows,
        [
            (
                vec!["x-ai/grok-4".to_owned(), "x-ai/grok-4-07-09".to_owned()],
                Retirement::On(date(2026, 5, 15))
            ),
            (
                vec!["google/gemini-2.0-flash-001".to_owned()],
                Retirement::On(date(2026, 6, 1))
            ),
        ]
    );
    assert!(openrouter_models(br#"{"data": "nope"}"#).is_err());
}

#[test]
fn a_header_signal_becomes_a_fact_about_the_pin() {
    let seen = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let signal = mistral_deprecation_header("2026-01-31T12:00:00Z").unwrap();
    let pin = PinRef {
        kind: ProviderKind::OpenAiCompatible,
        provider: "mistral",
        model: "codestral-2501",
        accept: &[],
        retires_on: None,
    };
    let fact = signal.fact_for(&pin, seen);
    assert_eq!(fact.provider, "mistral");
    assert_eq!(fact.models, ["codestral-2501"]);
    assert_eq!(fact.origin, Origin::Provider);
    assert_eq!(fact.captured, Some(date(2026, 1, 2)));

    let unnamed = PinRef {
        provider: "My Gateway",
        ..pin
    };
    assert_eq!(signal.fact_for(&unnamed, seen).provider, "my-gateway");
}
