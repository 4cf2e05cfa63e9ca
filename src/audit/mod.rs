//! One audit: call every probe of every pin, and keep what came back as an `Observation`.
//!
//! This is the only place that drives provider calls. Calls run as a bounded stream (the
//! transport's semaphores cap them overall and per provider); results are sorted back into
//! probe and sample order so everything downstream is deterministic. A pin stops calling as soon
//! as the provider gives a terminal answer (model not found, auth, quota): more calls would only
//! repeat it and spend the user's money.

pub mod baseline;
pub mod judge;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::config::{Config, Pin, Probe};
use crate::provider::{self, Endpoint, ErrorClass, Parsed, ProbeCall, Rejected, Reply};
use crate::transport::{FailureKind, Transport, TransportFailure};

/// How one call ended. Exactly one per call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    Reply(Reply),
    Rejected(Rejected),
    /// A response arrived but could not be read (including bodies over the size cap).
    Unparseable(String),
    /// No response: refused connection, timeout, broken connection.
    Failed(TransportFailure),
    /// Never sent: the pin had already been stopped, or its budget was spent.
    Skipped(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    pub probe: String,
    pub sample: u32,
    pub result: CallResult,
    pub latency: Duration,
}

/// Everything one audit saw for one pin, in probe then sample order.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub pin: String,
    pub calls: Vec<CallRecord>,
}

impl Observation {
    pub fn replies(&self) -> impl Iterator<Item = (&CallRecord, &Reply)> {
        self.calls.iter().filter_map(|c| match &c.result {
            CallResult::Reply(r) => Some((c, r)),
            _ => None,
        })
    }
}

/// What an audit needs besides the config.
pub struct Plan<'a> {
    pub config: &'a Config,
    pub pins: Vec<&'a Pin>,
    /// Overrides each pin's `samples` (`lock --samples N`).
    pub samples: Option<u32>,
}

impl Plan<'_> {
    /// Calls the audit will make at most.
    #[must_use]
    pub fn planned_calls(&self) -> u64 {
        self.pins
            .iter()
            .map(|p| u64::from(self.samples.unwrap_or(p.samples)) * p.probes.len() as u64)
            .sum()
    }
}

/// Observes every pin of the plan; pins come back in plan order.
pub async fn observe(plan: &Plan<'_>, transport: &Transport) -> Vec<Observation> {
    let pins = plan
        .pins
        .iter()
        .map(|pin| observe_pin(plan, pin, transport));
    futures::stream::iter(pins)
        .buffered(plan.config.settings.concurrency.max(1))
        .collect()
        .await
}

async fn observe_pin(plan: &Plan<'_>, pin: &Pin, transport: &Transport) -> Observation {
    let config = plan.config;
    let until = Instant::now() + config.settings.budget;
    let stop = Arc::new(StopFlag::default());
    let Some(provider) = config.providers.iter().find(|p| p.name == pin.provider) else {
        // Validation rejects such a config; keep the pin measurable-as-nothing rather than panic.
        return Observation {
            pin: pin.id.clone(),
            calls: Vec::new(),
        };
    };
    let samples = plan.samples.unwrap_or(pin.samples);
    let jobs: Vec<(&Probe, u32)> = pin
        .probes
        .iter()
        .filter_map(|id| config.probes.iter().find(|p| &p.id == id))
        .flat_map(|probe| (0..samples).map(move |s| (probe, s)))
        .collect();
    let calls: Vec<_> = jobs
        .into_iter()
        .map(|(probe, sample)| {
            let stop = stop.clone();
            let endpoint = &provider.endpoint;
            async move {
                let started = Instant::now();
                let result =
                    call_once(transport, &pin.provider, endpoint, pin, probe, until, &stop).await;
                CallRecord {
                    probe: probe.id.clone(),
                    sample,
                    result,
                    latency: started.elapsed(),
                }
            }
        })
        .collect();
    // The first call goes alone: when the model is gone (or the key is wrong) the provider says
    // so once, and the stop flag keeps the remaining calls from repeating the question.
    let mut calls = calls.into_iter();
    let mut records: Vec<CallRecord> = Vec::new();
    if let Some(first) = calls.next() {
        records.push(first.await);
    }
    records.extend(
        futures::stream::iter(calls)
            .buffer_unordered(config.settings.concurrency.max(1))
            .collect::<Vec<_>>()
            .await,
    );
    records.sort_by(|a, b| (&a.probe, a.sample).cmp(&(&b.probe, b.sample)));
    Observation {
        pin: pin.id.clone(),
        calls: records,
    }
}

/// Set once a pin got an answer that further calls would only repeat.
#[derive(Default)]
struct StopFlag {
    stopped: AtomicBool,
    reason: std::sync::Mutex<String>,
}

impl StopFlag {
    fn raise(&self, reason: String) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            *self.reason.lock().expect("stop reason lock") = reason;
        }
    }

    fn reason(&self) -> Option<String> {
        self.stopped
            .load(Ordering::SeqCst)
            .then(|| self.reason.lock().expect("stop reason lock").clone())
    }
}

async fn call_once(
    transport: &Transport,
    provider_name: &str,
    endpoint: &Endpoint,
    pin: &Pin,
    probe: &Probe,
    until: Instant,
    stop: &StopFlag,
) -> CallResult {
    if let Some(reason) = stop.reason() {
        return CallResult::Skipped(reason);
    }
    if Instant::now() >= until {
        return CallResult::Skipped("the pin's audit budget was spent".to_owned());
    }
    let model = match pin.kind {
        provider::ProviderKind::Azure => pin.deployment.as_str(),
        _ => pin.model.as_str(),
    };
    let request = provider::build_request(
        endpoint,
        &ProbeCall {
            model,
            system: probe.system.as_deref(),
            prompt: &probe.prompt,
            max_tokens: probe.max_tokens,
            temperature: probe.temperature,
        },
    );
    let result = match transport.send(provider_name, &request, Some(until)).await {
        Ok(delivered) => match provider::parse_reply(pin.kind, &delivered.response) {
            Parsed::Reply(reply) => CallResult::Reply(reply),
            Parsed::Rejected(rejected) => CallResult::Rejected(rejected),
            Parsed::Unparseable { status, reason } => {
                CallResult::Unparseable(format!("HTTP {status}: {reason}"))
            }
        },
        Err(failure) if failure.kind == FailureKind::BodyTooLarge => {
            CallResult::Unparseable(failure.message)
        }
        Err(failure) => CallResult::Failed(failure),
    };
    if let CallResult::Rejected(r) = &result {
        if matches!(
            r.class,
            ErrorClass::NotFound | ErrorClass::Auth | ErrorClass::Quota
        ) {
            stop.raise(format!(
                "not sent: an earlier call was refused ({}: {})",
                r.class.as_str(),
                r.message
            ));
        }
    }
    result
}
