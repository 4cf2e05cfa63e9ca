//! A provider simulator on loopback: real HTTP, scripted models and faults.
//!
//! modelpin's job is to notice what providers do on the wire, so its tests, its demo and its
//! benchmarks need a provider whose behaviour is known exactly: which model answers a requested
//! ID, what it reports, how its tokenizer counts, what it costs, and how it fails. The simulator
//! speaks OpenAI chat completions, OpenRouter, Azure OpenAI, Anthropic messages and Gemini
//! generateContent under one address, one path prefix per provider (see `base_url`).

pub mod control;
pub mod demo_world;
pub mod scenario;
mod wire;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::provider::ProviderKind;
use crate::sim::control::Controls;
use crate::sim::scenario::{FaultKind, Reported, Route, Scenario, SimError, SimModel};
use crate::sim::wire::{Answer, Ask, Flavour};
use crate::stats::rng::{Rng, derive_seed, fnv1a};

/// One request as the simulator saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    /// Requested model (Azure: deployment), when the request named one.
    pub model: Option<String>,
}

impl SeenRequest {
    /// A generation call (as opposed to a models list or a feed).
    #[must_use]
    pub fn is_generation(&self) -> bool {
        self.method == "POST" && wire::route_path(&self.path).is_some()
    }
}

struct Shared {
    /// Requests take a cheap `Arc` clone; `set_scenario` swaps the whole thing.
    scenario: RwLock<Arc<Scenario>>,
    served: AtomicU64,
    per_route: Mutex<HashMap<String, u32>>,
    /// Draws made so far per kind of request (see `Shared::draw`).
    draws: Mutex<HashMap<u64, u64>>,
    seen: Mutex<Vec<SeenRequest>>,
    /// The `/_sim` switches, when the simulator was started with them (`start_controlled`).
    control: Option<Mutex<Controls>>,
}

/// Kinds of request whose draw counts `Shared::draw` keeps before it starts them all again, so
/// a client sending ever new prompts to `demo --serve` cannot grow the map without bound.
const MAX_DRAW_STREAMS: usize = 65_536;

impl Shared {
    /// The stream and position of the next answer drawn for `ask`, sent to `path`. Each kind
    /// of request (the same path, model, system message, prompt, `max_tokens` and
    /// `top_logprobs`) draws from a stream of its own, so concurrent requests of other kinds cannot change which answers
    /// it gets: a scenario with a fixed seed replays the same answers per request whatever the
    /// order its requests arrive in, and a run (the demo's) is the same run every time.
    fn draw(&self, path: &str, ask: &Ask) -> (u64, u64) {
        let mut key = Vec::new();
        for part in [path, &ask.model, &ask.system, &ask.prompt] {
            key.extend_from_slice(part.as_bytes());
            key.push(0xff);
        }
        key.extend_from_slice(&ask.max_tokens.to_le_bytes());
        key.extend_from_slice(&ask.top_logprobs.unwrap_or(u64::MAX).to_le_bytes());
        let stream = fnv1a(&key);
        let mut draws = self.draws.lock().expect("draws lock");
        if draws.len() >= MAX_DRAW_STREAMS && !draws.contains_key(&stream) {
            draws.clear();
        }
        let n = draws.entry(stream).or_insert(0);
        let position = *n;
        *n += 1;
        (stream, position)
    }

    /// Notes a request for the tests that count them. A controlled simulator (`demo --serve`)
    /// runs for as long as a user plays with it and nobody reads the log: it keeps none.
    fn note(&self, request: SeenRequest) {
        if self.control.is_none() {
            self.seen.lock().expect("seen lock").push(request);
        }
    }
}

/// A running simulator. Dropping it stops the server.
pub struct Simulator {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
}

impl Simulator {
    /// Binds `127.0.0.1` on an ephemeral port and serves `scenario` on the current runtime.
    pub async fn start(scenario: Scenario) -> std::io::Result<Simulator> {
        Simulator::start_on("127.0.0.1:0".parse().expect("literal address"), scenario).await
    }

    pub async fn start_on(addr: SocketAddr, scenario: Scenario) -> std::io::Result<Simulator> {
        Simulator::start_with(addr, scenario, None).await
    }

    /// `start_on` with the runtime switches under `/_sim` (see `control`), for a simulator a
    /// person drives by hand. Refuses an address off loopback: the switches take no key.
    pub async fn start_controlled(
        addr: SocketAddr,
        scenario: Scenario,
    ) -> std::io::Result<Simulator> {
        if !addr.ip().is_loopback() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{addr} is not a loopback address; the switches listen on loopback only"),
            ));
        }
        let controls = Controls::new(scenario.clone());
        Simulator::start_with(addr, scenario, Some(controls)).await
    }

    async fn start_with(
        addr: SocketAddr,
        scenario: Scenario,
        control: Option<Controls>,
    ) -> std::io::Result<Simulator> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            scenario: RwLock::new(Arc::new(scenario)),
            served: AtomicU64::new(0),
            per_route: Mutex::new(HashMap::new()),
            draws: Mutex::new(HashMap::new()),
            seen: Mutex::new(Vec::new()),
            control: control.map(Mutex::new),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Simulator {
            addr,
            shared,
            stop: Some(stop),
        })
    }

    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The `base_url` to put in pins.toml for a provider kind.
    #[must_use]
    pub fn base_url(&self, kind: ProviderKind) -> String {
        let prefix = match kind {
            ProviderKind::OpenAi => "/openai/v1",
            ProviderKind::OpenAiCompatible => "/compat/v1",
            ProviderKind::OpenRouter => "/openrouter/api/v1",
            ProviderKind::Azure => "/azure",
            ProviderKind::Anthropic => "/anthropic",
            ProviderKind::Gemini => "/gemini",
        };
        format!("http://{}{prefix}", self.addr)
    }

    /// Replaces the scenario; the route counters (for `first: N` faults) start again.
    pub fn set_scenario(&self, scenario: Scenario) {
        self.shared.set_scenario(scenario);
    }

    #[must_use]
    pub fn scenario(&self) -> Scenario {
        Scenario::clone(&self.shared.scenario.read().expect("scenario lock"))
    }

    /// Generation calls seen, in arrival order.
    #[must_use]
    pub fn requests(&self) -> Vec<SeenRequest> {
        let seen = self.shared.seen.lock().expect("seen lock");
        seen.iter().filter(|r| r.is_generation()).cloned().collect()
    }

    /// Every request seen, models lists and feeds included.
    #[must_use]
    pub fn all_requests(&self) -> Vec<SeenRequest> {
        self.shared.seen.lock().expect("seen lock").clone()
    }
}

impl Shared {
    fn set_scenario(&self, scenario: Scenario) {
        *self.scenario.write().expect("scenario lock") = Arc::new(scenario);
        self.per_route.lock().expect("route lock").clear();
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    if shared.control.is_some() && is_control(&path) {
        return controlled(&shared, &method, &uri, &headers);
    }
    if method == Method::GET {
        shared.note(SeenRequest {
            method: method.to_string(),
            path: path.clone(),
            model: None,
        });
        let scenario = shared.scenario.read().expect("scenario lock").clone();
        // A model lookup takes the looked-up model's latency, as a real round trip would.
        if let Some(latency) = lookup_latency(&scenario, &path) {
            tokio::time::sleep(latency).await;
        }
        return metadata(&scenario, &path);
    }
    let Some((flavour, url_model)) = wire::route_path(&path) else {
        shared.note(SeenRequest {
            method: method.to_string(),
            path,
            model: None,
        });
        return plain(StatusCode::NOT_FOUND, "no such simulated endpoint");
    };
    let ask = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| wire::read_ask(flavour, url_model, &v));
    shared.note(SeenRequest {
        method: method.to_string(),
        path: path.clone(),
        model: ask.as_ref().map(|a| a.model.clone()),
    });
    let Some(ask) = ask else {
        let (status, body) = wire::error_body(flavour, SimError::InvalidRequest, "");
        return json_response(status, &body, &[]);
    };
    let scenario = shared.scenario.read().expect("scenario lock").clone();
    if !authorized(&scenario, flavour, &headers) {
        let (status, body) = wire::error_body(flavour, SimError::Auth, &ask.model);
        return json_response(status, &body, &[]);
    }
    let Some(route) = scenario.routes.get(&ask.model) else {
        let (status, body) = wire::error_body(flavour, SimError::NotFound, &ask.model);
        return json_response(status, &body, &[]);
    };
    let nth = {
        let mut counts = shared.per_route.lock().expect("route lock");
        let n = counts.entry(ask.model.clone()).or_insert(0);
        *n += 1;
        *n
    };
    let fault = route
        .faults
        .iter()
        .find(|f| f.first.is_none_or(|first| nth <= first))
        .map(|f| f.kind.clone());
    let Some(model) = scenario.models.get(&route.model) else {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "scenario routes to an unknown simulated model",
        );
    };
    let serial = shared.served.fetch_add(1, Ordering::Relaxed);
    if model.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(model.latency_ms)).await;
    }
    let extra = match fault {
        Some(FaultKind::Headers { headers }) => headers,
        Some(other) => return faulty(flavour, &ask, other).await,
        None => Vec::new(),
    };
    let draw = shared.draw(&path, &ask);
    let answer = answer(&scenario, route, model, &ask, serial, draw);
    json_response(200, &answer, &extra)
}

/// Whether `path` is one of the `/_sim` switches rather than a provider endpoint.
fn is_control(path: &str) -> bool {
    path == control::PREFIX
        || path
            .strip_prefix(control::PREFIX)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// `/_sim`: shows the switches' state or applies one, and answers with the state as JSON.
/// Refused from a browser page (an `Origin` header) or under a name other than loopback's, so a
/// web page the user visits cannot flip the demo behind their back.
fn controlled(shared: &Shared, method: &Method, uri: &Uri, headers: &HeaderMap) -> Response {
    let refuse = |refusal: control::Refusal| {
        json_response(
            refusal.status,
            &serde_json::json!({ "error": refusal.message }),
            &[],
        )
    };
    if headers.contains_key("origin") || !loopback_host(headers) {
        return refuse(control::Refusal {
            status: 403,
            message: "switches are taken from loopback clients such as curl, not from web pages"
                .to_owned(),
        });
    }
    let command = match control::parse(method.as_str(), uri.path(), uri.query()) {
        Ok(command) => command,
        Err(refusal) => return refuse(refusal),
    };
    let Some(switches) = &shared.control else {
        return plain(StatusCode::NOT_FOUND, "no such simulated endpoint");
    };
    let mut controls = switches
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let control::Command::Switch(switch) = command {
        if let Err(refusal) = controls.apply(&switch) {
            return refuse(refusal);
        }
        shared.set_scenario(controls.scenario());
    }
    match serde_json::to_value(controls.shown()) {
        Ok(state) => json_response(200, &state, &[]),
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "cannot show the state"),
    }
}

/// A `Host` header naming loopback (or none, as HTTP/1.0 clients send): a DNS name that
/// resolves to 127.0.0.1 from a web page is not.
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get("host") else {
        return true;
    };
    let Ok(host) = host.to_str() else {
        return false;
    };
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    matches!(name, "localhost" | "[::1]")
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The latency of the model behind `GET …/models/{id}`, when it has one.
fn lookup_latency(scenario: &Scenario, path: &str) -> Option<std::time::Duration> {
    let id = path.strip_prefix("/openai/v1/models/")?;
    let model = scenario.models.get(&scenario.routes.get(id)?.model)?;
    (model.latency_ms > 0).then(|| std::time::Duration::from_millis(model.latency_ms))
}

/// `GET`: feeds, OpenAI's `models/{id}` and OpenRouter's `models` list, from the scenario.
fn metadata(scenario: &Scenario, path: &str) -> Response {
    if let Some(name) = path.strip_prefix("/feeds/") {
        return match scenario.feeds.get(name) {
            Some(doc) => raw_response(doc.status, Body::from(doc.body.clone()), &[]),
            None => plain(StatusCode::NOT_FOUND, "no such feed"),
        };
    }
    if path == "/openrouter/api/v1/models" {
        let data: Vec<Value> = scenario
            .routes
            .iter()
            .map(|(id, route)| serde_json::json!({"id": id, "canonical_slug": id, "expiration_date": route.shutdown_date}))
            .collect();
        return json_response(200, &serde_json::json!({ "data": data }), &[]);
    }
    if let Some(id) = path.strip_prefix("/openai/v1/models/") {
        let Some(route) = scenario.routes.get(id) else {
            let (status, body) = wire::error_body(Flavour::OpenAi, SimError::NotFound, id);
            return json_response(status, &body, &[]);
        };
        let model = serde_json::json!({"id": id, "object": "model", "created": 1_700_000_000,
            "owned_by": "system", "shutdown_date": route.shutdown_date});
        return json_response(200, &model, &[]);
    }
    plain(StatusCode::NOT_FOUND, "no such simulated endpoint")
}

fn authorized(scenario: &Scenario, flavour: Flavour, headers: &HeaderMap) -> bool {
    let Some(key) = &scenario.api_key else {
        return true;
    };
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match flavour {
        Flavour::OpenAi | Flavour::OpenRouter => {
            get("authorization") == Some(&format!("Bearer {key}"))
        }
        Flavour::Azure => get("api-key") == Some(key),
        Flavour::Anthropic => get("x-api-key") == Some(key),
        Flavour::Gemini => get("x-goog-api-key") == Some(key),
    }
}

fn answer(
    scenario: &Scenario,
    route: &Route,
    model: &SimModel,
    ask: &Ask,
    serial: u64,
    (stream, position): (u64, u64),
) -> Value {
    let text = sample_answer(model, &ask.prompt, scenario.seed ^ stream, position);
    let text = truncate_tokens(&text, model, ask.max_tokens);
    let top_logprobs = ask
        .top_logprobs
        .filter(|_| ask.flavour != Flavour::Anthropic && ask.flavour != Flavour::Gemini)
        .map(|n| reported_logprobs(model, &ask.prompt, n));
    let prompt_chars = format!("{}{}", ask.system, ask.prompt);
    let prompt_tokens = u64::from(model.tokenizer.overhead) + model.tokenizer.count(&prompt_chars);
    let completion_tokens = model.tokenizer.count(&text).max(1);
    let cost_usd = (prompt_tokens as f64 * model.price.input
        + completion_tokens as f64 * model.price.output)
        / 1_000_000.0;
    let reported = match &route.report {
        Reported::Honest => model.id.as_str(),
        Reported::Requested => ask.model.as_str(),
        Reported::Fixed(id) => id.as_str(),
    };
    wire::success_body(
        ask.flavour,
        &Answer {
            reported_model: reported,
            text: &text,
            prompt_tokens,
            completion_tokens,
            cost_usd,
            fingerprint: model.fingerprint.as_deref(),
            upstream: model.upstream.as_deref(),
            serial,
            top_logprobs,
        },
    )
}

/// The answer distribution of the rule for `prompt`, as logprobs, most probable first, at most
/// `n` of them (the rule's own weights: what the model reports whatever its sampler does).
fn reported_logprobs(model: &SimModel, prompt: &str, n: u64) -> Vec<(String, f64)> {
    let Some(rule) = model
        .answers
        .iter()
        .find(|r| prompt.contains(&r.prompt_contains))
    else {
        return vec![("ok".to_owned(), 0.0)];
    };
    let total: f64 = rule.answers.iter().map(|(_, w)| w.max(0.0)).sum();
    let mut top: Vec<(String, f64)> = rule
        .answers
        .iter()
        .filter(|(_, w)| *w > 0.0)
        .map(|(t, w)| (t.clone(), (w / total).ln()))
        .collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    top.truncate(usize::try_from(n.max(1)).unwrap_or(usize::MAX));
    top
}

/// Draws an answer from the first matching rule, by a counter-based generator: the same `seed`
/// and `position` give the same answer.
fn sample_answer(model: &SimModel, prompt: &str, seed: u64, position: u64) -> String {
    let Some(rule) = model
        .answers
        .iter()
        .find(|r| prompt.contains(&r.prompt_contains))
    else {
        return "ok".to_owned();
    };
    let power = model
        .sampling_temperature
        .map_or(1.0, |t| 1.0 / t.max(0.01));
    let weight = |w: f64| w.max(0.0).powf(power);
    let total: f64 = rule.answers.iter().map(|(_, w)| weight(*w)).sum();
    let mut pick = unit_interval(seed, position) * total;
    for (text, w) in &rule.answers {
        pick -= weight(*w);
        if pick < 0.0 {
            return text.clone();
        }
    }
    rule.answers
        .last()
        .map(|(t, _)| t.clone())
        .unwrap_or_default()
}

/// Uniform in `[0, 1)`: the first draw of the stream `(seed, position)` names.
fn unit_interval(seed: u64, position: u64) -> f64 {
    Rng::new(derive_seed(seed, position)).next_f64()
}

fn truncate_tokens(text: &str, model: &SimModel, max_tokens: u64) -> String {
    if model.tokenizer.count(text) <= max_tokens {
        return text.to_owned();
    }
    let keep = (max_tokens as f64 * model.tokenizer.chars_per_token).floor() as usize;
    text.chars().take(keep.max(1)).collect()
}

async fn faulty(flavour: Flavour, ask: &Ask, fault: FaultKind) -> Response {
    match fault {
        FaultKind::Error { class, headers } => {
            let (status, body) = wire::error_body(flavour, class, &ask.model);
            json_response(status, &body, &headers)
        }
        FaultKind::Raw {
            status,
            body,
            headers,
        } => raw_response(status, Body::from(body), &headers),
        FaultKind::Hang => {
            // Held until the client gives up; the connection closing drops this future.
            tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
            plain(StatusCode::GATEWAY_TIMEOUT, "hung")
        }
        FaultKind::Malformed => {
            raw_response(200, Body::from(r#"{"id": "chatcmpl-sim", "model": "#), &[])
        }
        FaultKind::Oversized { bytes } => {
            let mut text = String::from(r#"{"padding": ""#);
            text.push_str(&"x".repeat(bytes));
            text.push_str(r#""}"#);
            raw_response(200, Body::from(text), &[])
        }
        FaultKind::DropMidBody => {
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from_static(
                    br#"{"id": "chatcmpl-sim", "choices": ["#,
                )),
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "simulated drop",
                )),
            ];
            raw_response(200, Body::from_stream(futures::stream::iter(chunks)), &[])
        }
        // Answered normally by the caller; kept total so a future caller cannot panic here.
        FaultKind::Headers { .. } => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "headers fault reached the fault path",
        ),
    }
}

fn json_response(status: u16, body: &Value, headers: &[(String, String)]) -> Response {
    let mut all = vec![("content-type".to_owned(), "application/json".to_owned())];
    all.extend_from_slice(headers);
    raw_response(status, Body::from(body.to_string()), &all)
}

fn raw_response(status: u16, body: Body, headers: &[(String, String)]) -> Response {
    let mut builder = Response::builder().status(status);
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    builder
        .body(body)
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "bad scenario header"))
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::scenario::{AnswerRule, SimPrice, Tokenizer};

    fn model(answers: Vec<(String, f64)>) -> SimModel {
        SimModel {
            id: "m".into(),
            tokenizer: Tokenizer {
                chars_per_token: 4.0,
                overhead: 3,
            },
            answers: vec![AnswerRule {
                prompt_contains: "Q".into(),
                answers,
            }],
            price: SimPrice {
                input: 1.0,
                output: 2.0,
            },
            latency_ms: 0,
            fingerprint: None,
            upstream: None,
            sampling_temperature: None,
        }
    }

    #[test]
    fn sampling_follows_weights_and_replays() {
        let m = model(vec![("a".into(), 0.7), ("b".into(), 0.3)]);
        let draws: Vec<String> = (0..10_000).map(|i| sample_answer(&m, "Q?", 7, i)).collect();
        let a = draws.iter().filter(|d| *d == "a").count() as f64 / 10_000.0;
        assert!((a - 0.7).abs() < 0.02, "share of a = {a}");
        let again: Vec<String> = (0..10_000).map(|i| sample_answer(&m, "Q?", 7, i)).collect();
        assert_eq!(draws, again);
        assert_eq!(sample_answer(&m, "no rule", 7, 1), "ok");
    }

    fn shared() -> Shared {
        Shared {
            scenario: RwLock::new(Arc::new(Scenario::default())),
            served: AtomicU64::new(0),
            per_route: Mutex::new(HashMap::new()),
            draws: Mutex::new(HashMap::new()),
            seen: Mutex::new(Vec::new()),
            control: None,
        }
    }

    const PATH: &str = "/openrouter/api/v1/chat/completions";

    fn ask(prompt: &str, max_tokens: u64) -> Ask {
        Ask {
            flavour: Flavour::OpenRouter,
            model: "m".into(),
            system: String::new(),
            prompt: prompt.into(),
            max_tokens,
            top_logprobs: Some(10),
        }
    }

    #[test]
    fn each_kind_of_request_draws_from_its_own_stream_whatever_else_arrives_between() {
        let border = ask("Q: name a city", 1);
        let (alone, mixed) = (shared(), shared());
        let from_alone: Vec<(u64, u64)> = (0..5).map(|_| alone.draw(PATH, &border)).collect();
        let from_mixed: Vec<(u64, u64)> = (0..5)
            .map(|i| {
                for _ in 0..i {
                    mixed.draw(PATH, &ask("Q: name a city", 64));
                    mixed.draw(PATH, &ask("Q: name a town", 1));
                }
                mixed.draw(PATH, &border)
            })
            .collect();
        assert_eq!(from_alone, from_mixed);
        assert_eq!(
            from_alone.iter().map(|d| d.1).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        let streams: std::collections::BTreeSet<u64> = [
            border.clone(),
            ask("Q: name a city", 64),
            ask("Q: name a town", 1),
            Ask {
                top_logprobs: None,
                ..border.clone()
            },
            Ask {
                model: "n".into(),
                ..border.clone()
            },
        ]
        .iter()
        .map(|a| shared().draw(PATH, a).0)
        .chain([shared().draw("/compat/v1/chat/completions", &border).0])
        .collect();
        assert_eq!(
            streams.len(),
            6,
            "every field, and the path, makes another stream"
        );
    }

    #[test]
    fn tokenizer_counts_and_truncates() {
        let m = model(vec![]);
        assert_eq!(m.tokenizer.count(""), 0);
        assert_eq!(m.tokenizer.count("abcd"), 1);
        assert_eq!(m.tokenizer.count("abcde"), 2);
        assert_eq!(truncate_tokens("abcdefghijkl", &m, 2), "abcdefgh");
    }
}
