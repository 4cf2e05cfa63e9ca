//! Prometheus metrics, kept in memory and rendered in the text exposition format.
//!
//! Several daemons over disjoint pin sets sit behind one Prometheus, so every series carries its
//! `pin` (and `provider`, `model` where that is what it measures): the same metric names from two
//! daemons never collide. Counters end in `_total`, times are `_seconds`, and every family has
//! `HELP` and `TYPE` lines (checked by `promtool check metrics` in the tests). Each family is a
//! typed field (`family`), registered once with its help text; its labels are a struct and fixed
//! label values enums (`labels`), so no series is looked up or labelled by string at runtime.

mod audit;
mod family;
pub mod labels;

use audit::mismatch;
pub use audit::{judged, record, spent};

use std::collections::BTreeMap;

use crate::alert::deliver::DeliveryResult;
use crate::config::Config;
use crate::finding::PinStatus;
use crate::report::PinReport;

use family::{Counter, Exposed, Family, Gauge};
use labels::{
    AuditLabels, BuildLabels, CallLabels, CallOutcome, Direction, FindingLabels, NoLabels,
    NotificationLabels, PinLabel, PinStatusLabels, ProbeLabels, ProviderLabel, RetirementLabels,
    ServedLabels, SpanResult, SpanResultLabel, StatusLabel, TokenLabels, TrafficServedLabels,
};

/// The exact content type Prometheus expects for the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Statuses of `modelpin_traffic_requests_total` present from the first scrape.
const TRAFFIC_STATUSES: [u16; 2] = [200, 429];

/// Every family the daemon exports.
pub struct Metrics {
    pin_status: Family<PinStatusLabels, Gauge>,
    served_model_info: Family<ServedLabels, Gauge>,
    served_model_mismatch: Family<PinLabel, Gauge>,
    findings: Family<FindingLabels, Gauge>,
    cost_per_request_usd: Family<PinLabel, Gauge>,
    tokens_spent_total: Family<TokenLabels, Counter>,
    cost_usd_total: Family<PinLabel, Counter>,
    retirement_timestamp_seconds: Family<RetirementLabels, Gauge>,
    audits_total: Family<AuditLabels, Counter>,
    audits_skipped_total: Family<PinLabel, Counter>,
    calls_total: Family<CallLabels, Counter>,
    retries_total: Family<ProviderLabel, Counter>,
    last_audit_timestamp_seconds: Family<PinLabel, Gauge>,
    audit_duration_seconds: Family<PinLabel, Gauge>,
    probe_p_value: Family<ProbeLabels, Gauge>,
    behaviour_evidence: Family<PinLabel, Gauge>,
    behaviour_evidence_threshold: Family<PinLabel, Gauge>,
    notifications_total: Family<NotificationLabels, Counter>,
    store_write_failures_total: Family<NoLabels, Counter>,
    traffic_spans_total: Family<TrafficServedLabels, Counter>,
    traffic_spans_received_total: Family<SpanResultLabel, Counter>,
    traffic_requests_total: Family<StatusLabel, Counter>,
    traffic_served_model_mismatch: Family<PinLabel, Gauge>,
    leader: Family<NoLabels, Gauge>,
    lease_term: Family<NoLabels, Gauge>,
    build_info: Family<BuildLabels, Gauge>,
    breaker_open: Family<ProviderLabel, Gauge>,
    breaker_trips_total: Family<ProviderLabel, Counter>,
    breaker_calls_not_made_total: Family<ProviderLabel, Counter>,
    /// The breakers' totals at the last look, by provider, for `breakers`.
    breakers_seen: std::sync::Mutex<BTreeMap<String, (u64, u64)>>,
}

/// `modelpin_leader` and `modelpin_lease_term`.
fn fleet_families() -> (Family<NoLabels, Gauge>, Family<NoLabels, Gauge>) {
    (
        Family::new(
            "modelpin_leader",
            "1 while this daemon leads its fleet (audits, sends notifications), 0 on a standby; 1 on a store of its own.",
        ),
        Family::new(
            "modelpin_lease_term",
            "The fleet lease's current term: one more on every change of leader (0 on a store of its own).",
        ),
    )
}

/// `modelpin_breaker_open`, `modelpin_breaker_trips_total` and
/// `modelpin_breaker_calls_not_made_total`.
fn breaker_families() -> (
    Family<ProviderLabel, Gauge>,
    Family<ProviderLabel, Counter>,
    Family<ProviderLabel, Counter>,
) {
    (
        Family::new(
            "modelpin_breaker_open",
            "1 while the provider's circuit breaker is open: its recent attempts all failed and its calls are not made until a trial call gets through.",
        ),
        Family::new(
            "modelpin_breaker_trips_total",
            "Times the provider's circuit breaker opened.",
        ),
        Family::new(
            "modelpin_breaker_calls_not_made_total",
            "Planned calls not made because the provider's circuit breaker was open.",
        ),
    )
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    #[must_use]
    // One registration (name and help) per family: long, and nothing to gain from splitting it.
    #[allow(clippy::too_many_lines)]
    pub fn new() -> Metrics {
        let metrics = Metrics {
            pin_status: Family::new(
                "modelpin_pin_status",
                "1 for the pin's status after its last audit (ok, warning, drift, inconclusive).",
            ),
            served_model_info: Family::new(
                "modelpin_served_model_info",
                "1 for each model ID that served the pin in its last audit.",
            ),
            served_model_mismatch: Family::new(
                "modelpin_served_model_mismatch",
                "1 when the last audit served a model the pin does not accept.",
            ),
            findings: Family::new(
                "modelpin_findings",
                "Findings of the pin's last audit, by code and severity.",
            ),
            cost_per_request_usd: Family::new(
                "modelpin_cost_per_request_usd",
                "Mean cost of one probe call in the last audit, USD.",
            ),
            tokens_spent_total: Family::new(
                "modelpin_tokens_spent_total",
                "Tokens spent on probe calls, by pin and direction.",
            ),
            cost_usd_total: Family::new(
                "modelpin_cost_usd_total",
                "Estimated USD spent on probe calls.",
            ),
            retirement_timestamp_seconds: Family::new(
                "modelpin_retirement_timestamp_seconds",
                "Unix time of the pinned model's known retirement; days left: (this - time()) / 86400.",
            ),
            audits_total: Family::new(
                "modelpin_audits_total",
                "Audits finished, by pin and result.",
            ),
            audits_skipped_total: Family::new(
                "modelpin_audits_skipped_total",
                "Scheduled audits skipped because the pin's previous audit was still running.",
            ),
            calls_total: Family::new(
                "modelpin_calls_total",
                "Provider calls, by provider and outcome.",
            ),
            retries_total: Family::new(
                "modelpin_retries_total",
                "Retried provider call attempts, by provider.",
            ),
            last_audit_timestamp_seconds: Family::new(
                "modelpin_last_audit_timestamp_seconds",
                "Unix time the pin's last audit finished.",
            ),
            audit_duration_seconds: Family::new(
                "modelpin_audit_duration_seconds",
                "Wall time of the pin's last audit.",
            ),
            probe_p_value: Family::new(
                "modelpin_probe_p_value",
                "Adjusted p-value of each behaviour test in the pin's last audit.",
            ),
            behaviour_evidence: Family::new(
                "modelpin_behaviour_evidence",
                "Behaviour evidence accumulated since the pin's lock (Shiryaev-Roberts statistic); behavior_drift at modelpin_behaviour_evidence_threshold.",
            ),
            behaviour_evidence_threshold: Family::new(
                "modelpin_behaviour_evidence_threshold",
                "The accumulated evidence's alarm threshold: at least this many audits to a false alarm on average.",
            ),
            notifications_total: Family::new(
                "modelpin_notifications_total",
                "Alert notifications, by channel and result.",
            ),
            store_write_failures_total: Family::new(
                "modelpin_store_write_failures_total",
                "Failed attempts to write an audit to the store (each audit is retried until stored).",
            ),
            traffic_spans_total: Family::new(
                "modelpin_traffic_spans_total",
                "GenAI spans received on /v1/traces that matched the pin, by served model.",
            ),
            traffic_spans_received_total: Family::new(
                "modelpin_traffic_spans_received_total",
                "Spans received on /v1/traces, by result (matched, unmatched, not_genai, rejected).",
            ),
            traffic_requests_total: Family::new(
                "modelpin_traffic_requests_total",
                "Requests to /v1/traces, by HTTP status.",
            ),
            traffic_served_model_mismatch: Family::new(
                "modelpin_traffic_served_model_mismatch",
                "1 when the pin's last traffic verdict saw a model the pin does not accept.",
            ),
            leader: fleet_families().0,
            lease_term: fleet_families().1,
            build_info: Family::new(
                "modelpin_build_info",
                "1, labelled with the running modelpin's version; absent when no daemon is up (the shipped rule ModelpinDaemonDown).",
            ),
            breaker_open: breaker_families().0,
            breaker_trips_total: breaker_families().1,
            breaker_calls_not_made_total: breaker_families().2,
            breakers_seen: std::sync::Mutex::default(),
        };
        metrics.build_info.set(
            BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            1.0,
        );
        metrics.store_write_failures_total.declare(NoLabels {});
        for result in SpanResult::ALL {
            metrics
                .traffic_spans_received_total
                .declare(SpanResultLabel { result });
        }
        for status in TRAFFIC_STATUSES {
            metrics
                .traffic_requests_total
                .declare(StatusLabel { status });
        }
        metrics
    }

    /// Every family, for the exposition. Destructured whole, so a family added to the struct
    /// does not compile until it is listed here too.
    fn families(&self) -> [&dyn Exposed; 29] {
        let Metrics {
            pin_status,
            served_model_info,
            served_model_mismatch,
            findings,
            cost_per_request_usd,
            tokens_spent_total,
            cost_usd_total,
            retirement_timestamp_seconds,
            audits_total,
            audits_skipped_total,
            calls_total,
            retries_total,
            last_audit_timestamp_seconds,
            audit_duration_seconds,
            probe_p_value,
            behaviour_evidence,
            behaviour_evidence_threshold,
            notifications_total,
            store_write_failures_total,
            traffic_spans_total,
            traffic_spans_received_total,
            traffic_requests_total,
            traffic_served_model_mismatch,
            leader,
            lease_term,
            build_info,
            breaker_open,
            breaker_trips_total,
            breaker_calls_not_made_total,
            breakers_seen: _,
        } = self;
        [
            pin_status,
            served_model_info,
            served_model_mismatch,
            findings,
            cost_per_request_usd,
            tokens_spent_total,
            cost_usd_total,
            retirement_timestamp_seconds,
            audits_total,
            audits_skipped_total,
            calls_total,
            retries_total,
            last_audit_timestamp_seconds,
            audit_duration_seconds,
            probe_p_value,
            behaviour_evidence,
            behaviour_evidence_threshold,
            notifications_total,
            store_write_failures_total,
            traffic_spans_total,
            traffic_spans_received_total,
            traffic_requests_total,
            traffic_served_model_mismatch,
            leader,
            lease_term,
            build_info,
            breaker_open,
            breaker_trips_total,
            breaker_calls_not_made_total,
        ]
    }

    /// Counters at 0 for every label the config makes known (pins, providers, channels), so a
    /// rate over them works from the first scrape; existing counts are kept.
    pub fn declare(&self, config: &Config) {
        for pin in &config.pins {
            let id = &pin.id;
            self.audits_skipped_total.declare(PinLabel::of(id));
            for result in PinStatus::ALL {
                self.audits_total.declare(AuditLabels {
                    pin: id.clone(),
                    result,
                });
            }
            for direction in Direction::ALL {
                self.tokens_spent_total.declare(TokenLabels {
                    pin: id.clone(),
                    direction,
                });
            }
            self.cost_usd_total.declare(PinLabel::of(id));
        }
        for provider in &config.providers {
            for outcome in CallOutcome::ALL {
                self.calls_total.declare(CallLabels {
                    provider: provider.name.clone(),
                    outcome,
                });
            }
            let label = || ProviderLabel {
                provider: provider.name.clone(),
            };
            self.retries_total.declare(label());
            self.breaker_trips_total.declare(label());
            self.breaker_calls_not_made_total.declare(label());
            self.breaker_open.declare(label());
        }
        for channel in &config.alerts {
            for result in DeliveryResult::ALL {
                self.notifications_total.declare(NotificationLabels {
                    channel: channel.name.clone(),
                    result,
                });
            }
        }
    }

    /// The providers' circuit breakers as they stand. The breakers' counts only grow (a reload
    /// carries them over, `Breakers::continue_from`); the counters add what is new since the
    /// last look. A smaller count is an audit of the set a reload replaced finishing late:
    /// nothing new.
    pub fn breakers(&self, breakers: &crate::breaker::Breakers) {
        let mut seen = self.breakers_seen.lock().expect("breakers seen lock");
        for b in breakers.snapshot() {
            let label = || ProviderLabel {
                provider: b.provider.clone(),
            };
            self.breaker_open.set(label(), f64::from(u8::from(b.open)));
            let (trips, not_made) = seen.get(&b.provider).copied().unwrap_or_default();
            let new = |now: u64, before: u64| now.saturating_sub(before);
            self.breaker_trips_total
                .inc_by(label(), new(b.trips, trips) as f64);
            self.breaker_calls_not_made_total
                .inc_by(label(), new(b.not_made, not_made) as f64);
            seen.insert(
                b.provider.clone(),
                (trips.max(b.trips), not_made.max(b.not_made)),
            );
        }
    }

    /// Whether this daemon leads, and the lease's term.
    pub fn fleet(&self, leader: bool, term: i64) {
        self.leader.set(NoLabels {}, f64::from(u8::from(leader)));
        self.lease_term.set(NoLabels {}, term as f64);
    }

    /// A scheduled audit was skipped: the pin's previous one still ran.
    pub fn audit_skipped(&self, pin: &str) {
        self.audits_skipped_total.inc(PinLabel::of(pin));
    }

    /// An audit could not be written to the store.
    pub fn store_write_failed(&self) {
        self.store_write_failures_total.inc(NoLabels {});
    }

    /// One request to `/v1/traces`, by the status it was answered with.
    pub fn traffic_request(&self, status: u16) {
        self.traffic_requests_total.inc(StatusLabel { status });
    }

    /// The spans of one request: matched ones per (pin, served label), and all by result.
    pub fn traffic_spans(
        &self,
        served: &BTreeMap<(String, String), u64>,
        results: [(SpanResult, u64); 4],
    ) {
        for ((pin, served), n) in served {
            let labels = TrafficServedLabels {
                pin: pin.clone(),
                served: served.clone(),
            };
            self.traffic_spans_total.inc_by(labels, *n as f64);
        }
        for (result, n) in results {
            self.traffic_spans_received_total
                .inc_by(SpanResultLabel { result }, n as f64);
        }
    }

    /// A pin's traffic verdict.
    pub fn traffic_verdict(&self, p: &PinReport) {
        self.traffic_served_model_mismatch
            .set(PinLabel::of(&p.id), mismatch(p));
    }

    /// One delivery attempt of a notification.
    pub fn notification(&self, channel: &str, result: DeliveryResult) {
        self.notifications_total.inc(NotificationLabels {
            channel: channel.to_owned(),
            result,
        });
    }

    /// The text exposition format, families in name order.
    #[must_use]
    pub fn render(&self) -> String {
        let mut families = self.families();
        families.sort_by_key(|family| family.name());
        let mut out = String::new();
        for family in families {
            family.render(&mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_help_type_and_escaped_labels() {
        let m = Metrics::new();
        let audit = || AuditLabels {
            pin: "a".into(),
            result: PinStatus::Ok,
        };
        m.audits_total.inc(audit());
        m.audits_total.inc(audit());
        m.served_model_info.set(
            ServedLabels {
                pin: "we\"ird\\\n".into(),
                provider: "p".into(),
                model: "m".into(),
                served: "x".into(),
            },
            1.0,
        );
        let text = m.render();
        assert!(text.contains("# HELP modelpin_audits_total Audits finished, by pin and result.\n# TYPE modelpin_audits_total counter\nmodelpin_audits_total{pin=\"a\",result=\"ok\"} 2\n"), "{text}");
        assert!(
            text.contains(
                r#"modelpin_served_model_info{model="m",pin="we\"ird\\\n",provider="p",served="x"} 1"#
            ),
            "{text}"
        );
        m.served_model_info.retain(|l| l.served != "x");
        assert!(!m.render().contains("served=\"x\""));
    }

    #[test]
    fn every_family_has_help_and_type_from_the_first_scrape() {
        let m = Metrics::new();
        let text = m.render();
        let names: std::collections::BTreeSet<&str> =
            m.families().iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), 29, "each family registered once");
        for name in names {
            assert!(text.contains(&format!("# HELP {name} ")), "{text}");
            assert!(text.contains(&format!("# TYPE {name} ")), "{text}");
        }
        assert!(
            text.contains("modelpin_store_write_failures_total 0\n"),
            "{text}"
        );
    }

    #[test]
    fn declared_counters_start_at_zero_and_keep_their_counts() {
        let m = Metrics::new();
        let config = crate::config::tests_support::minimal_config();
        m.declare(&config);
        m.audit_skipped(&config.pins[0].id);
        m.declare(&config);
        let text = m.render();
        let pin = &config.pins[0].id;
        assert!(
            text.contains(&format!(
                "modelpin_audits_skipped_total{{pin=\"{pin}\"}} 1\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "modelpin_audits_total{{pin=\"{pin}\",result=\"drift\"}} 0\n"
            )),
            "{text}"
        );
        let provider = &config.providers[0].name;
        assert!(
            text.contains(&format!(
                "modelpin_calls_total{{outcome=\"failed\",provider=\"{provider}\"}} 0\n"
            )),
            "{text}"
        );
    }

    /// The span results counted from the first scrape are every result the receiver counts by.
    #[test]
    fn span_results_are_present_at_zero_from_the_first_scrape() {
        let text = Metrics::new().render();
        for result in SpanResult::ALL {
            let line = format!(
                "modelpin_traffic_spans_received_total{{result=\"{}\"}} 0\n",
                result.as_str()
            );
            assert!(text.contains(&line), "{text}");
        }
    }
}
