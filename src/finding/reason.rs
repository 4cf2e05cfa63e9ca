//! Why a call produced no answer, as data: the report shows each reason in words, and the "what
//! to do" line is chosen from the variant, never by searching those words.
//!
//! A reason's text is its JSON key in the report (`evidence.reasons`), so `Display` keeps the
//! exact wording the contract has always shown; the remedy is a `match`, so a new kind of failure
//! does not compile until it says what a user can do about it.

use std::fmt;
use std::time::Duration;

use serde::{Serialize, Serializer};

use crate::provider::ErrorClass;
use crate::retry::StopClass;
use crate::transport::FailureKind;

/// Why a planned call was not sent, or was dropped in flight.
#[derive(Debug, Clone, PartialEq)]
pub enum Halt {
    /// An earlier call of the pin got a terminal refusal; further calls would only repeat it.
    Refused { class: ErrorClass, message: String },
    /// The pin's first call timed out on every attempt: the provider is not answering.
    Unresponsive { attempts: u32, timeout: Duration },
    /// A shutdown signal or Ctrl-C.
    Interrupted,
    /// The pin's wall-time budget (`settings.budget`) ran out.
    Budget(Duration),
    /// The audit's spend cap was reached (USD).
    SpendCap { cap: f64, spent: f64 },
    /// A call reported a token count no call can have (`field` = `value`): its cost is unknown,
    /// so the spend cap can no longer be kept.
    SpendUnknown {
        cap: f64,
        field: &'static str,
        value: f64,
    },
    /// Never reached before the pin's calls ended.
    NotStarted,
    /// The lock holds no baseline for the pin's model: the answers would be compared with
    /// nothing, so no call is spent on them.
    NoBaseline,
    /// Dropped while waiting for an answer, for `halt`; `message` says what it was waiting on.
    InFlight { halt: Box<Halt>, message: String },
    /// The provider's circuit breaker is open: its last attempts failed in a row, the last as
    /// `last`. (No count: a reason is told apart by what it says, and the count keeps growing
    /// while calls wait their turn, which would split one reason into many.)
    BreakerOpen { provider: String, last: String },
}

impl From<crate::breaker::Open> for Halt {
    fn from(open: crate::breaker::Open) -> Halt {
        Halt::BreakerOpen {
            provider: open.provider,
            last: open.last,
        }
    }
}

impl fmt::Display for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Halt::Refused { class, message } => write!(
                f,
                "not sent: an earlier call was refused ({}: {message})",
                class.as_str()
            ),
            Halt::Unresponsive { attempts, timeout } => write!(
                f,
                "the provider did not answer: the pin's first call timed out {} ({} each); its other calls were not sent",
                crate::words::count(u64::from(*attempts), "time"),
                crate::transport::human_duration(*timeout)
            ),
            Halt::Interrupted => f.write_str("the audit was interrupted"),
            Halt::Budget(budget) => write!(
                f,
                "the pin's audit budget ({}) was spent",
                crate::transport::human_duration(*budget)
            ),
            Halt::SpendCap { cap, spent } => write!(
                f,
                "the audit's spend cap (${cap:.2}) was reached (${spent:.4} spent)"
            ),
            Halt::SpendUnknown { cap, field, value } => write!(
                f,
                "a call reported {field} = {value}, more tokens than any call can count, so its cost is unknown and the audit's spend cap (${cap:.2}) can no longer be kept"
            ),
            Halt::NotStarted => f.write_str("not started"),
            Halt::NoBaseline => f.write_str(
                "not sent: modelpin.lock has no baseline for the pin, so there was nothing to compare the answers with",
            ),
            Halt::InFlight { halt, message } => write!(f, "{halt} (in flight: {message})"),
            // No counts or times in the text: it is the reason's key, the same for every call
            // the breaker stopped (the evidence counts them).
            Halt::BreakerOpen { provider, last, .. } => write!(
                f,
                "not sent: the circuit breaker for provider `{provider}` is open (its last attempts in a row all failed, the last: {last})"
            ),
        }
    }
}

/// How one call ended without an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// The provider answered with a refusal.
    Refused {
        class: ErrorClass,
        status: u16,
        message: String,
        stopped: Option<Stop>,
    },
    /// A response arrived that could not be read.
    Unparseable { why: String, stopped: Option<Stop> },
    /// No response: refused connection, timeout, broken connection.
    NoAnswer {
        kind: FailureKind,
        message: String,
        stopped: Option<Stop>,
    },
    /// Not sent, because of `Halt`.
    Skipped(Halt),
    /// Dropped in flight or never started, because of `Halt`.
    Cancelled(Halt),
}

/// Why the retry layer gave up on a call, when that adds to its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub class: StopClass,
    pub reason: String,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stopped = match self {
            Reason::Refused {
                class,
                status,
                message,
                stopped,
            } => {
                write!(f, "{} (HTTP {status}): {message}", class.as_str())?;
                stopped
            }
            Reason::Unparseable { why, stopped } => {
                write!(f, "unparseable response: {why}")?;
                stopped
            }
            // A refusal's message names it already ("HOST:PORT refused the connection").
            Reason::NoAnswer {
                kind: FailureKind::Refused,
                message,
                stopped,
            } => {
                write!(f, "{message}")?;
                stopped
            }
            Reason::NoAnswer {
                kind,
                message,
                stopped,
            } => {
                write!(f, "{}: {message}", kind.as_str())?;
                stopped
            }
            Reason::Skipped(halt) => return write!(f, "skipped: {halt}"),
            Reason::Cancelled(halt) => return write!(f, "cancelled: {halt}"),
        };
        match stopped {
            Some(stop) => write!(f, " — {}", stop.reason),
            None => Ok(()),
        }
    }
}

/// What a user can do about an unmeasured pin, most specific first: when reasons differ, the
/// first in this order is the advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Remedy {
    ProviderKey,
    Quota,
    SpendCap,
    Rerun,
    Budget,
    Usage,
    ImplausibleUsage,
    Connection,
    Reachability,
    ProviderFailing,
    Instrumentation,
    Relock,
}

impl Remedy {
    /// The "what to do" line for pin `pin`.
    #[must_use]
    pub fn advice(self, pin: &str) -> String {
        match self {
            Remedy::ProviderKey => {
                "check the provider key: the variable named by `api_key_env` must hold a valid key"
                    .to_owned()
            }
            Remedy::Quota => {
                "top up or raise the provider account's quota, then run the check again".to_owned()
            }
            Remedy::SpendCap => {
                "raise the cap (`--max-cost` or `max_cost_usd`) or lower `samples`".to_owned()
            }
            Remedy::Rerun => {
                format!("run the check again and let it finish (`modelpin check --pin {pin}`)")
            }
            Remedy::Budget => {
                "raise `budget` in [settings], or lower `samples` or `timeout`".to_owned()
            }
            Remedy::Usage => {
                "use an endpoint that reports `usage` (some gateways and proxies drop it)"
                    .to_owned()
            }
            Remedy::ImplausibleUsage => "the provider (or a gateway in front of it) reports token counts no call can have: report it to them; until it is fixed the pin's tokens, cost and spend are unmeasured".to_owned(),
            Remedy::Connection => "check the provider's `base_url` and that this machine can reach it (nothing answered the connection); retrying will not help until it does".to_owned(),
            Remedy::Reachability => {
                "check that the provider is reachable and its status page; raise `timeout` if it is slow"
                    .to_owned()
            }
            Remedy::ProviderFailing => {
                "the provider is failing or overloaded: check its status page, then run the check again"
                    .to_owned()
            }
            Remedy::Instrumentation => "make the application's instrumentation record the answering model (`gen_ai.response.model`, or OpenInference `llm.model_name`)".to_owned(),
            Remedy::Relock => format!(
                "ask the provider why its answers changed shape; if that is expected, record a new baseline with `modelpin lock --pin {pin}`"
            ),
        }
    }
}

impl Halt {
    fn remedy(&self) -> Option<Remedy> {
        match self {
            Halt::Refused { class, .. } => class_remedy(*class),
            Halt::Unresponsive { .. } => Some(Remedy::Reachability),
            Halt::Interrupted => Some(Remedy::Rerun),
            Halt::Budget(_) => Some(Remedy::Budget),
            Halt::SpendCap { .. } => Some(Remedy::SpendCap),
            Halt::SpendUnknown { .. } => Some(Remedy::ImplausibleUsage),
            Halt::NotStarted | Halt::NoBaseline => None,
            Halt::InFlight { halt, .. } => halt.remedy(),
            Halt::BreakerOpen { .. } => Some(Remedy::ProviderFailing),
        }
    }
}

fn class_remedy(class: ErrorClass) -> Option<Remedy> {
    match class {
        ErrorClass::Auth => Some(Remedy::ProviderKey),
        ErrorClass::Quota => Some(Remedy::Quota),
        ErrorClass::RateLimited | ErrorClass::Overloaded | ErrorClass::Server => {
            Some(Remedy::ProviderFailing)
        }
        ErrorClass::NotFound | ErrorClass::InvalidRequest => None,
    }
}

impl Reason {
    /// What would let this call be answered next time, when the reason says.
    #[must_use]
    pub fn remedy(&self) -> Option<Remedy> {
        let (own, stopped) = match self {
            Reason::Refused { class, stopped, .. } => (class_remedy(*class), stopped),
            Reason::Unparseable { stopped, .. } => (None, stopped),
            Reason::NoAnswer { kind, stopped, .. } => (kind_remedy(*kind), stopped),
            Reason::Skipped(halt) | Reason::Cancelled(halt) => return halt.remedy(),
        };
        let budget = stopped
            .as_ref()
            .is_some_and(|s| s.class == StopClass::Budget)
            .then_some(Remedy::Budget);
        own.into_iter().chain(budget).min()
    }

    /// Not sent because of an earlier answer: says less than the answer it repeats.
    #[must_use]
    pub fn is_skip(&self) -> bool {
        matches!(self, Reason::Skipped(_))
    }
}

fn kind_remedy(kind: FailureKind) -> Option<Remedy> {
    match kind {
        FailureKind::Refused | FailureKind::Connect => Some(Remedy::Connection),
        FailureKind::Timeout | FailureKind::Io => Some(Remedy::Reachability),
        FailureKind::BodyTooLarge | FailureKind::Request => None,
    }
}

/// Reasons with how many calls ended for each; shown as a JSON object keyed by the reason's
/// words, in their sorted order (as the report always showed them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reasons(Vec<(Reason, u64)>);

impl Reasons {
    /// Counts `n` more calls that ended for `reason`.
    pub fn add(&mut self, reason: Reason, n: u64) {
        match self.0.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, count)) => *count += n,
            None => self.0.push((reason, n)),
        }
    }

    /// Adds every reason of `other`.
    pub fn extend(&mut self, other: &Reasons) {
        for (reason, n) in &other.0 {
            self.add(reason.clone(), *n);
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each reason with its words and count, in the words' order.
    #[must_use]
    pub fn sorted(&self) -> Vec<(String, &Reason, u64)> {
        let mut rows: Vec<(String, &Reason, u64)> =
            self.0.iter().map(|(r, n)| (r.to_string(), r, *n)).collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows
    }

    /// The reason a user reads first: the first in order that is not a skip (a skip only
    /// repeats another answer), else the first.
    #[must_use]
    pub fn headline(&self) -> Option<String> {
        let rows = self.sorted();
        rows.iter()
            .find(|(_, r, _)| !r.is_skip())
            .or_else(|| rows.first())
            .map(|(text, _, _)| text.clone())
    }

    /// Calls a provider's open circuit breaker kept from being made, with the provider.
    #[must_use]
    pub fn breaker(&self) -> Option<(&str, u64)> {
        let mut provider = None;
        let mut calls = 0;
        for (reason, n) in &self.0 {
            if let Reason::Skipped(Halt::BreakerOpen { provider: p, .. }) = reason {
                provider = Some(p.as_str());
                calls += n;
            }
        }
        provider.map(|p| (p, calls))
    }

    /// The most specific remedy any of the reasons has.
    #[must_use]
    pub fn remedy(&self) -> Option<Remedy> {
        self.0.iter().filter_map(|(r, _)| r.remedy()).min()
    }

    /// Calls counted under a `Cancelled` reason.
    #[must_use]
    pub fn cancelled(&self) -> u64 {
        self.0
            .iter()
            .filter(|(r, _)| matches!(r, Reason::Cancelled(_)))
            .map(|(_, n)| n)
            .sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Reason, u64)> {
        self.0.iter().map(|(r, n)| (r, *n))
    }
}

impl Serialize for Reasons {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let rows = self.sorted();
        let mut map = s.serialize_map(Some(rows.len()))?;
        for (text, _, n) in rows {
            map.serialize_entry(&text, &n)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(class: ErrorClass, status: u16) -> Reason {
        Reason::Refused {
            class,
            status,
            message: "no".into(),
            stopped: None,
        }
    }

    #[test]
    fn reasons_read_as_the_report_always_wrote_them() {
        let cases = [
            (refused(ErrorClass::Auth, 401), "auth (HTTP 401): no"),
            (
                Reason::NoAnswer {
                    kind: FailureKind::Timeout,
                    message: "no complete response within 1s".into(),
                    stopped: Some(Stop {
                        class: StopClass::Exhausted,
                        reason: "4 attempts".into(),
                    }),
                },
                "timeout: no complete response within 1s — 4 attempts",
            ),
            (
                Reason::Cancelled(Halt::SpendCap {
                    cap: 0.1,
                    spent: 0.10234,
                }),
                "cancelled: the audit's spend cap ($0.10) was reached ($0.1023 spent)",
            ),
            (
                Reason::Cancelled(Halt::InFlight {
                    halt: Box::new(Halt::Budget(Duration::from_secs(600))),
                    message: "x".into(),
                }),
                "cancelled: the pin's audit budget (10m) was spent (in flight: x)",
            ),
            (
                Reason::Skipped(Halt::Refused {
                    class: ErrorClass::Quota,
                    message: "m".into(),
                }),
                "skipped: not sent: an earlier call was refused (quota: m)",
            ),
            (
                Reason::Cancelled(Halt::NotStarted),
                "cancelled: not started",
            ),
        ];
        for (reason, text) in cases {
            assert_eq!(reason.to_string(), text);
        }
    }

    #[test]
    fn the_most_specific_remedy_wins_whatever_the_order() {
        let table: [(&[Reason], Option<Remedy>); 7] = [
            (&[refused(ErrorClass::Auth, 401)], Some(Remedy::ProviderKey)),
            (
                &[
                    Reason::Cancelled(Halt::Interrupted),
                    refused(ErrorClass::Quota, 429),
                ],
                Some(Remedy::Quota),
            ),
            (
                &[Reason::Cancelled(Halt::Budget(Duration::from_secs(1)))],
                Some(Remedy::Budget),
            ),
            (
                &[Reason::NoAnswer {
                    kind: FailureKind::Connect,
                    message: "refused".into(),
                    stopped: None,
                }],
                Some(Remedy::Connection),
            ),
            (
                &[Reason::NoAnswer {
                    kind: FailureKind::Timeout,
                    message: "slow".into(),
                    stopped: Some(Stop {
                        class: StopClass::Budget,
                        reason: "next wait passes the budget".into(),
                    }),
                }],
                Some(Remedy::Budget),
            ),
            (
                &[refused(ErrorClass::Server, 500)],
                Some(Remedy::ProviderFailing),
            ),
            (&[Reason::Cancelled(Halt::NotStarted)], None),
        ];
        for (reasons, want) in table {
            let mut all = Reasons::default();
            for r in reasons {
                all.add(r.clone(), 1);
            }
            assert_eq!(all.remedy(), want, "{reasons:?}");
        }
    }

    #[test]
    fn counts_merge_and_serialise_sorted_by_their_words() {
        let mut reasons = Reasons::default();
        reasons.add(Reason::Cancelled(Halt::Interrupted), 2);
        reasons.add(refused(ErrorClass::Auth, 401), 1);
        reasons.add(Reason::Cancelled(Halt::Interrupted), 3);
        let json = serde_json::to_string(&reasons).unwrap();
        assert_eq!(
            json,
            r#"{"auth (HTTP 401): no":1,"cancelled: the audit was interrupted":5}"#
        );
        assert_eq!(reasons.cancelled(), 5);
        assert_eq!(reasons.headline().as_deref(), Some("auth (HTTP 401): no"));
    }
}
