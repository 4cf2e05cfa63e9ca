//! Retrying without retrying blindly: classify first, then wait as the server asks, within a budget.
//!
//! One retry layer only (reqwest's own retries stay off). Each attempt's outcome is reduced to a
//! `Signal`, and a pure function decides `Done`, `Retry` or `Stop` from it: an explicit server
//! signal (`x-should-retry`) beats the status; a model that does not exist, bad credentials or an
//! exhausted quota will not get better on attempt 50 and stop at once. Waits honour `Retry-After`
//! (seconds or HTTP-date) and `retry-after-ms` as a minimum, otherwise exponential backoff with full
//! jitter; a wait that would overrun the budget stops now with the server's own message instead.
//!
//! A refused connection is its own class: it comes back at once, certain, and would again, so a
//! probe call is not retried (a timeout may be a slow server finishing, a reset a restart in
//! progress); a delivery, held by its outbox, is.
//!
//! Reads and writes differ: a probe call is a read and may be repeated after an ambiguous failure
//! (a timeout, a dropped connection). A write — an alert delivery — may have taken effect before the
//! response was lost, so it is repeated only when it carries an idempotency key the receiver can
//! deduplicate on; otherwise its outcome is recorded as unknown.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::provider::ErrorClass;
use crate::transport::FailureKind;

/// What kind of request is being retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// No side effect: safe to repeat after an ambiguous failure.
    Read,
    /// A side effect; repeatable after an ambiguous failure only with an idempotency key.
    Write { idempotency_key: Option<String> },
}

impl Operation {
    fn repeatable_when_ambiguous(&self) -> bool {
        match self {
            Operation::Read => true,
            Operation::Write { idempotency_key } => idempotency_key.is_some(),
        }
    }
}

/// One attempt's outcome, as much as the classifier needs.
#[derive(Debug, Clone, Default)]
pub struct Signal<'a> {
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Response headers, lower-case names.
    pub headers: &'a [(String, String)],
    /// How the provider adapter read an error body, when there was one.
    pub class: Option<ErrorClass>,
    /// The provider's error message, for hints like "Please retry after 7 seconds".
    pub message: Option<&'a str>,
    /// No response: how the exchange failed.
    pub transport: Option<FailureKind>,
    /// A response arrived that could not be read.
    pub unparseable: bool,
}

/// Why an attempt sequence stopped without success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopClass {
    /// The server said so: a terminal status, model not found, auth, quota, `x-should-retry: false`.
    Terminal,
    /// A write whose outcome is unknown and that carries no idempotency key.
    UnknownOutcome,
    /// The response could not be read; repeating it would read the same.
    Unparseable,
    /// The connection was refused: nothing listens at the address. Refusals come back at once
    /// and the next attempt would be refused the same way, so it is not retried like a timeout
    /// (which may be a slow server finishing) or a reset (which may be a restart in progress).
    Refused,
    /// The attempt limit was reached while the failure was still retryable.
    Exhausted,
    /// The next wait would have overrun the budget.
    Budget,
    /// The provider's circuit breaker opened: its recent attempts all failed (`breaker`).
    Breaker,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Done,
    /// Try again, not before `min_wait` when the server asked for one.
    Retry {
        min_wait: Option<Duration>,
        reason: String,
    },
    Stop {
        class: StopClass,
        reason: String,
    },
}

/// The classifier. `now` resolves `Retry-After` HTTP-dates.
#[must_use]
pub fn classify(signal: &Signal<'_>, op: &Operation, now: SystemTime) -> Decision {
    if let Some(kind) = signal.transport {
        return classify_transport(kind, op);
    }
    let Some(status) = signal.status else {
        return Decision::Done;
    };
    if signal.unparseable && (200..300).contains(&status) {
        return stop(StopClass::Unparseable, "the response could not be read");
    }
    let success = (200..300).contains(&status) && signal.class.is_none();
    if success {
        return Decision::Done;
    }
    match header(signal.headers, "x-should-retry") {
        Some(v) if v.eq_ignore_ascii_case("false") => {
            return stop(
                StopClass::Terminal,
                "the server said not to retry (x-should-retry: false)",
            );
        }
        Some(v) if v.eq_ignore_ascii_case("true") => {
            return retry(
                signal,
                now,
                "the server allows a retry (x-should-retry: true)",
            );
        }
        _ => {}
    }
    classify_refusal(signal, status, op, now)
}

fn classify_refusal(signal: &Signal<'_>, status: u16, op: &Operation, now: SystemTime) -> Decision {
    match signal.class {
        Some(ErrorClass::NotFound) => {
            return stop(StopClass::Terminal, "the model does not exist or is gone");
        }
        Some(ErrorClass::Auth) => return stop(StopClass::Terminal, "the credentials were refused"),
        Some(ErrorClass::Quota) => {
            return stop(StopClass::Terminal, "the quota or balance is exhausted");
        }
        // An error inside a 2xx (OpenRouter streams them in-band): the adapter's class is all there is.
        Some(ErrorClass::RateLimited | ErrorClass::Overloaded | ErrorClass::Server)
            if (200..300).contains(&status) =>
        {
            return retry(
                signal,
                now,
                "the provider reported a transient error inside a success response",
            );
        }
        _ => {}
    }
    match status {
        408 => retry(signal, now, "request timeout (408)"),
        409 if *op == Operation::Read => retry(signal, now, "conflict (409)"),
        429 => retry(signal, now, "rate limited (429)"),
        s if server_failing(s) => retry(signal, now, &format!("server error ({s})")),
        s if (400..600).contains(&s) => stop(
            StopClass::Terminal,
            &format!("HTTP {s} will not change on retry"),
        ),
        s => stop(StopClass::Terminal, &format!("unexpected HTTP {s}")),
    }
}

/// A status that says the server is failing, which waiting may fix: every 5xx but 501 (Not
/// Implemented is a property of the request). The circuit breaker counts the same ones.
#[must_use]
pub fn server_failing(status: u16) -> bool {
    status >= 500 && status != 501
}

fn classify_transport(kind: FailureKind, op: &Operation) -> Decision {
    match kind {
        // A probe call stops: its audit says so now and the next audit tries again. A delivery
        // is retried, as nothing reached the receiver and the outbox holds it until it is back.
        FailureKind::Refused if *op == Operation::Read => stop(
            StopClass::Refused,
            "not retried: another attempt would be refused the same way",
        ),
        FailureKind::Refused => Decision::Retry {
            min_wait: None,
            reason: "connection refused".to_owned(),
        },
        // Nothing reached the server: repeating cannot double anything.
        FailureKind::Connect => Decision::Retry {
            min_wait: None,
            reason: "connection failed".to_owned(),
        },
        FailureKind::Timeout | FailureKind::Io if op.repeatable_when_ambiguous() => {
            Decision::Retry {
                min_wait: None,
                reason: format!(
                    "{}: the outcome is unknown, and repeating is safe",
                    kind.as_str()
                ),
            }
        }
        FailureKind::Timeout | FailureKind::Io => stop(
            StopClass::UnknownOutcome,
            "the request may have taken effect and carries no idempotency key",
        ),
        FailureKind::BodyTooLarge => stop(
            StopClass::Unparseable,
            "the response body was over the size cap",
        ),
        FailureKind::Request => stop(StopClass::Terminal, "the request could not be built"),
    }
}

fn stop(class: StopClass, reason: &str) -> Decision {
    Decision::Stop {
        class,
        reason: reason.to_owned(),
    }
}

fn retry(signal: &Signal<'_>, now: SystemTime, reason: &str) -> Decision {
    Decision::Retry {
        min_wait: server_wait(signal, now),
        reason: reason.to_owned(),
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

/// The wait the server asked for: `retry-after-ms`, then `Retry-After` (seconds or HTTP-date),
/// then a hint in the message text. A date in the past means "now"; garbage means no ask.
#[must_use]
pub fn server_wait(signal: &Signal<'_>, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header(signal.headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)));
    }
    if let Some(value) = header(signal.headers, "retry-after") {
        return parse_retry_after(value, now);
    }
    signal.message.and_then(wait_in_message)
}

/// `Retry-After` per RFC 9110 §10.2.3: delay-seconds or an HTTP-date.
#[must_use]
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(1e9)));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Azure and OpenAI put the wait in prose: "Please retry after 7 seconds", "try again in 1.5s".
fn wait_in_message(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    for marker in ["retry after ", "try again in "] {
        let Some(at) = lower.find(marker) else {
            continue;
        };
        let rest = &lower[at + marker.len()..];
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let Ok(value) = number.parse::<f64>() else {
            continue;
        };
        let unit = rest[number.len()..].trim_start();
        let seconds = if unit.starts_with("ms") {
            value / 1000.0
        } else {
            value
        };
        if seconds.is_finite() && seconds >= 0.0 {
            return Some(Duration::from_secs_f64(seconds.min(1e9)));
        }
    }
    None
}

/// Attempts, backoff base and cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base: Duration,
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Full jitter: uniform in `[0, min(cap, base·2^(failures-1))]`, `unit` drawn from `[0, 1)`.
    #[must_use]
    pub fn backoff(&self, failures: u32, unit: f64) -> Duration {
        let exp = f64::from(2u32.pow(failures.saturating_sub(1).min(30)));
        let ceiling = (self.base.as_secs_f64() * exp).min(self.cap.as_secs_f64());
        Duration::from_secs_f64(ceiling * unit.clamp(0.0, 1.0))
    }
}

/// How a sequence of attempts went.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempts<T> {
    /// The last attempt's outcome.
    pub last: T,
    pub count: u32,
    pub waits: Vec<Duration>,
    /// Why it stopped, when it did not end in `Done`.
    pub stopped: Option<Stopped>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stopped {
    pub class: StopClass,
    pub reason: String,
}

/// Runs `attempt` until `decide` says done or stop, the policy's attempts run out, or the next
/// wait would pass `deadline`. `unit` supplies jitter draws in `[0, 1)`.
pub async fn run<T, F, Fut>(
    policy: RetryPolicy,
    deadline: Instant,
    mut attempt: F,
    decide: impl Fn(&T) -> Decision,
    mut unit: impl FnMut() -> f64,
) -> Attempts<T>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut waits = Vec::new();
    let mut count = 0;
    loop {
        count += 1;
        let last = attempt(count).await;
        let (min_wait, reason) = match decide(&last) {
            Decision::Done => {
                return Attempts {
                    last,
                    count,
                    waits,
                    stopped: None,
                };
            }
            Decision::Stop { class, reason } => {
                let stopped = Some(Stopped { class, reason });
                return Attempts {
                    last,
                    count,
                    waits,
                    stopped,
                };
            }
            Decision::Retry { min_wait, reason } => (min_wait, reason),
        };
        let limit = |class, reason| Some(Stopped { class, reason });
        if count >= policy.max_attempts.max(1) {
            let stopped = limit(
                StopClass::Exhausted,
                format!("gave up after {count} attempts: {reason}"),
            );
            return Attempts {
                last,
                count,
                waits,
                stopped,
            };
        }
        let wait = policy
            .backoff(count, unit())
            .max(min_wait.unwrap_or_default());
        let left = deadline.saturating_duration_since(Instant::now());
        if wait >= left {
            let why = match min_wait {
                Some(asked) if asked >= left => format!(
                    "the server asked to wait {} but the budget has {} left: {reason}",
                    crate::transport::human_duration(asked),
                    crate::transport::human_duration(left)
                ),
                _ => format!("the budget has no time left for another attempt: {reason}"),
            };
            return Attempts {
                last,
                count,
                waits,
                stopped: limit(StopClass::Budget, why),
            };
        }
        tokio::time::sleep(wait).await;
        waits.push(wait);
    }
}

/// A jitter source seeded from the clock: not for cryptography, only to spread clients apart.
pub fn jitter_source() -> impl FnMut() -> f64 {
    let mut state = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0x9E37_79B9, |d| d.as_nanos() as u64);
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
