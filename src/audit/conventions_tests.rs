//! The `top_logprobs` conventions of real stacks, through the real parser and the tier: each
//! convention locked and audited on an unchanged provider raises false alarms at the level only,
//! a lowered temperature is still seen, and replies that are no distribution are no evidence.
//!
//! Conventions, as documented or recorded:
//! - OpenAI: exactly the top k; the returned token's own `logprob` beside them, and it may be
//!   outside them ("the most likely tokens ... at this token position"; "in rare cases, there
//!   may be fewer than the number of requested top_logprobs returned": the chat completions API
//!   reference, `logprobs.content[].top_logprobs`).
//! - llama.cpp (llama-cpp-python 0.3.36's server, recorded in
//!   `tests/fixtures/real/llama-cpp/`): the top k, with the sampled token appended as a
//!   k + 1-th entry when it is not among them.
//! - the sampled token in place of the k-th entry; fewer entries than asked; `logprobs: null`
//!   on some calls only; logprobs reported after the provider's own temperature.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::audit::{CallKind, CallRecord, CallResult};
use crate::provider::{Parsed, RawResponse, parse_reply};
use crate::stats::rng::Rng;

/// How a provider lists `top_logprobs` when asked for `TOP_LOGPROBS`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Convention {
    OpenAi,
    LlamaCpp,
    SampledReplacesLast,
    Fewer(usize),
    /// `logprobs: null` on one call in `n`.
    NullSometimes(u64),
    /// Samples and reports at its own temperature.
    AfterTemperature(f64),
}

/// An input's model distribution over 14 tokens, most probable first.
fn model(input: usize) -> Vec<(String, f64)> {
    let weights: Vec<f64> = (0..14u8)
        .map(|i| (-f64::from(i) * (0.35 + 0.15 * input as f64)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    weights
        .iter()
        .enumerate()
        .map(|(i, w)| (format!("t{input}-{i}"), (w / total).ln()))
        .collect()
}

/// The distribution at temperature `t`, as logprobs.
fn tempered(dist: &[(String, f64)], t: f64) -> Vec<(String, f64)> {
    let w: Vec<f64> = dist.iter().map(|(_, lp)| (lp / t).exp()).collect();
    let total: f64 = w.iter().sum();
    dist.iter()
        .zip(w)
        .map(|((tok, _), w)| (tok.clone(), (w / total).ln()))
        .collect()
}

fn draw(rng: &mut Rng, dist: &[(String, f64)]) -> usize {
    let mut u = rng.next_f64();
    for (i, (_, lp)) in dist.iter().enumerate() {
        let p = lp.exp();
        if u < p {
            return i;
        }
        u -= p;
    }
    dist.len() - 1
}

/// The chat completions body a provider of `convention` sends for one call that sampled
/// `sampled` from `reported`.
fn body(convention: Convention, reported: &[(String, f64)], sampled: usize, call: u64) -> Value {
    let k = usize::from(TOP_LOGPROBS);
    let entry = |i: usize| json!({"token": reported[i].0, "logprob": reported[i].1, "bytes": null});
    let listed: Vec<Value> = match convention {
        Convention::OpenAi | Convention::AfterTemperature(_) | Convention::NullSometimes(_) => {
            (0..k).map(entry).collect()
        }
        Convention::LlamaCpp => {
            let mut l: Vec<Value> = (0..k).map(entry).collect();
            if sampled >= k {
                l.push(entry(sampled));
            }
            l
        }
        Convention::SampledReplacesLast => {
            let mut l: Vec<Value> = (0..k - 1).map(entry).collect();
            l.push(entry(if sampled >= k - 1 { sampled } else { k - 1 }));
            l
        }
        Convention::Fewer(n) => (0..n).map(entry).collect(),
    };
    let logprobs = match convention {
        Convention::NullSometimes(n) if call.is_multiple_of(n) => Value::Null,
        _ => json!({"content": [{
            "token": reported[sampled].0,
            "logprob": reported[sampled].1,
            "bytes": null,
            "top_logprobs": listed,
        }]}),
    };
    json!({
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reported[sampled].0},
                     "logprobs": logprobs, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
    })
}

fn parsed(body: &Value) -> Reply {
    let raw = RawResponse {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    };
    match parse_reply(ProviderKind::OpenAi, &raw) {
        Parsed::Reply(reply) => reply,
        other => panic!("{other:?}"),
    }
}

/// A provider of `convention` sampling at `temperature` (times its own, for
/// `AfterTemperature`), answering `samples` calls per input; replies through the real parser.
struct Provider {
    convention: Convention,
    inputs: Vec<(Probe, Vec<(String, f64)>)>,
    calls: u64,
}

impl Provider {
    fn new(convention: Convention, inputs: usize) -> Provider {
        let inputs = (0..inputs)
            .map(|i| (tier_probe(None, &format!("input {i}")), model(i)))
            .collect();
        Provider {
            convention,
            inputs,
            calls: 0,
        }
    }

    fn answer(&mut self, rng: &mut Rng, temperature: f64, samples: u32) -> Observation {
        let own = match self.convention {
            Convention::AfterTemperature(t) => t,
            _ => 1.0,
        };
        let mut records = Vec::new();
        let mut cache: BTreeMap<(usize, usize, bool), Reply> = BTreeMap::new();
        for (n, (probe, dist)) in self.inputs.iter().enumerate() {
            // What the provider reports: the model's distribution, or after its temperature.
            let reported = tempered(dist, own);
            let sampling = tempered(dist, own * temperature);
            for sample in 0..samples {
                self.calls += 1;
                let drawn = draw(rng, &sampling);
                let null = matches!(self.convention, Convention::NullSometimes(k) if self.calls.is_multiple_of(k));
                let reply = cache
                    .entry((n, drawn, null))
                    .or_insert_with(|| parsed(&body(self.convention, &reported, drawn, self.calls)))
                    .clone();
                records.push(CallRecord {
                    probe: probe.id.clone(),
                    kind: CallKind::Tier,
                    sample,
                    result: CallResult::Reply(reply),
                    latency: Duration::ZERO,
                    attempts: 1,
                    waits: Vec::new(),
                    stopped: None,
                });
            }
        }
        Observation::complete("pin", records)
    }

    fn found(&self) -> Found {
        Found {
            kept: self.inputs.iter().map(|(p, _)| p.clone()).collect(),
            logprobs: true,
            no_inputs: None,
            no_logprobs: None,
            discovery: Discovery {
                candidates: self.inputs.len() as u32,
                calls: 0,
            },
        }
    }
}

const CONVENTIONS: [Convention; 6] = [
    Convention::OpenAi,
    Convention::LlamaCpp,
    Convention::SampledReplacesLast,
    Convention::Fewer(5),
    Convention::NullSometimes(20),
    Convention::AfterTemperature(0.8),
];

/// One lock and one audit: the tests the audit ran, whether its logprobs fell short, and how
/// many tests the lock's self-check switched off.
fn lock_and_audit(
    convention: Convention,
    seed: u64,
    temperature: f64,
) -> (Vec<TierTest>, bool, usize) {
    let mut rng = Rng::new(seed);
    let mut provider = Provider::new(convention, 4);
    let baseline = provider.answer(&mut rng, 1.0, BASELINE_SAMPLES);
    let tier = record(&provider.found(), &baseline, 0.001).expect("recorded");
    let now = provider.answer(
        &mut rng,
        temperature,
        crate::config::DEFAULT_FIRST_TOKEN_SAMPLES,
    );
    let short = Testimonies::of(now.replies().map(|(_, r)| r), tier.top_logprobs).short();
    (
        tests(&tier, &now, PermutationBudget::CLASSIC, seed),
        short,
        tier.off.len(),
    )
}

#[test]
fn every_convention_on_an_unchanged_provider_raises_false_alarms_at_the_level_only() {
    let runs = 100u32;
    let mut off = 0;
    for convention in CONVENTIONS {
        let mut hits: BTreeMap<&str, (usize, u32)> = BTreeMap::new();
        for seed in 0..runs {
            let (tests, short, switched) = lock_and_audit(convention, u64::from(seed), 1.0);
            assert!(!short, "{convention:?}: its logprobs testify");
            assert_eq!(tests.len() + switched, 3, "{convention:?}");
            off += switched;
            for t in tests {
                let (n, of) = hits.entry(t.result.test.as_str()).or_default();
                *n += usize::from(t.result.p_value <= 0.05);
                *of += 1;
            }
        }
        for (test, (n, of)) in hits {
            let rate = n as f64 / f64::from(of);
            // Three binomial standard errors above the level.
            assert!(
                rate <= 0.05 + 3.0 * (0.05f64 * 0.95 / f64::from(of)).sqrt(),
                "{convention:?} {test}: {n} of {of}"
            );
        }
    }
    // The lock's self-check rejects an unchanged provider at its level (0.001 per test): of
    // 1,800 tests, a handful at most.
    assert!(off <= 6, "{off} tests switched off");
}

#[test]
fn every_convention_still_shows_a_lowered_temperature() {
    for convention in CONVENTIONS {
        let seen = (0..10u64)
            .filter(|&seed| {
                let (tests, _, _) = lock_and_audit(convention, seed, 0.5);
                tests
                    .iter()
                    .any(|t| t.result.test == TestKind::Sampling && t.result.p_value <= 0.001)
            })
            .count();
        assert!(seen >= 9, "{convention:?}: {seen} of 10");
    }
}

#[test]
fn recorded_llama_cpp_replies_are_read_alike_whether_the_sampled_token_was_appended() {
    let read = |name: &str| {
        let body: Value =
            serde_json::from_slice(&crate::fixtures::read(&format!("llama-cpp/{name}.json")))
                .unwrap();
        parsed(&body)
    };
    let appended = read("chat-top-logprobs-sampled-appended");
    let top10 = read("chat-top-logprobs-top10");
    let t = appended.first_token.as_deref().unwrap();
    assert_eq!(
        (t.listed, t.top.len(), t.sampled.as_str()),
        (11, 11, "Together")
    );
    let Testimony::Usable(a) = testimony(Some(t), TOP_LOGPROBS) else {
        panic!("{t:?}")
    };
    let Testimony::Usable(b) = testimony(top10.first_token.as_deref(), TOP_LOGPROBS) else {
        panic!()
    };
    // The same nine tested tokens with the same numbers; the appended draw is "outside".
    assert_eq!(a.top.len(), 9);
    assert_eq!(a.top, b.top);
    assert_eq!(a.sampled, None);
    assert_eq!(b.sampled, Some(2), "\"I\" is third");
}

/// A reply edited one way, and the flaw it must be read with.
type Case = (&'static str, Box<dyn Fn(&mut Value)>, Option<Flaw>);

#[test]
fn replies_that_are_no_distribution_are_no_evidence_and_say_why() {
    let k = usize::from(TOP_LOGPROBS);
    let dist = model(0);
    let base = body(Convention::OpenAi, &dist, 0, 1);
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut b = base.clone();
        edit(&mut b["choices"][0]["logprobs"]["content"][0]);
        testimony(parsed(&b).first_token.as_deref(), TOP_LOGPROBS)
    };
    let table: [Case; 8] = [
        ("as sent", Box::new(|_| {}), None),
        (
            "rounding above 0 reads as 0",
            Box::new(|c| {
                c["logprob"] = json!(3e-7);
                c["top_logprobs"] = json!([
                    {"token": c["token"].clone(), "logprob": 3e-7},
                    {"token": "other", "logprob": -16.0},
                ]);
            }),
            None,
        ),
        (
            "not a number",
            Box::new(|c| c["top_logprobs"][3]["logprob"] = json!("NaN")),
            Some(Flaw::NotANumber),
        ),
        (
            "above 0",
            Box::new(|c| c["top_logprobs"][2]["logprob"] = json!(0.7)),
            Some(Flaw::AboveZero),
        ),
        (
            "a token twice",
            Box::new(|c| c["top_logprobs"][4]["token"] = c["top_logprobs"][1]["token"].clone()),
            Some(Flaw::Repeated),
        ),
        (
            "two entries beyond those asked",
            Box::new(move |c| {
                let extra: Vec<Value> = (k..k + 2)
                    .map(|i| json!({"token": format!("x{i}"), "logprob": -20.0}))
                    .collect();
                c["top_logprobs"].as_array_mut().unwrap().extend(extra);
            }),
            Some(Flaw::MoreThanAsked),
        ),
        (
            "the returned token's own logprob disagrees",
            Box::new(|c| c["logprob"] = json!(-0.01)),
            Some(Flaw::SampledDisagrees),
        ),
        (
            "probabilities adding up to more than 1",
            Box::new(|c| {
                c["logprob"] = json!(-0.5);
                for e in c["top_logprobs"].as_array_mut().unwrap() {
                    e["logprob"] = json!(-0.5);
                }
            }),
            Some(Flaw::NotADistribution),
        ),
    ];
    for (case, edit, flaw) in table {
        match (with(&*edit), flaw) {
            (Testimony::Usable(_), None) => {}
            (Testimony::Flawed(got), Some(want)) => assert_eq!(got, want, "{case}"),
            (got, want) => panic!("{case}: {got:?}, wanted {want:?}"),
        }
    }
    // An extra entry that is not the returned token is not llama.cpp's appended one.
    let mut b = base.clone();
    b["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"token": "zz", "logprob": -30.0}));
    assert_eq!(
        testimony(parsed(&b).first_token.as_deref(), TOP_LOGPROBS),
        Testimony::Flawed(Flaw::MoreThanAsked)
    );
}

#[test]
fn a_tier_whose_calls_are_no_distribution_is_short_with_the_reason() {
    let dist = model(1);
    let mut bad = body(Convention::OpenAi, &dist, 0, 1);
    bad["choices"][0]["logprobs"]["content"][0]["top_logprobs"][2]["logprob"] = json!(0.7);
    let good = parsed(&body(Convention::OpenAi, &dist, 0, 1));
    let bad = parsed(&bad);
    let replies: Vec<&Reply> = std::iter::repeat_n(&good, 8)
        .chain(std::iter::repeat_n(&bad, 2))
        .collect();
    let counts = Testimonies::of(replies.into_iter(), TOP_LOGPROBS);
    assert_eq!((counts.calls, counts.usable), (10, 8));
    assert!(counts.short());
    assert_eq!(
        counts.why_short().unwrap(),
        "the provider's logprobs are no distribution on 2 of 10 calls: a logprob above 0 (2)"
    );
}
