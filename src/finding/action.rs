//! What to do about each finding: one line per kind of evidence, specific to the pin and, where
//! the evidence names it, the model to move to or the ID to accept. A `match` on the typed
//! evidence, before it becomes JSON, so a new code or failure reason does not compile until it
//! says what a user should do, and no advice is chosen by searching the message.

use crate::finding::evidence::{Evidence, Unmeasured};
use crate::finding::reason::Remedy;
use crate::lifecycle::Lifecycle;

impl Evidence {
    /// The next step for this finding on pin `pin`.
    #[must_use]
    pub fn action(&self, pin: &str) -> String {
        let relock = format!("`modelpin lock --pin {pin}` and commit modelpin.lock");
        match self {
            Evidence::ServedModelMismatch(e) => match e.unexpected.keys().next() {
                // A pin already on a dated snapshot has no steadier ID to move to.
                Some(id) if crate::lifecycle::is_dated(&e.requested) => format!(
                    "if `{id}` is a change you accept, add it to the pin's `accept` (or run {relock}); otherwise raise it with the provider: `{}` is already a dated snapshot",
                    e.requested
                ),
                Some(id) => format!(
                    "if `{id}` is a change you accept, add it to the pin's `accept` (or run {relock}); otherwise pin a dated snapshot and raise it with the provider"
                ),
                None => format!("if the change is wanted, run {relock}"),
            },
            Evidence::UpstreamMismatch(_) => format!(
                "add the host to the pin's `upstream` if it is acceptable, or restrict the provider routing to the hosts you trust; then run {relock}"
            ),
            Evidence::TokenizerChanged(_)
            | Evidence::CostChanged(_)
            | Evidence::BehaviorDrift(_)
            | Evidence::DriftAccumulated(_) => {
                format!(
                    "another model (or template) answers: confirm with the provider; if the change is wanted, run {relock}"
                )
            }
            Evidence::ModelNotFound(e) => move_to(replacement(e.lifecycle.as_ref()), &relock),
            Evidence::RetiredStillServed(e) => move_to(replacement(Some(&e.lifecycle)), &relock),
            Evidence::DeprecationScheduled(life) => plan_move(replacement(Some(life)), &relock),
            Evidence::SunsetAnnounced(e) => plan_move(
                e.signals.iter().find_map(|s| s.replacement.clone()),
                &relock,
            ),
            Evidence::FingerprintChanged(_) => {
                "nothing unless another check moves: the provider changed its serving configuration".to_owned()
            }
            Evidence::ScriptChanged(_) => {
                "read the answers in the evidence and ask the provider what changed: letters of a new script behind the same ID have been a serving fault before (Anthropic, September 2025)".to_owned()
            }
            Evidence::MaxTokensExceeded(_) => {
                "give the pin a `price` and keep `max_cost_usd` so the spend stays bounded; raise the probe's `max_tokens` if the longer answers are expected".to_owned()
            }
            Evidence::NoBaseline(_) | Evidence::ProbeChanged(_) => format!("run {relock}"),
            Evidence::Inconclusive(why) => why.action(pin),
        }
    }
}

impl Unmeasured {
    /// The advice that fits why nothing (or not everything) was measured.
    fn action(&self, pin: &str) -> String {
        let remedy = match self {
            Unmeasured::NothingAnswered { reasons, .. }
            | Unmeasured::Probe { reasons, .. }
            | Unmeasured::CallsMissing { reasons, .. } => reasons.remedy(),
            Unmeasured::TokensMissing { .. } => Some(Remedy::Usage),
            Unmeasured::TokensImplausible { .. } => Some(Remedy::ImplausibleUsage),
            Unmeasured::ServedNotReported { .. } => Some(Remedy::Instrumentation),
            Unmeasured::LogprobsMissing { .. } => Some(Remedy::Relock),
            Unmeasured::Streak { latest_action, .. } => {
                if let Some(action) = latest_action {
                    return action.clone();
                }
                None
            }
        };
        remedy.map_or_else(
            || {
                format!(
                    "see the reasons in the evidence, then run `modelpin check --pin {pin}` again"
                )
            },
            |r| r.advice(pin),
        )
    }
}

fn move_to(model: Option<String>, relock: &str) -> String {
    match model {
        Some(model) => {
            format!("move the pin to `{model}` (the named replacement), then run {relock}")
        }
        None => format!("move the pin to a model the provider supports, then run {relock}"),
    }
}

fn plan_move(model: Option<String>, relock: &str) -> String {
    match model {
        Some(model) => {
            format!("plan the move to `{model}` before the date; after switching, run {relock}")
        }
        None => format!(
            "plan the move to a supported model before the date; after switching, run {relock}"
        ),
    }
}

fn replacement(lifecycle: Option<&Lifecycle>) -> Option<String> {
    lifecycle?.replacement.first().cloned()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::finding::evidence::{NoBaseline, Reroute, ServedMismatch, StillServed};
    use crate::finding::reason::{Halt, Reason, Reasons};
    use crate::lifecycle::Stage;
    use crate::provider::ErrorClass;

    fn lifecycle(replacement: &[&str]) -> Lifecycle {
        Lifecycle {
            model: "old".into(),
            stage: Stage::Retired,
            retirement: None,
            days_left: None,
            replacement: replacement.iter().map(|r| (*r).to_owned()).collect(),
            window: None,
            sources: Vec::new(),
            class: Some(crate::lifecycle::SourceClass::Primary),
        }
    }

    fn reasons(reason: Reason) -> Reasons {
        let mut all = Reasons::default();
        all.add(reason, 3);
        all
    }

    fn mismatch() -> ServedMismatch {
        ServedMismatch {
            requested: "m".into(),
            accepted: BTreeSet::from(["m".to_owned()]),
            served: BTreeMap::from([("gpt-4o-mini".to_owned(), 3)]),
            unexpected: BTreeMap::from([("gpt-4o-mini".to_owned(), 3)]),
            fallback_models: BTreeMap::new(),
            public_names: BTreeMap::new(),
            deployment_ids: BTreeMap::new(),
            gateway_fallbacks: BTreeMap::new(),
            examples: Vec::new(),
            from_traffic: false,
        }
    }

    fn retries() -> crate::finding::evidence::Retries {
        crate::finding::evidence::Retries {
            attempts: 1,
            retries: 0,
            waited_ms: 0,
            stopped: BTreeMap::new(),
        }
    }

    #[test]
    fn actions_name_the_pin_the_id_and_the_replacement() {
        let reroute = Reroute {
            served_id_changed: true,
            upstream_changed: false,
            tokenizer_changed: false,
            price_changed: false,
            behaviour_changed: false,
        };
        let table = [
            (
                Evidence::ServedModelMismatch(mismatch()),
                "add it to the pin's `accept`",
                "`gpt-4o-mini`",
            ),
            (
                Evidence::RetiredStillServed(StillServed {
                    lifecycle: lifecycle(&["gemini-3.8-flash"]),
                    reroute,
                }),
                "move the pin to `gemini-3.8-flash`",
                "--pin bot",
            ),
            (
                Evidence::DeprecationScheduled(Box::new(lifecycle(&[]))),
                "plan the move to a supported model",
                "--pin bot",
            ),
            (
                Evidence::Inconclusive(Unmeasured::NothingAnswered {
                    reasons: reasons(Reason::Refused {
                        class: ErrorClass::Auth,
                        status: 401,
                        message: "bad key".into(),
                        stopped: None,
                    }),
                    retries: retries(),
                    lifecycle: None,
                }),
                "check the provider key",
                "api_key_env",
            ),
            (
                Evidence::Inconclusive(Unmeasured::CallsMissing {
                    planned: 30,
                    answered: 27,
                    cancelled: 3,
                    reasons: reasons(Reason::Cancelled(Halt::SpendCap {
                        cap: 0.1,
                        spent: 0.1,
                    })),
                }),
                "raise the cap",
                "--max-cost",
            ),
            (
                Evidence::Inconclusive(Unmeasured::CallsMissing {
                    planned: 30,
                    answered: 27,
                    cancelled: 3,
                    reasons: reasons(Reason::Cancelled(Halt::Interrupted)),
                }),
                "let it finish",
                "--pin bot",
            ),
            (
                Evidence::Inconclusive(Unmeasured::ServedNotReported { spans: 4 }),
                "instrumentation record the answering model",
                "gen_ai.response.model",
            ),
            (
                Evidence::NoBaseline(NoBaseline {
                    locked_model: None,
                    calls_not_made: None,
                    pin: "bot".into(),
                    model: "m".into(),
                }),
                "`modelpin lock --pin bot`",
                "commit modelpin.lock",
            ),
        ];
        for (evidence, a, b) in table {
            let text = evidence.action("bot");
            assert!(
                text.contains(a) && text.contains(b),
                "{:?}: {text}",
                evidence.code()
            );
        }
    }

    #[test]
    fn a_dated_snapshot_is_not_told_to_pin_a_dated_snapshot() {
        for (requested, advised) in [
            ("gpt-4o", true),
            ("claude-3-5-haiku-latest", true),
            ("gpt-4o-2024-08-06", false),
            ("claude-3-opus-20240229", false),
            ("us.anthropic.claude-sonnet-4-20250514-v1:0", false),
        ] {
            let mut e = mismatch();
            e.requested = requested.into();
            let text = Evidence::ServedModelMismatch(e).action("bot");
            assert_eq!(
                text.contains("pin a dated snapshot"),
                advised,
                "{requested}: {text}"
            );
        }
    }

    #[test]
    fn a_streak_repeats_what_the_latest_audit_said_to_do() {
        let streak = Unmeasured::Streak {
            consecutive: 3,
            latest: None,
            latest_message: None,
            latest_action: Some("top up".into()),
        };
        assert_eq!(Evidence::Inconclusive(streak).action("bot"), "top up");
    }
}
