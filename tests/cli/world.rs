//! Scenario builders for the simulated providers used by the tests.

use std::collections::BTreeMap;

use modelpin::sim::scenario::{
    AnswerRule, Fault, FaultKind, Reported, Route, Scenario, SimModel, SimPrice, Tokenizer,
};

pub fn model(id: &str, chars_per_token: f64, price: (f64, f64)) -> SimModel {
    SimModel {
        id: id.to_owned(),
        tokenizer: Tokenizer {
            chars_per_token,
            overhead: 5,
        },
        answers: vec![
            AnswerRule {
                prompt_contains: "17 * 23".into(),
                answers: vec![("391".into(), 1.0)],
            },
            AnswerRule {
                prompt_contains: "Australia".into(),
                answers: vec![("Sydney".into(), 0.6), ("Melbourne".into(), 0.4)],
            },
        ],
        price: SimPrice {
            input: price.0,
            output: price.1,
        },
        latency_ms: 0,
        fingerprint: None,
        upstream: None,
        sampling_temperature: None,
    }
}

/// One requested ID served honestly by one model.
pub fn single(requested: &str, m: SimModel) -> Scenario {
    let name = m.id.clone();
    Scenario {
        models: BTreeMap::from([(name.clone(), m)]),
        routes: BTreeMap::from([(requested.to_owned(), route(&name, Reported::Honest))]),
        api_key: None,
        seed: 7,
        feeds: BTreeMap::new(),
    }
}

pub fn route(model: &str, report: Reported) -> Route {
    Route {
        model: model.to_owned(),
        report,
        faults: Vec::new(),
        shutdown_date: None,
    }
}

/// `requested` answered by `m` reporting `report`, replacing whatever was there.
pub fn reroute(mut s: Scenario, requested: &str, m: SimModel, report: Reported) -> Scenario {
    let name = m.id.clone();
    s.models.insert(name.clone(), m);
    s.routes.insert(requested.to_owned(), route(&name, report));
    s
}

/// Every request to `requested` hits `kind` (the first `first` requests when given).
pub fn fault(mut s: Scenario, requested: &str, first: Option<u32>, kind: FaultKind) -> Scenario {
    s.routes
        .get_mut(requested)
        .expect("route exists")
        .faults
        .push(Fault { first, kind });
    s
}
