//! Runtime switches for a running simulator: `POST /_sim/{swap,mask,retire,slow,fail,reset}`.
//!
//! `modelpin demo --serve` keeps the simulator up so a user can go on trying `check`, `daemon`
//! and alerts; these switches change what one requested ID does from a second terminal with
//! nothing but curl. They never describe a world of their own: each switch is a per-ID state
//! (`IdState`), and the scenario the server plays is rebuilt from the scenario it started with
//! plus those states, with the scenario types every other caller uses (routes, `Reported`,
//! faults, model latency).
//!
//! Everything a request carries is validated before anything changes: a bounded query, known
//! parameters only, a requested ID the starting scenario routes, a simulated model name, a
//! latency and a status from short lists. A refusal says what would have been accepted.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::sim::scenario::{Fault, FaultKind, Reported, Scenario, SimError};

/// The path every switch lives under.
pub const PREFIX: &str = "/_sim";

/// The switch names, as the URL spells them.
pub const ACTIONS: [&str; 6] = ["swap", "mask", "retire", "slow", "fail", "reset"];

/// A longer query is refused unread: the longest valid one is well under this.
const MAX_QUERY: usize = 1024;

/// The latency `slow` sets without `ms=`: past the demo's 5 s timeout, so `check` reports the
/// pin unresponsive rather than merely slower.
pub const DEFAULT_SLOW_MS: u64 = 6000;

/// The longest latency `slow` accepts: a minute keeps a forgotten switch from holding clients.
const MAX_SLOW_MS: u64 = 60_000;

/// The statuses `fail` can answer with, and the simulated error class of each.
const FAIL_STATUSES: [(u16, SimError); 3] = [
    (500, SimError::Server),
    (429, SimError::RateLimited),
    (503, SimError::Overloaded),
];

/// What a `/_sim` request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `GET /_sim`: the current state.
    Show,
    /// `POST /_sim/ACTION`: change the state.
    Switch(Switch),
}

/// One switch, its parameters checked; the IDs it names are checked against the scenario by
/// `Controls::apply`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    /// Another model answers `model` and names itself in the body.
    Swap { model: String, to: Option<String> },
    /// Another model answers `model` behind the requested ID.
    Mask { model: String, to: Option<String> },
    /// `model` answers the provider's "model not found".
    Retire { model: String },
    /// `model` (every ID when `None`) answers after `ms` milliseconds.
    Slow { model: Option<String>, ms: u64 },
    /// `model` (every ID when `None`) answers every call with `status`.
    Fail { model: Option<String>, status: u16 },
    /// `model` (every ID when `None`) back as the simulator started.
    Reset { model: Option<String> },
}

/// A refused control request: the HTTP status and a message saying what would be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

impl Refusal {
    fn new(status: u16, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
        }
    }

    fn bad(message: impl Into<String>) -> Refusal {
        Refusal::new(400, message)
    }
}

/// Reads a request under `PREFIX` into a command; `path` is the whole URL path.
pub fn parse(method: &str, path: &str, query: Option<&str>) -> Result<Command, Refusal> {
    let rest = path.strip_prefix(PREFIX).unwrap_or(path);
    let action = rest.trim_start_matches('/').trim_end_matches('/');
    let query = query.unwrap_or_default();
    if query.len() > MAX_QUERY {
        return Err(Refusal::bad(format!(
            "the query is {} bytes; switches take at most {MAX_QUERY}",
            query.len()
        )));
    }
    if action.is_empty() {
        return match method {
            "GET" => {
                params(query, &[])?;
                Ok(Command::Show)
            }
            _ => Err(Refusal::new(
                405,
                format!("GET {PREFIX} shows the state; switches are POST {PREFIX}/ACTION"),
            )),
        };
    }
    if !ACTIONS.contains(&action) {
        return Err(Refusal::new(
            404,
            format!(
                "no switch `{action}`; the switches are {}",
                ACTIONS.join(", ")
            ),
        ));
    }
    if method != "POST" {
        return Err(Refusal::new(
            405,
            format!(
                "switches change state: use POST, e.g. curl -X POST '…{PREFIX}/{action}?model=ID'"
            ),
        ));
    }
    switch(action, query).map(Command::Switch)
}

/// The switch named `action` with its parameters from `query`.
fn switch(action: &str, query: &str) -> Result<Switch, Refusal> {
    let required = |p: &mut Params, what: &str| {
        p.remove("model").ok_or_else(|| {
            Refusal::bad(format!(
                "{action} needs model=ID: the requested model ID to {what}"
            ))
        })
    };
    Ok(match action {
        "swap" => {
            let mut p = params(query, &["model", "to"])?;
            Switch::Swap {
                model: required(&mut p, "swap")?,
                to: p.remove("to"),
            }
        }
        "mask" => {
            let mut p = params(query, &["model", "to"])?;
            Switch::Mask {
                model: required(&mut p, "mask")?,
                to: p.remove("to"),
            }
        }
        "retire" => Switch::Retire {
            model: required(&mut params(query, &["model"])?, "retire")?,
        },
        "slow" => {
            let mut p = params(query, &["model", "ms"])?;
            let ms = p
                .remove("ms")
                .map_or(Ok(DEFAULT_SLOW_MS), |v| latency(&v))?;
            Switch::Slow {
                model: p.remove("model"),
                ms,
            }
        }
        "fail" => {
            let mut p = params(query, &["model", "status"])?;
            let status = p.remove("status").map_or(Ok(500), |v| fail_status(&v))?;
            Switch::Fail {
                model: p.remove("model"),
                status,
            }
        }
        _ => Switch::Reset {
            model: params(query, &["model"])?.remove("model"),
        },
    })
}

type Params = BTreeMap<String, String>;

/// The query's parameters, refusing names outside `allowed`, repeats and empty values.
fn params(query: &str, allowed: &[&str]) -> Result<Params, Refusal> {
    let mut found = Params::new();
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if !allowed.contains(&name.as_ref()) {
            let accepted = if allowed.is_empty() {
                "none".to_owned()
            } else {
                allowed.join(", ")
            };
            return Err(Refusal::bad(format!(
                "unknown parameter `{name}`; this switch takes: {accepted}"
            )));
        }
        if value.trim().is_empty() {
            return Err(Refusal::bad(format!("{name}= is empty")));
        }
        if found
            .insert(name.clone().into_owned(), value.into_owned())
            .is_some()
        {
            return Err(Refusal::bad(format!("{name}= is given twice")));
        }
    }
    Ok(found)
}

/// `ms=`: whole milliseconds, 1 to `MAX_SLOW_MS`.
fn latency(text: &str) -> Result<u64, Refusal> {
    text.parse::<u64>()
        .ok()
        .filter(|ms| (1..=MAX_SLOW_MS).contains(ms))
        .ok_or_else(|| {
            Refusal::bad(format!(
                "ms={text} is not a latency; give whole milliseconds from 1 to {MAX_SLOW_MS}"
            ))
        })
}

/// `status=`: one of `FAIL_STATUSES`.
fn fail_status(text: &str) -> Result<u16, Refusal> {
    let known = || FAIL_STATUSES.iter().map(|(s, _)| s.to_string());
    text.parse::<u16>()
        .ok()
        .filter(|s| FAIL_STATUSES.iter().any(|(k, _)| k == s))
        .ok_or_else(|| {
            Refusal::bad(format!(
                "status={text} is not one fail can answer; give one of {}",
                known().collect::<Vec<_>>().join(", ")
            ))
        })
}

/// Which model answers an ID, and under which name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "serving", content = "by")]
pub enum Serving {
    /// As the simulator started.
    #[default]
    AsStarted,
    /// Another model, named in the body.
    Swapped(String),
    /// Another model, behind the requested ID.
    Masked(String),
    /// Not at all: "model not found".
    Retired,
}

/// What the switches did to one requested ID.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IdState {
    #[serde(flatten)]
    pub serving: Serving,
    /// Latency set by `slow`.
    pub slow_ms: Option<u64>,
    /// Status set by `fail`.
    pub fail_status: Option<u16>,
}

/// The scenario the simulator started with and every ID's switches.
#[derive(Debug, Clone)]
pub struct Controls {
    start: Scenario,
    ids: BTreeMap<String, IdState>,
}

/// `GET /_sim`: every ID's state and what a switch may name.
#[derive(Debug, Serialize)]
pub struct Shown<'a> {
    /// Requested ID → its switches.
    pub ids: &'a BTreeMap<String, IdState>,
    /// Simulated models a `swap`/`mask` may name with `to=`.
    pub models: Vec<&'a str>,
    pub switches: String,
}

impl Controls {
    /// Switches over `start`, every ID as it is there.
    #[must_use]
    pub fn new(start: Scenario) -> Controls {
        let ids = start
            .routes
            .keys()
            .map(|id| (id.clone(), IdState::default()))
            .collect();
        Controls { start, ids }
    }

    /// The current state, for `GET /_sim` and the answer to every switch.
    #[must_use]
    pub fn shown(&self) -> Shown<'_> {
        Shown {
            ids: &self.ids,
            models: self.start.models.keys().map(String::as_str).collect(),
            switches: format!(
                "POST {PREFIX}/{{{}}}?model=ID (swap/mask: to=MODEL; slow: ms=N; fail: status=500|429|503)",
                ACTIONS.join(",")
            ),
        }
    }

    /// Applies `switch`, or refuses it leaving every state as it was.
    pub fn apply(&mut self, switch: &Switch) -> Result<(), Refusal> {
        match switch {
            Switch::Swap { model, to } => {
                let to = self.replacement(model, to.as_deref())?;
                self.id(model)?.serving = Serving::Swapped(to);
            }
            Switch::Mask { model, to } => {
                let to = self.replacement(model, to.as_deref())?;
                self.id(model)?.serving = Serving::Masked(to);
            }
            Switch::Retire { model } => self.id(model)?.serving = Serving::Retired,
            Switch::Slow { model, ms } => {
                for state in self.ids_or_all(model.as_deref())? {
                    state.slow_ms = Some(*ms);
                }
            }
            Switch::Fail { model, status } => {
                for state in self.ids_or_all(model.as_deref())? {
                    state.fail_status = Some(*status);
                }
            }
            Switch::Reset { model } => {
                for state in self.ids_or_all(model.as_deref())? {
                    *state = IdState::default();
                }
            }
        }
        Ok(())
    }

    /// The state of one requested ID, or a refusal listing the IDs there are.
    fn id(&mut self, model: &str) -> Result<&mut IdState, Refusal> {
        let known = self.known_ids();
        self.ids.get_mut(model).ok_or_else(|| {
            Refusal::bad(format!(
                "unknown model `{model}`; the simulated IDs are: {known}"
            ))
        })
    }

    /// One ID's state, or every ID's when `model` is `None`.
    fn ids_or_all(&mut self, model: Option<&str>) -> Result<Vec<&mut IdState>, Refusal> {
        match model {
            Some(model) => Ok(vec![self.id(model)?]),
            None => Ok(self.ids.values_mut().collect()),
        }
    }

    fn known_ids(&self) -> String {
        self.ids
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The model a swap of `id` routes to: `to` when it names another simulated model, else the
    /// first simulated model that did not serve `id` at the start.
    fn replacement(&self, id: &str, to: Option<&str>) -> Result<String, Refusal> {
        let Some(route) = self.start.routes.get(id) else {
            return Err(Refusal::bad(format!(
                "unknown model `{id}`; the simulated IDs are: {}",
                self.known_ids()
            )));
        };
        let models = || {
            self.start
                .models
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match to {
            Some(to) if to == route.model => Err(Refusal::bad(format!(
                "`{to}` already serves `{id}`; name another with to=: {}",
                models()
            ))),
            Some(to) if self.start.models.contains_key(to) => Ok(to.to_owned()),
            Some(to) => Err(Refusal::bad(format!(
                "unknown simulated model `{to}`; to= takes one of: {}",
                models()
            ))),
            None => self
                .start
                .models
                .keys()
                .find(|name| **name != route.model)
                .cloned()
                .ok_or_else(|| Refusal::bad("the scenario has no other model to swap to")),
        }
    }

    /// The scenario the server plays: the starting one with every ID's switches applied.
    #[must_use]
    pub fn scenario(&self) -> Scenario {
        let mut scenario = self.start.clone();
        for (id, state) in &self.ids {
            let Some(mut route) = self.start.routes.get(id).cloned() else {
                continue;
            };
            match &state.serving {
                Serving::AsStarted => {}
                Serving::Swapped(to) => {
                    route.model.clone_from(to);
                    route.report = Reported::Honest;
                }
                Serving::Masked(to) => {
                    route.model.clone_from(to);
                    route.report = Reported::Requested;
                }
                Serving::Retired => {
                    scenario.routes.remove(id);
                    continue;
                }
            }
            if let Some(ms) = state.slow_ms {
                route.model = slowed(&mut scenario, &route.model, ms);
            }
            if let Some(status) = state.fail_status {
                let class = FAIL_STATUSES
                    .iter()
                    .find(|(s, _)| *s == status)
                    .map_or(SimError::Server, |(_, class)| *class);
                route.faults = vec![Fault {
                    first: None,
                    kind: FaultKind::Error {
                        class,
                        headers: Vec::new(),
                    },
                }];
            }
            scenario.routes.insert(id.clone(), route);
        }
        scenario
    }
}

/// A copy of simulated model `name` answering after `ms`, added to `scenario`; its name. Latency
/// belongs to a model, and a copy slows one ID without slowing the others that model serves.
fn slowed(scenario: &mut Scenario, name: &str, ms: u64) -> String {
    let slow_name = format!("{name}@{ms}ms");
    if let Some(mut model) = scenario.models.get(name).cloned() {
        model.latency_ms = ms;
        scenario.models.insert(slow_name.clone(), model);
        slow_name
    } else {
        name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::demo_world::{self, CONTROL, OPENROUTER_SLUG, PINNED, REPLACEMENT};

    fn switch(action: &str, query: &str) -> Result<Switch, Refusal> {
        match parse("POST", &format!("/_sim/{action}"), Some(query))? {
            Command::Switch(s) => Ok(s),
            Command::Show => panic!("a POST to an action is a switch"),
        }
    }

    #[test]
    fn parses_every_switch_and_refuses_what_it_cannot_use() {
        let id = || PINNED.to_owned();
        let table: Vec<(&str, &str, Result<Switch, u16>)> = vec![
            (
                "swap",
                "model=gemini-2.5-pro",
                Ok(Switch::Swap {
                    model: id(),
                    to: None,
                }),
            ),
            (
                "swap",
                "model=gemini-2.5-pro&to=gemini-3.8-flash",
                Ok(Switch::Swap {
                    model: id(),
                    to: Some(REPLACEMENT.to_owned()),
                }),
            ),
            (
                "mask",
                "model=gemini-2.5-pro",
                Ok(Switch::Mask {
                    model: id(),
                    to: None,
                }),
            ),
            (
                "retire",
                "model=gemini-2.5-pro",
                Ok(Switch::Retire { model: id() }),
            ),
            (
                "retire",
                "model=google%2Fgemini-2.5-pro",
                Ok(Switch::Retire {
                    model: OPENROUTER_SLUG.to_owned(),
                }),
            ),
            (
                "slow",
                "",
                Ok(Switch::Slow {
                    model: None,
                    ms: DEFAULT_SLOW_MS,
                }),
            ),
            (
                "slow",
                "model=gemini-2.5-pro&ms=250",
                Ok(Switch::Slow {
                    model: Some(id()),
                    ms: 250,
                }),
            ),
            (
                "fail",
                "",
                Ok(Switch::Fail {
                    model: None,
                    status: 500,
                }),
            ),
            (
                "fail",
                "status=429",
                Ok(Switch::Fail {
                    model: None,
                    status: 429,
                }),
            ),
            ("reset", "", Ok(Switch::Reset { model: None })),
            (
                "reset",
                "model=gemini-2.5-pro",
                Ok(Switch::Reset { model: Some(id()) }),
            ),
            ("swap", "", Err(400)),
            ("retire", "to=x", Err(400)),
            ("swap", "model=a&model=b", Err(400)),
            ("swap", "model=", Err(400)),
            ("slow", "ms=0", Err(400)),
            ("slow", "ms=60001", Err(400)),
            ("slow", "ms=-5", Err(400)),
            ("slow", "ms=1e9", Err(400)),
            ("fail", "status=200", Err(400)),
            ("fail", "status=abc", Err(400)),
            ("reset", "everything=1", Err(400)),
            ("explode", "", Err(404)),
        ];
        for (action, query, want) in table {
            let got = switch(action, query).map_err(|r| r.status);
            assert_eq!(got, want, "{action}?{query}");
        }
        let long = format!("model={}", "x".repeat(MAX_QUERY));
        assert_eq!(switch("swap", &long).map_err(|r| r.status), Err(400));
    }

    #[test]
    fn shows_on_get_and_wants_post_for_switches() {
        assert_eq!(parse("GET", "/_sim", None), Ok(Command::Show));
        assert_eq!(parse("GET", "/_sim/", None), Ok(Command::Show));
        assert_eq!(
            parse("GET", "/_sim/swap", Some("model=x")).map_err(|r| r.status),
            Err(405)
        );
        assert_eq!(parse("POST", "/_sim", None).map_err(|r| r.status), Err(405));
        assert_eq!(
            parse("GET", "/_sim", Some("x=1")).map_err(|r| r.status),
            Err(400)
        );
    }

    #[test]
    fn switches_rebuild_the_scenario_and_reset_restores_it() {
        let start = demo_world::before();
        let mut controls = Controls::new(start.clone());
        let apply = |c: &mut Controls, action: &str, query: &str| {
            c.apply(&switch(action, query).expect("parses"))
        };
        apply(&mut controls, "swap", "model=gemini-2.5-pro").unwrap();
        let route = &controls.scenario().routes[PINNED];
        assert_eq!(
            (route.model.as_str(), &route.report),
            (REPLACEMENT, &Reported::Honest)
        );

        apply(&mut controls, "mask", "model=gemini-2.5-pro").unwrap();
        let route = &controls.scenario().routes[PINNED];
        assert_eq!(
            (route.model.as_str(), &route.report),
            (REPLACEMENT, &Reported::Requested)
        );

        apply(&mut controls, "retire", "model=google/gemini-2.5-pro").unwrap();
        assert!(!controls.scenario().routes.contains_key(OPENROUTER_SLUG));

        apply(&mut controls, "slow", &format!("model={CONTROL}&ms=300")).unwrap();
        let scenario = controls.scenario();
        let slow = &scenario.models[&scenario.routes[CONTROL].model];
        assert_eq!((slow.id.as_str(), slow.latency_ms), (CONTROL, 300));
        assert_eq!(
            scenario.models[CONTROL].latency_ms, 5,
            "the model itself is untouched"
        );

        apply(&mut controls, "fail", "status=503").unwrap();
        let scenario = controls.scenario();
        assert!(scenario.routes.values().all(|r| r.faults.len() == 1));

        let refused = apply(&mut controls, "swap", "model=gpt-nope").unwrap_err();
        assert_eq!(refused.status, 400);
        assert!(
            refused.message.contains("gemini-2.5-pro"),
            "{}",
            refused.message
        );
        let refused = apply(
            &mut controls,
            "swap",
            "model=gemini-2.5-pro&to=gemini-2.5-pro",
        );
        assert!(refused.unwrap_err().message.contains("already serves"));
        assert!(apply(&mut controls, "mask", "model=gemini-2.5-pro&to=nope").is_err());

        apply(&mut controls, "reset", "").unwrap();
        assert_eq!(
            serde_json::to_value(controls.scenario()).unwrap(),
            serde_json::to_value(start).unwrap()
        );
        let shown = serde_json::to_value(controls.shown()).unwrap();
        assert_eq!(shown["ids"][PINNED]["serving"], "as_started");
    }
}
