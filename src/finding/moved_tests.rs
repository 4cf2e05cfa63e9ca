use super::*;
use crate::stats::first_token::InputShift;
use crate::stats::logprob::PromptShift;
use crate::stats::sampling::{SamplingSummary, SideSummary};
use crate::stats::{Calibration, Kernel, Rate, Similarity, StratumDistance, TestResult};

fn test(kind: TestKind, probes: &[&str], effect: Effect, rejected: bool) -> DriftTest {
    DriftTest {
        probes: probes.iter().map(|p| (*p).to_owned()).collect(),
        result: TestResult {
            test: kind,
            statistic: 1.0,
            p_value: if rejected { 1e-6 } else { 0.5 },
            calibration: Calibration::Exact,
            effect,
        },
        adjusted_p: Some(if rejected { 1e-5 } else { 1.0 }),
        rejected,
    }
}

fn pass_rate(probe: &str, then: (u64, u64), now: (u64, u64), rejected: bool) -> DriftTest {
    test(
        TestKind::PassRate,
        &[probe],
        Effect::PassRate {
            baseline: Rate::new(then.0, then.1),
            current: Rate::new(now.0, now.1),
        },
        rejected,
    )
}

fn share(answer: &str, then: (u64, u64), now: (u64, u64)) -> AnswerShare {
    AnswerShare {
        answer: answer.to_owned(),
        baseline_count: then.0,
        current_count: now.0,
        baseline_share: Some(then.0 as f64 / then.1 as f64),
        current_share: Some(now.0 as f64 / now.1 as f64),
    }
}

fn answers(probe: &str, shifted: Vec<AnswerShare>, distance: f64, rejected: bool) -> DriftTest {
    test(
        TestKind::Answers,
        &[probe],
        Effect::Answers {
            top: Vec::new(),
            categories: shifted.len(),
            shifted,
            distance,
        },
        rejected,
    )
}

fn first_tokens(prompt: &str, token: &str, then: f64, now: f64) -> DriftTest {
    test(
        TestKind::FirstTokens,
        &["first-token:0123456789ab", "first-token:ba9876543210"],
        Effect::FirstTokens {
            inputs: 2,
            informative: 2,
            moved: vec![InputShift {
                input: prompt.to_owned(),
                // The baseline's most frequent token is not the one that moved most.
                token: "Red".to_owned(),
                baseline_share: 0.45,
                current_share: 0.44,
                moved_token: token.to_owned(),
                moved_baseline_share: then,
                moved_current_share: now,
                distance: (then - now).abs(),
                baseline_n: 60,
                current_n: 32,
            }],
        },
        true,
    )
}

fn length(probe: &str, then: f64, now: f64, current_longer: f64) -> DriftTest {
    test(
        TestKind::Length,
        &[probe],
        Effect::Length {
            baseline_median: Some(then),
            current_median: Some(now),
            baseline_n: 30,
            current_n: 10,
            current_longer,
        },
        false,
    )
}

fn side(top_sampled: f64, temperature: f64) -> SideSummary {
    SideSummary {
        calls: 100,
        top_sampled,
        top_expected: 0.5,
        outside: 0.0,
        implied_temperature: temperature,
    }
}

#[test]
fn each_kind_of_test_says_what_moved() {
    let table = [
        (
            pass_rate("arith", (27, 30), (1, 10), true),
            "arith: pass rate 90 % → 10 %",
        ),
        (
            answers(
                "capital",
                vec![
                    share("Perth", (0, 30), (5, 10)),
                    share("Sydney", (18, 30), (1, 10)),
                ],
                0.5,
                true,
            ),
            r#"capital: answers changed: "Perth" 0 % → 50 %, "Sydney" 60 % → 10 %"#,
        ),
        (
            first_tokens("Name a color.", "Blue", 0.41, 0.12),
            "Name a color.: first token 'Blue' 41 % → 12 %",
        ),
        (
            first_tokens(
                "Name one of the three largest cities of Australia. Reply with the city name only.",
                " Syd",
                0.6,
                0.1,
            ),
            "Name one of the three largest cities of…: first token ' Syd' 60 % → 10 %",
        ),
        (
            length("essay", 12.0, 48.5, 0.9),
            "essay: median completion length 12 → 48.5 tokens",
        ),
        (
            test(
                TestKind::Logprobs,
                &["first-token:0123456789ab"],
                Effect::Logprobs {
                    prompts: 1,
                    compared: 1,
                    moved: vec![PromptShift {
                        prompt: "Name a fruit.".to_owned(),
                        token: "Apple".to_owned(),
                        baseline_mean: 0.5f64.ln(),
                        current_mean: 0.25f64.ln(),
                        distance: 3.0,
                    }],
                },
                true,
            ),
            "Name a fruit.: reported logprob of 'Apple' -0.69 → -1.39 (probability 50 % → 25 %)",
        ),
        (
            test(
                TestKind::Sampling,
                &["first-token:0123456789ab"],
                Effect::Sampling(SamplingSummary {
                    baseline: side(0.5, 1.0),
                    current: side(0.8, 0.5),
                }),
                true,
            ),
            "sampling: the most probable token drawn in 50 % → 80 % of calls (the reported probabilities say 50 % → 50 %; like temperature 1.00 → 0.50)",
        ),
        (
            test(
                TestKind::Mmd,
                &["arith", "capital"],
                Effect::Text {
                    kernel: Kernel::DEFAULT,
                    strata: vec![StratumDistance {
                        id: "capital".to_owned(),
                        baseline_n: 30,
                        current_n: 10,
                        statistic: 0.2,
                        standardized: 5.0,
                        similarity: vec![Similarity {
                            kernel: "hamming",
                            within_baseline: Some(0.8),
                            within_current: Some(0.9),
                            across: Some(0.3),
                        }],
                    }],
                },
                true,
            ),
            "capital: answer texts 30 % alike to the baseline's, which are 80 % alike among themselves",
        ),
    ];
    for (t, want) in table {
        assert_eq!(line(&t).as_deref(), Some(want), "{:?}", t.result.test);
    }
}

#[test]
fn a_tier_test_never_names_its_inputs_by_hash() {
    let t = first_tokens("Name a color.", "Blue", 0.41, 0.12);
    for l in lines(&verdict(vec![t.clone()])) {
        assert!(!l.contains("first-token:"), "{l}");
    }
    assert_eq!(probes_named(&t), "2 border inputs");
    // With nothing in its effect, a rejected tier test still says what it is, by count.
    let mut empty = t;
    empty.result.effect = Effect::FirstTokens {
        inputs: 2,
        informative: 0,
        moved: Vec::new(),
    };
    assert_eq!(
        lines(&verdict(vec![empty])),
        ["2 border inputs: first tokens shifted"]
    );
}

pub(super) fn verdict(tests: Vec<DriftTest>) -> DriftVerdict {
    DriftVerdict {
        alpha: 0.001,
        seed: 7,
        drift: tests.iter().any(|t| t.rejected),
        tests,
        skipped: Vec::new(),
        subsampled: Vec::new(),
    }
}

#[test]
fn rejected_tests_come_first_then_the_three_quiet_tests_that_moved_most() {
    let v = verdict(vec![
        length("a", 10.0, 11.0, 0.55),
        pass_rate("arith", (27, 30), (1, 10), true),
        pass_rate("b", (30, 30), (8, 10), false),
        // Nothing moved: never listed.
        pass_rate("still", (10, 10), (10, 10), false),
        answers(
            "capital",
            vec![share("Perth", (0, 30), (3, 10))],
            0.3,
            false,
        ),
        length("c", 10.0, 30.0, 0.95),
    ]);
    assert_eq!(
        lines(&v),
        [
            "arith: pass rate 90 % → 10 %",
            "not significant: c: median completion length 10 → 30 tokens",
            r#"not significant: capital: answers changed: "Perth" 0 % → 30 %"#,
            "not significant: b: pass rate 100 % → 80 %",
        ]
    );
}

#[test]
fn every_rejected_test_has_its_line_and_the_headline_names_the_first() {
    let v = verdict(vec![
        pass_rate("arith", (27, 30), (1, 10), true),
        answers(
            "capital",
            vec![
                share("Sydney", (18, 30), (1, 10)),
                share("Perth", (0, 30), (5, 10)),
            ],
            0.5,
            true,
        ),
    ]);
    assert_eq!(
        lines(&v),
        [
            "arith: pass rate 90 % → 10 %",
            r#"capital: answers changed: "Sydney" 60 % → 10 %, "Perth" 0 % → 50 %"#,
        ]
    );
    let evidence = crate::finding::Evidence::BehaviorDrift(Box::new(v));
    let message = evidence.message();
    assert!(
        message.starts_with(
            "the answers changed: arith: pass rate 90 % → 10 % (the pass rate dropped; p = "
        ),
        "{message}"
    );
    assert!(message.ends_with("; 1 more test rejected)"), "{message}");
    let json = evidence.to_json();
    assert_eq!(json["what_moved"][0], "arith: pass rate 90 % → 10 %");
    assert!(
        json["tests"].is_array(),
        "the verdict's fields stay: {json}"
    );
}

#[test]
fn hostile_provider_text_stays_escaped_and_bounded() {
    let hostile = [
        "Sydney\n::error::pwned",
        "abc\u{202e}fed",
        "\u{1b}[31mred\u{7}",
        "zero\u{200b}width",
        "say \"hi\" 'there'",
    ];
    for answer in hostile {
        let long = format!("{answer}{}", "x".repeat(10_000));
        for text in [answer, long.as_str()] {
            let lines = [
                line(&answers(
                    "capital",
                    vec![share(text, (0, 30), (5, 10))],
                    0.5,
                    true,
                ))
                .unwrap(),
                line(&first_tokens(text, text, 0.5, 0.1)).unwrap(),
            ];
            for l in lines {
                assert!(
                    !l.chars().any(crate::text::needs_escape),
                    "raw control or bidi character in {l:?}"
                );
                assert!(
                    l.chars().count() < 200,
                    "{} chars: {l:?}",
                    l.chars().count()
                );
            }
        }
    }
    let l = line(&answers(
        "capital",
        vec![share("Sydney\n::error::x\u{202e}", (0, 30), (5, 10))],
        0.5,
        true,
    ))
    .unwrap();
    assert_eq!(
        l,
        r#"capital: answers changed: "Sydney\n::error::x\u{202e}" 0 % → 50 %"#
    );
    // A quote mark cannot close the quote from inside.
    let l = line(&first_tokens("Name a color.", "it's", 0.5, 0.1)).unwrap();
    assert_eq!(l, r"Name a color.: first token 'it\'s' 50 % → 10 %");
    // Long answers are cut with a hash of the whole, so two long answers stay distinct.
    let a = "a".repeat(100);
    let b = format!("{}b", "a".repeat(99));
    let cut = |t: &str| line(&answers("p", vec![share(t, (0, 30), (5, 10))], 0.5, true)).unwrap();
    assert_ne!(cut(&a), cut(&b));
    assert!(cut(&a).contains("…#"), "{}", cut(&a));
}

#[test]
fn a_prompt_is_cut_to_its_bound_never_mid_escape_raw() {
    let l = line(&first_tokens(
        "Name a colour\u{202e} and then write a very long essay about it",
        "Blue",
        0.4,
        0.1,
    ))
    .unwrap();
    let (prompt, _) = l.split_once(": first token").unwrap();
    assert!(prompt.chars().count() <= PROMPT_CHARS, "{prompt}");
    assert!(
        prompt.ends_with('…') && prompt.contains("\\u{202e}"),
        "{prompt}"
    );
}

/// A backslash in an answer cannot fake a closed quote or an escape of ours.
#[test]
fn backslashes_in_provider_text_are_paired_so_quotes_and_escapes_cannot_be_faked() {
    let table = [
        ("Paris\\", "\"Paris\\\\\""),
        (
            "x\\\" 90 % → 0 %, \\\"y",
            "\"x\\\\\\\" 90 % → 0 %, \\\\\\\"y\"",
        ),
        // The six characters `\u{202e}` and a real U+202E read differently.
        ("\\u{202e}", "\"\\\\u{202e}\""),
        ("\u{202e}", "\"\\u{202e}\""),
    ];
    for (answer, shown) in table {
        assert_eq!(quoted(answer, '"'), shown, "{answer:?}");
    }
}
