//! The resolver on the built-in table, feeds and signals, with the clock passed in.

use std::time::Duration;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use serde_json::json;

use super::{Lifecycle, Match, PinRef, Role, Stage, WarnWindow, resolve, retirement_message};
use crate::lifecycle::feeds::parse_feed;
use crate::lifecycle::signals::{openai_models, sunset_header};
use crate::lifecycle::{Fact, Origin, Retirement, builtin};
use crate::provider::ProviderKind;

const DAY: u64 = 86_400;
const WINDOWS: [Duration; 3] = [
    Duration::from_secs(90 * DAY),
    Duration::from_secs(30 * DAY),
    Duration::from_secs(7 * DAY),
];

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn noon(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 12, 0, 0).unwrap()
}

fn pin<'a>(kind: ProviderKind, provider: &'a str, model: &'a str) -> PinRef<'a> {
    PinRef {
        kind,
        provider,
        model,
        accept: &[],
        retires_on: None,
    }
}

fn openai(model: &str) -> PinRef<'_> {
    pin(ProviderKind::OpenAi, "openai", model)
}

fn on_builtin(pin: &PinRef<'_>, now: DateTime<Utc>) -> Lifecycle {
    resolve(pin, builtin(), now, &WINDOWS)
}

fn roles(lifecycle: &Lifecycle) -> Vec<(Role, Origin, Retirement)> {
    lifecycle
        .sources
        .iter()
        .map(|e| (e.role, e.origin, e.retirement))
        .collect()
}

#[test]
fn a_scheduled_retirement_with_days_left_and_window() {
    let table = [
        (noon(2026, 9, 1), 135, None),
        (noon(2026, 11, 1), 74, Some(90)),
        (noon(2026, 12, 20), 25, Some(30)),
        (noon(2027, 1, 10), 4, Some(7)),
        (noon(2027, 1, 13), 1, Some(7)),
    ];
    for (now, days, window) in table {
        let got = on_builtin(&openai("gpt-4o"), now);
        assert_eq!(got.stage, Stage::Scheduled, "{now}");
        assert_eq!(got.retirement, Some(Retirement::On(date(2027, 1, 14))));
        assert_eq!(got.days_left, Some(days), "{now}");
        let want = window.map(|d| WarnWindow(Duration::from_secs(d * DAY)));
        assert_eq!(got.window, want, "{now}");
        assert_eq!(got.replacement, ["gpt-6-luna"]);
    }
}

#[test]
fn past_the_date_is_retired_with_negative_days() {
    let got = on_builtin(&openai("gpt-4.5-preview"), noon(2026, 9, 1));
    assert_eq!(got.stage, Stage::Retired);
    assert!(got.is_retired());
    assert_eq!(got.days_left, Some(-414));
    assert_eq!(got.window, None);
    // The retirement day itself counts as retired: the date is the first day it may fail.
    let day_of = on_builtin(
        &openai("gpt-4o"),
        Utc.with_ymd_and_hms(2027, 1, 14, 0, 0, 0).unwrap(),
    );
    assert_eq!((day_of.stage, day_of.days_left), (Stage::Retired, Some(0)));
}

#[test]
fn gpt_4o_does_not_borrow_gpt_4o_mini_or_a_snapshot() {
    let got = on_builtin(&openai("gpt-4o"), noon(2026, 9, 1));
    assert!(
        got.sources.iter().all(|e| e.model == "gpt-4o"),
        "{:?}",
        got.sources
    );
    let unknown = on_builtin(&openai("gpt-4o-mini-search-preview"), noon(2026, 9, 1));
    assert_eq!(unknown.stage, Stage::NoRecord);
    assert!(unknown.sources.is_empty());
}

#[test]
fn a_later_capture_supersedes_an_earlier_one() {
    let gemini = pin(ProviderKind::Gemini, "google", "models/gemini-2.5-pro");
    let got = on_builtin(&gemini, noon(2026, 6, 20));
    assert_eq!(
        got.stage,
        Stage::Scheduled,
        "not retired on the early capture's 2026-06-17"
    );
    assert_eq!(got.retirement, Some(Retirement::On(date(2026, 12, 1))));
    assert_eq!(got.replacement, ["gemini-3.8-flash"]);
    assert_eq!(
        roles(&got),
        [
            (
                Role::Decisive,
                Origin::Builtin,
                Retirement::On(date(2026, 12, 1))
            ),
            // deprecations.info's July snapshot, read before the date moved.
            (
                Role::Differs,
                Origin::Builtin,
                Retirement::On(date(2026, 10, 16))
            ),
            (
                Role::Agrees,
                Origin::Builtin,
                Retirement::On(date(2026, 12, 1))
            ),
            (
                Role::Superseded,
                Origin::Builtin,
                Retirement::On(date(2026, 6, 17))
            ),
        ]
    );
    assert_eq!(got.sources[0].matched, Match::Normalised);

    let sonnet = on_builtin(
        &pin(
            ProviderKind::Anthropic,
            "anthropic",
            "claude-3-5-sonnet-20241022",
        ),
        noon(2026, 1, 1),
    );
    assert_eq!(sonnet.retirement, Some(Retirement::On(date(2025, 10, 28))));
    let early: Vec<Role> = sonnet
        .sources
        .iter()
        .filter(|e| e.retirement == Retirement::On(date(2025, 10, 22)))
        .map(|e| e.role)
        .collect();
    assert_eq!(early, [Role::Superseded]);
}

#[test]
fn the_later_announcement_wins_over_an_undated_announcement() {
    // `gpt-5` is in the 2026-07-23 group (no announcement date) and the 2026-12-11 group
    // (announced 2026-06-11, then re-captured with new replacements).
    let got = on_builtin(&openai("gpt-5"), noon(2026, 7, 1));
    assert_eq!(got.retirement, Some(Retirement::On(date(2026, 12, 11))));
    assert_eq!(got.replacement, ["gpt-6.1-sol", "gpt-6.1-terra"]);
    let differs = got
        .sources
        .iter()
        .filter(|e| e.role == Role::Differs)
        .count();
    assert_eq!(
        differs, 1,
        "the surviving 2026-07-23 row is shown as disagreeing"
    );
}

#[test]
fn a_provider_signal_outranks_the_table_and_the_pin_override_outranks_all() {
    let body = br#"{"data": [{"id": "gpt-4o", "shutdown_date": "2026-12-01"}]}"#;
    let seen = noon(2026, 9, 1);
    let gpt_4o = openai("gpt-4o");
    let signals: Vec<Fact> = openai_models(body)
        .unwrap()
        .iter()
        .map(|s| s.fact_for(&gpt_4o, seen))
        .collect();
    let got = resolve(&gpt_4o, builtin().iter().chain(&signals), seen, &WINDOWS);
    assert_eq!(got.retirement, Some(Retirement::On(date(2026, 12, 1))));
    assert_eq!(got.sources[0].origin, Origin::Provider);
    assert_eq!(got.sources[1].role, Role::Differs);

    let pinned = PinRef {
        retires_on: Some(date(2026, 10, 1)),
        ..gpt_4o
    };
    let got = resolve(&pinned, builtin().iter().chain(&signals), seen, &WINDOWS);
    assert_eq!(got.retirement, Some(Retirement::On(date(2026, 10, 1))));
    assert_eq!(got.window, Some(WarnWindow(Duration::from_secs(30 * DAY))));
    assert_eq!(
        got.replacement,
        ["gpt-6-luna"],
        "the replacement still comes from the facts"
    );
    assert_eq!(
        roles(&got),
        [
            (
                Role::Decisive,
                Origin::Pin,
                Retirement::On(date(2026, 10, 1))
            ),
            (
                Role::Differs,
                Origin::Provider,
                Retirement::On(date(2026, 12, 1))
            ),
            (
                Role::Differs,
                Origin::Builtin,
                Retirement::On(date(2027, 1, 14))
            ),
            (
                Role::Differs,
                Origin::Builtin,
                Retirement::On(date(2027, 1, 14))
            ),
        ]
    );
}

#[test]
fn a_precise_instant_is_honoured() {
    let deepseek = pin(ProviderKind::OpenAiCompatible, "deepseek", "deepseek-chat");
    let before = on_builtin(
        &deepseek,
        Utc.with_ymd_and_hms(2026, 7, 24, 15, 0, 0).unwrap(),
    );
    assert_eq!(
        (before.stage, before.days_left),
        (Stage::Scheduled, Some(0))
    );
    assert_eq!(
        before.window,
        Some(WarnWindow(Duration::from_secs(7 * DAY)))
    );
    let after = on_builtin(
        &deepseek,
        Utc.with_ymd_and_hms(2026, 7, 24, 16, 0, 0).unwrap(),
    );
    assert_eq!(after.stage, Stage::Retired);
    // The same ID behind an unnamed gateway still finds the DeepSeek row; OpenAI's kind does not.
    let gateway = pin(
        ProviderKind::OpenAiCompatible,
        "gateway",
        "deepseek-reasoner",
    );
    assert_eq!(on_builtin(&gateway, noon(2026, 8, 1)).stage, Stage::Retired);
    assert_eq!(
        on_builtin(&openai("deepseek-reasoner"), noon(2026, 8, 1)).stage,
        Stage::NoRecord
    );
}

#[test]
fn dateless_facts() {
    let now = noon(2026, 9, 1);
    let table = [
        (
            pin(
                ProviderKind::OpenAiCompatible,
                "deepseek",
                "deepseek-v4-flash",
            ),
            Stage::Retired,
            Some(Retirement::Gone),
        ),
        (
            pin(ProviderKind::OpenAiCompatible, "mistral", "mistral-tiny"),
            Stage::Deprecated,
            Some(Retirement::Announced),
        ),
        (
            pin(ProviderKind::OpenAiCompatible, "groq", "compound-beta"),
            Stage::Retired,
            Some(Retirement::Gone),
        ),
        (
            pin(
                ProviderKind::OpenAiCompatible,
                "bedrock",
                "anthropic.claude-3-5-haiku-20241022-v1:0",
            ),
            Stage::Retired,
            Some(Retirement::Gone),
        ),
        (
            pin(ProviderKind::Azure, "azure", "gpt-4-turbo-2024-04-09"),
            Stage::NoRecord,
            None,
        ),
    ];
    for (pin, stage, retirement) in table {
        let got = on_builtin(&pin, now);
        assert_eq!(
            (got.stage, got.retirement, got.days_left),
            (stage, retirement, None),
            "{}",
            pin.model
        );
    }
}

#[test]
fn someone_seeing_it_gone_beats_a_date_still_ahead() {
    let feed = br#"{"us.anthropic.claude-3-5-haiku-20241022-v1:0": {
        "litellm_provider": "bedrock_converse", "deprecation_date": "2027-01-01"}}"#;
    let facts = parse_feed(feed, None).unwrap();
    let haiku = pin(
        ProviderKind::OpenAiCompatible,
        "bedrock-us",
        "us.anthropic.claude-3-5-haiku-20241022-v1:0",
    );
    let got = resolve(
        &haiku,
        builtin().iter().chain(&facts),
        noon(2026, 9, 1),
        &WINDOWS,
    );
    assert_eq!(got.stage, Stage::Retired);
    assert_eq!(got.retirement, Some(Retirement::Gone));
    assert_eq!(got.sources[1].role, Role::Differs);
}

#[test]
fn openrouter_slugs_see_their_own_rows_then_the_upstream() {
    let router = pin(
        ProviderKind::OpenRouter,
        "openrouter",
        "google/gemini-2.0-flash-001",
    );
    let got = on_builtin(&router, noon(2026, 5, 1));
    assert_eq!(got.retirement, Some(Retirement::On(date(2026, 6, 1))));
    let matched: Vec<_> = got
        .sources
        .iter()
        .map(|e| (e.matched, e.provider.as_str(), e.role))
        .collect();
    assert_eq!(
        matched,
        [
            (Match::Exact, "openrouter", Role::Decisive),
            (Match::Upstream, "gemini", Role::Agrees),
            (Match::Upstream, "gemini", Role::Agrees),
            (Match::Upstream, "gemini", Role::Superseded),
            (Match::Upstream, "gemini", Role::Superseded),
        ]
    );
    let grok = on_builtin(
        &pin(ProviderKind::OpenRouter, "openrouter", "x-ai/grok-3-mini"),
        noon(2026, 5, 1),
    );
    assert_eq!(grok.sources[0].matched, Match::Family);
}

#[test]
fn an_accepted_snapshot_speaks_when_the_alias_has_no_row() {
    let accept = ["chatgpt-alias".to_owned(), "gpt-4o-2024-05-13".to_owned()];
    let alias = PinRef {
        accept: &accept,
        ..openai("chatgpt-alias")
    };
    let got = on_builtin(&alias, noon(2026, 9, 1));
    assert_eq!(got.retirement, Some(Retirement::On(date(2026, 10, 23))));
    assert_eq!(got.sources[0].matched, Match::Accepted);
    assert_eq!(got.sources[0].model, "gpt-4o-2024-05-13");
}

#[test]
fn equal_rank_takes_the_earlier_date() {
    let row = |date: &str| {
        format!(
            "[[fact]]\nprovider = \"openai\"\nmodels = [\"m\"]\nretires = {date}\nsource = \"s{date}\"\n"
        )
    };
    let text = row("2026-12-01") + &row("2026-11-01");
    let facts = parse_feed(text.as_bytes(), None).unwrap();
    let got = resolve(&openai("m"), &facts, noon(2026, 9, 1), &WINDOWS);
    assert_eq!(got.retirement, Some(Retirement::On(date(2026, 11, 1))));
    assert_eq!(got.window, Some(WarnWindow(Duration::from_secs(90 * DAY))));
}

#[test]
fn windows_in_hours_and_serialised_evidence() {
    let sunset = sunset_header("Tue, 01 Sep 2026 20:00:00 GMT").unwrap();
    let call = openai("gpt-9");
    let facts = [sunset.fact_for(&call, noon(2026, 9, 1))];
    let windows = [Duration::from_secs(12 * 3600), Duration::from_secs(DAY)];
    let got = resolve(&call, &facts, noon(2026, 9, 1), &windows);
    assert_eq!(got.window, Some(WarnWindow(Duration::from_secs(12 * 3600))));
    let value = serde_json::to_value(&got).unwrap();
    assert_eq!(
        value,
        json!({
            "model": "gpt-9",
            "stage": "scheduled",
            "retirement": {"at": "2026-09-01T20:00:00Z"},
            "days_left": 0,
            "replacement": [],
            "window": "12h",
            "source_class": "primary",
            "sources": [{
                "role": "decisive",
                "origin": "provider",
                "provider": "openai",
                "model": "gpt-9",
                "matched": "exact",
                "retirement": {"at": "2026-09-01T20:00:00Z"},
                "announced": null,
                "captured": "2026-09-01",
                "replacement": [],
                "source": "Sunset: Tue, 01 Sep 2026 20:00:00 GMT",
                "source_class": "primary"
            }]
        })
    );
}

#[test]
fn messages_for_a_not_found_answer() {
    let now = noon(2026, 9, 1);
    let deepseek = |model| pin(ProviderKind::OpenAiCompatible, "deepseek", model);
    let table = [
        (
            on_builtin(&openai("gpt-4.5-preview"), now),
            "`gpt-4.5-preview` was retired on 2025-07-14 per deprecations.info",
        ),
        (
            on_builtin(&deepseek("deepseek-chat"), now),
            "`deepseek-chat` was retired on 2026-07-24 15:59 UTC per FlowiseAI",
        ),
        (
            on_builtin(&deepseek("deepseek-v4-flash"), now),
            "`deepseek-v4-flash` is retired (date unknown) per api-docs.deepseek.com",
        ),
        (
            on_builtin(&openai("gpt-4o"), now),
            "`gpt-4o` is scheduled to retire on 2027-01-14 per dev.to/importstatic",
        ),
        (
            on_builtin(
                &pin(ProviderKind::OpenAiCompatible, "mistral", "mistral-tiny"),
                now,
            ),
            "`mistral-tiny` is deprecated, no retirement date announced, per pydantic/genai-prices",
        ),
        (
            on_builtin(&openai("gpt-nonexistent"), now),
            "unknown model `gpt-nonexistent`: no lifecycle source lists a retirement for it",
        ),
    ];
    for (lifecycle, want) in table {
        let got = retirement_message(&lifecycle);
        assert!(got.starts_with(want), "{got}");
    }
    let retired = retirement_message(&on_builtin(&openai("gpt-4.5-preview"), now));
    assert!(retired.ends_with("; replacement: gpt-4.1"), "{retired}");
}

#[test]
fn warn_windows_print_as_written() {
    let table = [
        (Duration::from_secs(90 * DAY), "90d"),
        (Duration::from_secs(12 * 3600), "12h"),
        (Duration::from_secs(90 * 60), "90m"),
        (Duration::from_secs(45), "45s"),
        (Duration::from_millis(1500), "1500ms"),
        (Duration::ZERO, "0s"),
    ];
    for (duration, want) in table {
        assert_eq!(WarnWindow(duration).to_string(), want);
    }
}

#[test]
fn stage_names_are_their_json_form() {
    for stage in [
        Stage::NoRecord,
        Stage::Deprecated,
        Stage::Scheduled,
        Stage::Retired,
    ] {
        let json = serde_json::to_value(stage).unwrap();
        assert_eq!(json.as_str(), Some(stage.as_str()));
    }
}
