//! One audit: call every probe of every pin, and keep what came back as an `Observation`.
//!
//! This is the only place that drives provider calls. Calls run as a bounded stream (the
//! transport's semaphores cap them overall and per provider); results are sorted back into
//! probe and sample order so everything downstream is deterministic. Each call goes through the
//! one retry layer (`retry::run`) under the pin's budget, and ends in exactly one `CallResult`.
//! A pin stops calling as soon as the provider gives a terminal answer (model not found, auth,
//! quota): more calls would only repeat it and spend the user's money. Cancelling the audit drops
//! in-flight requests, which closes their connections; such calls are recorded as cancelled.

pub mod baseline;
pub mod first_tokens;
pub mod judge;
pub mod lifecycle;
pub mod locking;
pub mod plan;
pub mod retirement;
pub mod run;
pub mod scripts;
pub mod tally;
pub mod verdict;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::breaker;
use crate::config::{Config, Pin, Probe};
use crate::finding::reason::{Halt, Reason, Reasons};
use crate::provider::{self, Endpoint, ErrorClass, Parsed, ProbeCall, Rejected, Reply};
use crate::retry::{self, Operation, RetryPolicy, Signal, Stopped};
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
    /// Never sent: the pin had already been stopped.
    Skipped(Halt),
    /// Dropped in flight or never started: the audit was interrupted or its budget was spent.
    Cancelled(Halt),
}

/// What a call was for: one of the pin's probes, or one of the first-token tier's one-token
/// calls (whose probe ids are the tier's, `first_tokens::tier_probe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Probe,
    Tier,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    pub probe: String,
    pub kind: CallKind,
    pub sample: u32,
    pub result: CallResult,
    pub latency: Duration,
    /// HTTP attempts made (0 when the call was never sent).
    pub attempts: u32,
    pub waits: Vec<Duration>,
    /// Why retrying stopped, when the call did not end in an answer.
    pub stopped: Option<Stopped>,
}

/// Everything one audit saw for one pin, in probe then sample order.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub pin: String,
    /// Every call that was started (answered, refused, failed or cut off in flight).
    pub calls: Vec<CallRecord>,
    /// Calls the plan had for the pin.
    pub planned: u64,
    /// Planned calls never started, by why (skipped or cancelled): counted, not recorded one by
    /// one, so a plan cut short costs no memory per call it did not make.
    pub not_started: Reasons,
}

impl Observation {
    /// An observation in which every planned call was started.
    #[must_use]
    pub fn complete(pin: &str, calls: Vec<CallRecord>) -> Observation {
        Observation {
            pin: pin.to_owned(),
            planned: calls.len() as u64,
            calls,
            not_started: Reasons::default(),
        }
    }

    /// A pin none of whose `planned` calls is made: the lock has no baseline to compare with.
    #[must_use]
    pub fn without_baseline(pin: &str, planned: u64) -> Observation {
        let mut not_started = Reasons::default();
        not_started.add(Reason::Skipped(Halt::NoBaseline), planned);
        Observation {
            pin: pin.to_owned(),
            calls: Vec::new(),
            planned,
            not_started,
        }
    }

    /// Planned calls that produced no answer.
    #[must_use]
    pub fn unanswered(&self) -> u64 {
        self.planned.saturating_sub(self.replies().count() as u64)
    }

    /// The observation without its first-token tier calls, and those calls alone; `tier_planned`
    /// of the planned calls were the tier's. Calls never started are counted with the probes'.
    #[must_use]
    pub fn split_tier(&self, tier_planned: u64) -> (Observation, Observation) {
        let (tier, probes): (Vec<CallRecord>, Vec<CallRecord>) = self
            .calls
            .iter()
            .cloned()
            .partition(|c| c.kind == CallKind::Tier);
        let tier_planned = tier_planned.max(tier.len() as u64);
        (
            Observation {
                pin: self.pin.clone(),
                calls: probes,
                planned: self.planned.saturating_sub(tier_planned),
                not_started: self.not_started.clone(),
            },
            Observation {
                pin: self.pin.clone(),
                planned: tier.len() as u64,
                calls: tier,
                not_started: Reasons::default(),
            },
        )
    }

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
    /// What was asked for; `pins` are those of its pins that are called.
    pub request: run::Request<'a>,
    pub pins: Vec<&'a Pin>,
    /// How often each probe is asked (`lock`, `lock --samples N`, `check --no-probes`).
    pub samples: run::Samples,
    pub retry: RetryPolicy,
    /// Cancelled on Ctrl-C / SIGTERM: in-flight calls are dropped and recorded as cancelled.
    pub cancel: CancellationToken,
    /// What the audit has spent, against its cap.
    pub spend: Arc<Spend>,
    /// Calls finished so far, for a progress bar.
    pub progress: Arc<tally::Tally>,
    /// Each pin's one-token calls of the first-token tier, by pin id, after its probe calls.
    pub tiers: BTreeMap<String, first_tokens::TierCalls>,
    /// Pins of the request that make no call: no baseline to compare them with (`for_audit`).
    pub unbaselined: Vec<&'a Pin>,
    /// The price each pin's calls are counted at against the spend cap, by pin id: its
    /// `price`, else the one its lock recorded (`price_of`) — the figure the report uses too.
    pub prices: BTreeMap<String, crate::config::Price>,
    /// Per provider, the calls that may exist at once (its concurrency, capped by the overall
    /// one): a call takes a slot before it builds its request, so calls waiting their turn hold
    /// a few bytes each instead of a request and a full retry state.
    slots: BTreeMap<String, Arc<Semaphore>>,
}

/// Spend of one audit against `settings.max_cost_usd` / `--max-cost`. Calls already in flight when
/// the cap is reached still land, so the total can pass the cap by at most the calls in flight.
#[derive(Debug, Default)]
pub struct Spend {
    cap: Option<f64>,
    spent: std::sync::Mutex<f64>,
    /// A priced call reported a token count no call can have: what it cost is unknown, so the
    /// cap can no longer be kept and counts as reached.
    unknown: std::sync::Mutex<Option<provider::ImplausibleCount>>,
}

impl Spend {
    #[must_use]
    pub fn new(cap: Option<f64>) -> Spend {
        Spend {
            cap,
            ..Spend::default()
        }
    }

    fn add(&self, usd: f64) {
        *self.spent.lock().expect("spend lock") += usd;
    }

    fn lose_count(&self, count: provider::ImplausibleCount) {
        self.unknown
            .lock()
            .expect("spend lock")
            .get_or_insert(count);
    }

    /// USD spent so far on calls whose cost is known.
    #[must_use]
    pub fn spent(&self) -> f64 {
        *self.spent.lock().expect("spend lock")
    }

    /// Why no further call may start, once the cap is reached or can no longer be kept.
    fn reached(&self) -> Option<Halt> {
        let cap = self.cap?;
        let spent = self.spent();
        if let Some(count) = *self.unknown.lock().expect("spend lock") {
            return Some(Halt::SpendUnknown {
                cap,
                field: count.field,
                value: count.value,
            });
        }
        (spent >= cap).then_some(Halt::SpendCap { cap, spent })
    }
}

impl<'a> Plan<'a> {
    /// A plan with the config's retry policy, and `max_cost` (a CLI flag) over the config's cap;
    /// each pin's calls counted at `run::price_of` against `lock` (the one the audit is judged
    /// against; `None` while locking, when only the pins' own prices count).
    #[must_use]
    pub fn new(
        config: &'a Config,
        pins: Vec<&'a Pin>,
        samples: run::Samples,
        max_cost: Option<f64>,
        (cancel, progress): run::Watch,
        lock: Option<&crate::lock::LoadedLock>,
    ) -> Plan<'a> {
        let prices = pins
            .iter()
            .filter_map(|pin| Some((pin.id.clone(), run::price_of(pin, lock)?)))
            .collect();
        Plan {
            config,
            request: run::Request {
                pins: pins.clone(),
                samples,
                max_cost,
                strict: false,
                resolve: None,
            },
            pins,
            samples,
            retry: RetryPolicy {
                max_attempts: config.settings.max_attempts,
                ..RetryPolicy::default()
            },
            cancel,
            spend: Arc::new(Spend::new(max_cost.or(config.settings.max_cost_usd))),
            prices,
            progress,
            tiers: BTreeMap::new(),
            unbaselined: Vec::new(),
            slots: config
                .providers
                .iter()
                .map(|p| {
                    let n = p.concurrency.min(config.settings.concurrency).max(1);
                    (p.name.clone(), Arc::new(Semaphore::new(n)))
                })
                .collect(),
        }
    }

    /// The plan calling every pin of `request`, watched by `watch` (`Context::watch`:
    /// cancellation, progress).
    #[must_use]
    pub fn for_request(
        config: &'a Config,
        request: &run::Request<'a>,
        watch: run::Watch,
        lock: Option<&crate::lock::LoadedLock>,
    ) -> Plan<'a> {
        let mut plan = Plan::new(
            config,
            request.pins.clone(),
            request.samples,
            request.max_cost,
            watch,
            lock,
        );
        plan.request = request.clone();
        plan
    }

    /// The one plan of an audit judged against `lock`, decided before anything is sent: only
    /// the pins with a baseline are called (the others are in `unbaselined`), each with its
    /// first-token calls unless it asks for identity only (`check --no-probes`),
    /// and each counted at `run::price_of`. The estimate a command prints (`estimate`), the
    /// spend cap, the calls and the report all read it.
    #[must_use]
    pub fn for_audit(
        config: &'a Config,
        request: &run::Request<'a>,
        watch: run::Watch,
        lock: Option<&crate::lock::LoadedLock>,
    ) -> Plan<'a> {
        let mut plan = Plan::for_request(config, request, watch, lock);
        let (called, unbaselined) = request
            .pins
            .iter()
            .partition(|pin| run::has_baseline(lock, pin));
        plan.pins = called;
        plan.unbaselined = unbaselined;
        if request.samples != run::Samples::Identity {
            plan.tiers = first_tokens::for_check(lock, &plan.pins);
        }
        plan
    }

    /// Calls, tokens and cost of the plan, said before it starts.
    #[must_use]
    pub fn estimate(&self) -> plan::Estimate {
        let mut estimate = plan::Estimate::of(self.config, &self.pins, self.samples, |pin| {
            self.prices.get(&pin.id).copied()
        });
        estimate.unbaselined = self.unbaselined.len();
        for pin in &self.pins {
            if let Some(calls) = self.tiers.get(&pin.id) {
                estimate.add_tier(self.prices.get(&pin.id).copied(), calls);
            }
        }
        estimate
    }
}

/// Observes every pin of the plan; pins come back in plan order.
pub async fn observe(plan: &Plan<'_>, transport: &Transport) -> Vec<Observation> {
    // Futures are built in a loop, not a lazy `map`: a closure over borrowed pins inside a
    // spawned (Send) future trips rustc's higher-ranked lifetime inference.
    let mut pins = Vec::with_capacity(plan.pins.len());
    for pin in &plan.pins {
        pins.push(observe_pin(plan, pin, transport));
    }
    // More pins than call slots: each pin's first call goes alone, so with few calls per pin
    // `concurrency` pins in flight would leave slots idle. The transport's semaphores still cap
    // calls at `concurrency`.
    futures::stream::iter(pins)
        .buffered(plan.config.settings.concurrency.max(1) * 4)
        .collect()
        .await
}

/// One pin's calls, with what they share.
struct PinRun<'a> {
    plan: &'a Plan<'a>,
    pin: &'a Pin,
    endpoint: &'a Endpoint,
    transport: &'a Transport,
    until: Instant,
    stop: Arc<StopFlag>,
}

async fn observe_pin(plan: &Plan<'_>, pin: &Pin, transport: &Transport) -> Observation {
    let config = plan.config;
    let Some(provider) = config.providers.iter().find(|p| p.name == pin.provider) else {
        // Validation rejects such a config; keep the pin measurable-as-nothing rather than panic.
        return Observation::complete(&pin.id, Vec::new());
    };
    let run = PinRun {
        plan,
        pin,
        endpoint: &provider.endpoint,
        transport,
        until: Instant::now() + config.settings.budget,
        stop: Arc::new(StopFlag::default()),
    };
    plan.progress.pin_started(&pin.id);
    let samples = plan.samples.of(pin);
    let probes = config.probes_of(pin);
    let tier = plan.tiers.get(&pin.id);
    let planned =
        u64::from(samples) * probes.len() as u64 + tier.map_or(0, first_tokens::TierCalls::calls);
    // Lazily: a plan is never held in memory, only the calls in flight.
    let mut groups = vec![Group {
        probes,
        samples,
        logprobs: None,
        kind: CallKind::Probe,
    }];
    if let Some(t) = tier {
        groups.push(Group {
            probes: t.probes.iter().collect(),
            samples: t.samples,
            logprobs: t.top_logprobs,
            kind: CallKind::Tier,
        });
    }
    let mut jobs = Jobs {
        groups,
        group: 0,
        probe: 0,
        sample: 0,
    };
    // The first call goes alone: when the model is gone (or the key is wrong) the provider says
    // so once, and the stop flag keeps the remaining calls from repeating the question.
    let mut records = Vec::new();
    if let Some(job) = jobs.next() {
        let first = run.call(job).await;
        run.stop_if_unresponsive(&first);
        records.push(first);
    }
    let limit = config.settings.concurrency.max(1);
    let mut in_flight = futures::stream::FuturesUnordered::new();
    loop {
        while in_flight.len() < limit && run.not_starting().is_none() {
            let Some(job) = jobs.next() else {
                break;
            };
            in_flight.push(run.call(job));
        }
        match in_flight.next().await {
            Some(record) => records.push(record),
            None => break,
        }
    }
    records.sort_by(|a, b| (&a.probe, a.sample).cmp(&(&b.probe, b.sample)));
    let mut not_started = Reasons::default();
    let left = planned.saturating_sub(records.len() as u64);
    if left > 0 {
        let why = run
            .not_starting()
            .unwrap_or(Reason::Cancelled(Halt::NotStarted));
        not_started.add(why, left);
        plan.progress.calls(left);
    }
    plan.progress.pin_finished(&pin.id);
    Observation {
        pin: pin.id.clone(),
        calls: records,
        planned,
        not_started,
    }
}

/// A pin's calls in order, made as they are taken: each group's probes `samples` times each, with
/// the group's `top_logprobs`. (A struct, not iterator adapters over closures: those trip
/// rustc's higher-ranked lifetime inference inside the daemon's spawned futures.)
/// Probes asked `samples` times each, alike.
struct Group<'a> {
    probes: Vec<&'a Probe>,
    samples: u32,
    /// `top_logprobs` to ask for, if any.
    logprobs: Option<u8>,
    kind: CallKind,
}

/// One call to make.
#[derive(Clone, Copy)]
struct Job<'a> {
    probe: &'a Probe,
    sample: u32,
    logprobs: Option<u8>,
    kind: CallKind,
}

struct Jobs<'a> {
    groups: Vec<Group<'a>>,
    group: usize,
    probe: usize,
    sample: u32,
}

impl<'a> Iterator for Jobs<'a> {
    type Item = Job<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let group = self.groups.get(self.group)?;
            if self.probe >= group.probes.len() {
                (self.group, self.probe, self.sample) = (self.group + 1, 0, 0);
            } else if self.sample >= group.samples {
                (self.probe, self.sample) = (self.probe + 1, 0);
            } else {
                self.sample += 1;
                return Some(Job {
                    probe: group.probes[self.probe],
                    sample: self.sample - 1,
                    logprobs: group.logprobs,
                    kind: group.kind,
                });
            }
        }
    }
}

/// Set once a pin got an answer that further calls would only repeat; the first reason wins.
#[derive(Default)]
struct StopFlag {
    reason: std::sync::Mutex<Option<Halt>>,
}

impl StopFlag {
    fn raise(&self, reason: Halt) {
        self.reason
            .lock()
            .expect("stop reason lock")
            .get_or_insert(reason);
    }

    fn reason(&self) -> Option<Halt> {
        self.reason.lock().expect("stop reason lock").clone()
    }
}

/// One HTTP attempt: the call's result plus what the classifier reads.
struct Attempt {
    status: Option<u16>,
    headers: Vec<(String, String)>,
    result: CallResult,
}

impl Attempt {
    fn signal(&self) -> Signal<'_> {
        let mut signal = Signal {
            status: self.status,
            headers: &self.headers,
            ..Signal::default()
        };
        match &self.result {
            CallResult::Rejected(r) => {
                signal.class = Some(r.class);
                signal.message = Some(&r.message);
            }
            CallResult::Unparseable(_) => signal.unparseable = true,
            CallResult::Failed(f) => signal.transport = Some(f.kind),
            CallResult::Reply(_) | CallResult::Skipped(_) | CallResult::Cancelled(_) => {}
        }
        signal
    }
}

impl PinRun<'_> {
    async fn call(&self, job: Job<'_>) -> CallRecord {
        let slot = match self.plan.slots.get(&self.pin.provider) {
            Some(slots) => slots.acquire().await.ok(),
            None => None,
        };
        // Boxed: the heavy state (request, retry loop, response) exists only while a slot is held.
        let record = Box::pin(self.call_inner(job)).await;
        drop(slot);
        self.plan.progress.calls(1);
        if record.attempts > 0 {
            self.plan
                .progress
                .latency(&self.pin.provider, record.latency);
        }
        record
    }

    async fn call_inner(&self, job: Job<'_>) -> CallRecord {
        let Job {
            probe,
            sample,
            logprobs,
            kind,
        } = job;
        let started = Instant::now();
        let mut record = CallRecord {
            probe: probe.id.clone(),
            kind,
            sample,
            result: CallResult::Cancelled(Halt::NotStarted),
            latency: Duration::ZERO,
            attempts: 0,
            waits: Vec::new(),
            stopped: None,
        };
        if let Some(reason) = self.stop.reason() {
            record.result = CallResult::Skipped(reason);
            return record;
        }
        if self.plan.cancel.is_cancelled() || Instant::now() >= self.until {
            record.result = CallResult::Cancelled(self.cancel_reason());
            return record;
        }
        if let Some(halt) = self.plan.spend.reached() {
            record.result = CallResult::Cancelled(halt);
            return record;
        }
        if let Some(breakers) = self.transport.breakers() {
            let admitted = tokio::select! {
                admitted = breakers.admit(&self.pin.provider) => admitted.map_err(Halt::from),
                () = self.plan.cancel.cancelled() => Err(self.cancel_reason()),
                () = tokio::time::sleep_until(self.until) => Err(self.cancel_reason()),
            };
            if let Err(halt) = admitted {
                record.result = match halt {
                    Halt::BreakerOpen { .. } => CallResult::Skipped(halt),
                    other => CallResult::Cancelled(other),
                };
                return record;
            }
        }
        let request = self.request(probe, logprobs);
        let attempts = retry::run(
            self.plan.retry,
            self.until,
            |_| self.attempt(&request),
            |a: &Attempt| self.decide(a),
            retry::jitter_source(),
        );
        let attempts = tokio::select! {
            done = attempts => done,
            () = self.plan.cancel.cancelled() => {
                record.result = CallResult::Cancelled(self.cancel_reason());
                record.latency = started.elapsed();
                // Sent at least once; how often is lost with the dropped future.
                record.attempts = 1;
                return record;
            }
        };
        record.latency = started.elapsed();
        record.attempts = attempts.count;
        record.waits = attempts.waits;
        record.stopped = attempts.stopped;
        record.result = match attempts.last.result {
            CallResult::Failed(f)
                if f.kind == FailureKind::Timeout && Instant::now() >= self.until =>
            {
                CallResult::Cancelled(Halt::InFlight {
                    halt: Box::new(self.cancel_reason()),
                    message: f.message,
                })
            }
            other => other,
        };
        self.stop_on_terminal(&record.result);
        if let CallResult::Reply(reply) = &record.result {
            let price = self.plan.prices.get(&self.pin.id).copied();
            let cost = reply
                .reported_cost_usd
                .or_else(|| judge::expected_cost(reply, price.as_ref()?));
            // A priced call whose count is no count: what it cost is unknown, so the cap cannot
            // be kept. (An unpriced pin's calls are never counted; the report says so.)
            match (cost, reply.usage.implausible) {
                (None, Some(count)) if price.is_some() => self.plan.spend.lose_count(count),
                (cost, _) => self.plan.spend.add(cost.unwrap_or(0.0)),
            }
        }
        record
    }

    /// The retry layer's decision on an attempt, and the provider's breaker told how it went:
    /// no retry once the breaker is open (the provider's recent attempts all failed).
    fn decide(&self, attempt: &Attempt) -> retry::Decision {
        let decision = retry::classify(&attempt.signal(), &Operation::Read, SystemTime::now());
        let Some(breakers) = self.transport.breakers() else {
            return decision;
        };
        // A timeout at the pin's own budget is this audit running out of time, not the provider
        // failing: it says nothing either way.
        let ours = matches!(&attempt.result, CallResult::Failed(f) if f.kind == FailureKind::Timeout)
            && Instant::now() >= self.until;
        if ours {
            return decision;
        }
        match &decision {
            retry::Decision::Done => {
                breakers.record(&self.pin.provider, breaker::Outcome::Alive, "");
            }
            retry::Decision::Retry { reason, .. } => {
                breakers.record(&self.pin.provider, breaker::Outcome::Failed, reason);
            }
            retry::Decision::Stop { class, reason } => {
                // Failures retrying could not fix count; a refusal of the request itself (not
                // found, bad key) is an answer from a provider that is up.
                let outcome = match class {
                    retry::StopClass::Refused | retry::StopClass::UnknownOutcome => {
                        breaker::Outcome::Failed
                    }
                    _ if attempt
                        .status
                        .is_some_and(|s| s == 429 || retry::server_failing(s)) =>
                    {
                        breaker::Outcome::Failed
                    }
                    _ => breaker::Outcome::Alive,
                };
                breakers.record(&self.pin.provider, outcome, reason);
            }
        }
        match (decision, breakers.open(&self.pin.provider).map(Halt::from)) {
            (retry::Decision::Retry { reason, .. }, Some(halt)) => retry::Decision::Stop {
                class: retry::StopClass::Breaker,
                reason: format!("not retried: {halt} ({reason})"),
            },
            (decision, _) => decision,
        }
    }

    /// Why no further call of the pin may start, in the words the report counts it under.
    fn not_starting(&self) -> Option<Reason> {
        if let Some(reason) = self.stop.reason() {
            return Some(Reason::Skipped(reason));
        }
        if let Some(halt) = self
            .transport
            .breakers()
            .and_then(|b| b.open(&self.pin.provider))
            .map(Halt::from)
        {
            return Some(Reason::Skipped(halt));
        }
        if self.plan.cancel.is_cancelled() || Instant::now() >= self.until {
            return Some(Reason::Cancelled(self.cancel_reason()));
        }
        self.plan.spend.reached().map(Reason::Cancelled)
    }

    /// A first call that used every attempt on timeouts means the provider is not answering:
    /// the pin's other calls would each wait out the same timeouts.
    fn stop_if_unresponsive(&self, first: &CallRecord) {
        if let CallResult::Failed(f) = &first.result
            && f.kind == FailureKind::Timeout
            && first.attempts >= self.plan.retry.max_attempts
        {
            self.stop.raise(Halt::Unresponsive {
                attempts: first.attempts,
                timeout: self.plan.config.settings.timeout,
            });
        }
    }

    fn cancel_reason(&self) -> Halt {
        if self.plan.cancel.is_cancelled() {
            Halt::Interrupted
        } else {
            Halt::Budget(self.plan.config.settings.budget)
        }
    }

    fn request(&self, probe: &Probe, top_logprobs: Option<u8>) -> provider::HttpRequest {
        let model = match self.pin.kind {
            provider::ProviderKind::Azure => self.pin.deployment.as_str(),
            _ => self.pin.model.as_str(),
        };
        provider::build_request(
            self.endpoint,
            &ProbeCall {
                model,
                system: probe.system.as_deref(),
                prompt: &probe.prompt,
                max_tokens: probe.max_tokens,
                temperature: probe.temperature,
                top_logprobs,
                seed: (self.endpoint.seed && probe.temperature > 0.0).then(provider::fresh_seed),
            },
        )
    }

    async fn attempt(&self, request: &provider::HttpRequest) -> Attempt {
        match self
            .transport
            .send(&self.pin.provider, request, Some(self.until))
            .await
        {
            Ok(delivered) => {
                let status = delivered.response.status;
                let redactor = self.transport.redactor();
                let parsed =
                    provider::parse_reply_masked(self.pin.kind, &delivered.response, redactor);
                let result = match parsed {
                    Parsed::Reply(reply) => CallResult::Reply(reply),
                    Parsed::Rejected(rejected) => CallResult::Rejected(rejected),
                    Parsed::Unparseable { status, reason } => {
                        CallResult::Unparseable(format!("HTTP {status}: {reason}"))
                    }
                };
                Attempt {
                    status: Some(status),
                    headers: delivered.response.headers,
                    result,
                }
            }
            Err(failure) => Attempt {
                status: None,
                headers: Vec::new(),
                result: if failure.kind == FailureKind::BodyTooLarge {
                    CallResult::Unparseable(failure.message)
                } else {
                    CallResult::Failed(failure)
                },
            },
        }
    }

    fn stop_on_terminal(&self, result: &CallResult) {
        if let CallResult::Rejected(r) = result
            && matches!(
                r.class,
                ErrorClass::NotFound | ErrorClass::Auth | ErrorClass::Quota
            )
        {
            self.stop.raise(Halt::Refused {
                class: r.class,
                message: r.message.clone(),
            });
        }
    }
}
