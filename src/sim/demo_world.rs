//! The demo's simulated world: two Gemini-style models and the reroute between them.
//!
//! `gemini-2.5-pro` is the pinned model. On its retirement the provider routes its requests to
//! `gemini-3.8-flash`, which has another tokenizer, another price and other answers — first
//! honestly (the body names the new model), then masked (the body keeps the old ID).

use std::collections::BTreeMap;

use crate::sim::scenario::{AnswerRule, Reported, Route, Scenario, SimModel, SimPrice, Tokenizer};

pub const PINNED: &str = "gemini-2.5-pro";
pub const REPLACEMENT: &str = "gemini-3.8-flash";
pub const OPENROUTER_SLUG: &str = "google/gemini-2.5-pro";
pub const CONTROL: &str = "gpt-5.5-2026-04-23";

fn rule(prompt: &str, answers: &[(&str, f64)]) -> AnswerRule {
    AnswerRule {
        prompt_contains: prompt.to_owned(),
        answers: answers.iter().map(|(a, w)| ((*a).to_owned(), *w)).collect(),
    }
}

fn model(id: &str, tokenizer: Tokenizer, price: SimPrice, answers: Vec<AnswerRule>) -> SimModel {
    SimModel {
        id: id.to_owned(),
        tokenizer,
        answers,
        price,
        latency_ms: 5,
        fingerprint: None,
        upstream: Some("Google AI Studio".to_owned()),
        sampling_temperature: None,
    }
}

fn models() -> BTreeMap<String, SimModel> {
    let pro = model(
        PINNED,
        Tokenizer {
            chars_per_token: 4.0,
            overhead: 4,
        },
        SimPrice {
            input: 1.25,
            output: 10.0,
        },
        vec![
            rule("17 * 23", &[("391", 0.97), ("391.", 0.03)]),
            rule(
                "Australia",
                &[("Sydney", 0.6), ("Melbourne", 0.3), ("Brisbane", 0.1)],
            ),
            rule(
                "JSON",
                &[
                    ("{\"a\": 1, \"b\": 2}", 0.95),
                    ("```json\n{\"a\": 1, \"b\": 2}\n```", 0.05),
                ],
            ),
            rule(
                "autumn",
                &[
                    ("Leaves let go; the year exhales.", 0.5),
                    ("Amber light, and the maples burn.", 0.5),
                ],
            ),
        ],
    );
    let flash = model(
        REPLACEMENT,
        Tokenizer {
            chars_per_token: 3.3,
            overhead: 7,
        },
        SimPrice {
            input: 0.5,
            output: 3.0,
        },
        vec![
            rule("17 * 23", &[("391", 0.85), ("17 * 23 = 391", 0.15)]),
            rule(
                "Australia",
                &[("Sydney", 0.8), ("Melbourne", 0.15), ("Perth", 0.05)],
            ),
            rule(
                "JSON",
                &[
                    ("{\"a\":1,\"b\":2}", 0.7),
                    ("Here is the JSON: {\"a\": 1, \"b\": 2}", 0.3),
                ],
            ),
            rule("autumn", &[("Autumn leaves fall softly.", 1.0)]),
            // A smaller model leaning towards "yes": the label-balanced pair shows it.
            rule("Is 91", &[("yes", 0.6), ("no", 0.4)]),
            rule("Is 97", &[("yes", 1.0)]),
        ],
    );
    let mut control = model(
        CONTROL,
        Tokenizer {
            chars_per_token: 4.2,
            overhead: 7,
        },
        SimPrice {
            input: 5.0,
            output: 30.0,
        },
        vec![
            rule("17 * 23", &[("391", 1.0)]),
            rule("Australia", &[("Sydney", 0.7), ("Melbourne", 0.3)]),
            rule("JSON", &[("{\"a\": 1, \"b\": 2}", 1.0)]),
            rule("autumn", &[("Cold rain on red leaves.", 1.0)]),
            rule("Is 91", &[("no", 1.0)]),
            rule("Is 97", &[("yes", 1.0)]),
        ],
    );
    control.upstream = None;
    control.fingerprint = Some("fp_5e1d2c3b4a".to_owned());
    BTreeMap::from([
        (PINNED.to_owned(), pro),
        (REPLACEMENT.to_owned(), flash),
        (CONTROL.to_owned(), control),
    ])
}

fn route(model: &str, report: Reported) -> Route {
    Route {
        model: model.to_owned(),
        report,
        faults: Vec::new(),
        shutdown_date: None,
    }
}

/// Before retirement: every ID is served by its own model.
#[must_use]
pub fn before() -> Scenario {
    Scenario {
        models: models(),
        routes: BTreeMap::from([
            (PINNED.to_owned(), route(PINNED, Reported::Honest)),
            (
                OPENROUTER_SLUG.to_owned(),
                route(PINNED, Reported::Requested),
            ),
            (CONTROL.to_owned(), route(CONTROL, Reported::Honest)),
        ]),
        api_key: Some(DEMO_KEY.to_owned()),
        seed: 2026,
        feeds: BTreeMap::new(),
    }
}

/// After retirement, rerouted in the open: the body names the replacement.
#[must_use]
pub fn rerouted() -> Scenario {
    let mut s = before();
    s.routes
        .insert(PINNED.to_owned(), route(REPLACEMENT, Reported::Honest));
    s.routes.insert(
        OPENROUTER_SLUG.to_owned(),
        route(REPLACEMENT, Reported::Requested),
    );
    s
}

/// After retirement, masked: the body keeps reporting the retired ID.
#[must_use]
pub fn masked() -> Scenario {
    let mut s = rerouted();
    s.routes
        .insert(PINNED.to_owned(), route(REPLACEMENT, Reported::Requested));
    s
}

/// The key the simulated providers require; it exists only inside the demo.
pub const DEMO_KEY: &str = "demo-key-not-a-secret";
