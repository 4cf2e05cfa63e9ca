//! The label set of every family, one struct each (its fields are the labels), and the fixed sets
//! a label can take as enums, so a label value is never a literal that two files must agree on.

use crate::alert::deliver::DeliveryResult;
use crate::closed::closed_set;
use crate::daemon::metrics::family::{LabelValue, Labels};
use crate::finding::{Code, PinStatus, Severity};

closed_set! {
    /// How `modelpin_traffic_spans_received_total` counts a span.
    pub enum SpanResult {
        /// A GenAI span that matched a pin.
        Matched => "matched",
        /// A GenAI span that matched no pin.
        Unmatched => "unmatched",
        /// A span that names no model: not an LLM call.
        NotGenai => "not_genai",
        /// Not an OTLP span of the expected shape.
        Rejected => "rejected",
    }
}

closed_set! {
    /// How `modelpin_calls_total` counts a provider call.
    pub enum CallOutcome {
        Ok => "ok",
        Failed => "failed",
    }
}

closed_set! {
    /// Which tier a behaviour test of `modelpin_probe_p_value` belongs to: the probes (the
    /// `probes` label names them) or the first-token tier, whose border inputs change at every
    /// lock and so are no label.
    pub enum Tier {
        Probes => "probes",
        FirstTokens => "first_tokens",
    }
}

impl Tier {
    /// The tier of a behaviour test.
    #[must_use]
    pub fn of_test(test: crate::stats::TestKind) -> Tier {
        if crate::stats::TestKind::TIER.contains(&test) {
            Tier::FirstTokens
        } else {
            Tier::Probes
        }
    }
}

closed_set! {
    /// The tokens of `modelpin_tokens_spent_total`.
    pub enum Direction {
        Input => "input",
        Output => "output",
    }
}

macro_rules! label_values {
    ($($ty:ty),+) => {
        $(impl LabelValue for $ty {
            fn label(&self) -> String {
                self.as_str().to_owned()
            }
        })+
    };
}

label_values!(
    Tier,
    SpanResult,
    CallOutcome,
    Direction,
    DeliveryResult,
    PinStatus,
    Code
);

/// A finding without a severity (`inconclusive`) is labelled `none`.
impl LabelValue for Option<Severity> {
    fn label(&self) -> String {
        self.map_or("none", Severity::as_str).to_owned()
    }
}

/// Declares a label struct whose field names are its label names.
macro_rules! label_set {
    ($($(#[$meta:meta])* $name:ident { $($field:ident: $ty:ty),* })+) => {
        $(
            $(#[$meta])*
            #[derive(Debug, Clone, PartialEq)]
            pub struct $name {
                $(pub $field: $ty),*
            }

            impl Labels for $name {
                fn pairs(&self) -> Vec<(&'static str, String)> {
                    vec![$((stringify!($field), self.$field.label())),*]
                }
            }
        )+
    };
}

label_set! {
    /// The series without labels.
    NoLabels {}
    PinLabel { pin: String }
    ProviderLabel { provider: String }
    PinStatusLabels { pin: String, provider: String, model: String, status: PinStatus }
    ServedLabels { pin: String, provider: String, model: String, served: String }
    FindingLabels { pin: String, code: Code, severity: Option<Severity> }
    TokenLabels { pin: String, direction: Direction }
    RetirementLabels { pin: String, model: String }
    AuditLabels { pin: String, result: PinStatus }
    CallLabels { provider: String, outcome: CallOutcome }
    ProbeLabels { pin: String, tier: Tier, probes: String, test: String }
    BuildLabels { version: String }
    NotificationLabels { channel: String, result: DeliveryResult }
    TrafficServedLabels { pin: String, served: String }
    SpanResultLabel { result: SpanResult }
    StatusLabel { status: u16 }
}

impl PinLabel {
    #[must_use]
    pub fn of(pin: &str) -> PinLabel {
        PinLabel {
            pin: pin.to_owned(),
        }
    }
}
