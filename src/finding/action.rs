//! What to do about each finding: one line per code, specific to the pin and, where the evidence
//! names it, the model to move to or the ID to accept. A `match` on the code, so a new code does
//! not compile until it says what a user should do.

use serde_json::Value;

use crate::finding::{Code, Finding};

/// The next step for `finding` on pin `pin`.
#[must_use]
pub fn action(finding: &Finding, pin: &str) -> String {
    let relock = format!("`modelpin lock --pin {pin}` and commit modelpin.lock");
    let evidence = &finding.evidence;
    match finding.code {
        Code::ServedModelMismatch => match first_key(evidence, "unexpected") {
            Some(id) => format!(
                "if `{id}` is a change you accept, add it to the pin's `accept` (or run {relock}); otherwise pin a dated snapshot and raise it with the provider"
            ),
            None => format!("if the change is wanted, run {relock}"),
        },
        Code::UpstreamMismatch => format!(
            "add the host to the pin's `upstream` if it is acceptable, or restrict the provider routing to the hosts you trust; then run {relock}"
        ),
        Code::TokenizerChanged | Code::CostChanged | Code::BehaviorDrift => format!(
            "another model (or template) answers: confirm with the provider; if the change is wanted, run {relock}"
        ),
        Code::ModelNotFound | Code::RetiredStillServed => match replacement(evidence) {
            Some(model) => format!("move the pin to `{model}` (the named replacement), then run {relock}"),
            None => format!("move the pin to a model the provider supports, then run {relock}"),
        },
        Code::DeprecationScheduled | Code::SunsetAnnounced => match replacement(evidence) {
            Some(model) => format!(
                "plan the move to `{model}` before the date; after switching, run {relock}"
            ),
            None => format!("plan the move to a supported model before the date; after switching, run {relock}"),
        },
        Code::FingerprintChanged => {
            "nothing unless another check moves: the provider changed its serving configuration".to_owned()
        }
        Code::MaxTokensExceeded => {
            "give the pin a `price` and keep `max_cost_usd` so the spend stays bounded; raise the probe's `max_tokens` if the longer answers are expected".to_owned()
        }
        Code::NoBaseline | Code::ProbeChanged => format!("run {relock}"),
        Code::Inconclusive => unmeasured_action(finding, pin),
    }
}

/// The advice that fits why nothing (or not everything) was measured.
fn unmeasured_action(finding: &Finding, pin: &str) -> String {
    let said = format!("{} {}", finding.message, finding.evidence).to_lowercase();
    let rules: [(&[&str], String); 7] = [
        (
            &["auth", "api key", "401", "403"],
            "check the provider key: the variable named by `api_key_env` must hold a valid key".to_owned(),
        ),
        (
            &["quota", "balance", "billing", "402"],
            "top up or raise the provider account's quota, then run the check again".to_owned(),
        ),
        (
            &["spend cap"],
            "raise the cap (`--max-cost` or `max_cost_usd`) or lower `samples`".to_owned(),
        ),
        (
            &["interrupted"],
            format!("run the check again and let it finish (`modelpin check --pin {pin}`)"),
        ),
        (
            &["budget"],
            "raise `budget` in [settings], or lower `samples` or `timeout`".to_owned(),
        ),
        (
            &["prompt token count"],
            "use an endpoint that reports `usage` (some gateways and proxies drop it)".to_owned(),
        ),
        (
            &["timed out", "did not answer", "timeout", "connect"],
            "check that the provider is reachable and its status page; raise `timeout` if it is slow".to_owned(),
        ),
    ];
    rules
        .into_iter()
        .find(|(words, _)| words.iter().any(|w| said.contains(w)))
        .map_or_else(
            || {
                format!(
                    "see the reasons in the evidence, then run `modelpin check --pin {pin}` again"
                )
            },
            |(_, advice)| advice,
        )
}

fn first_key(evidence: &Value, field: &str) -> Option<String> {
    evidence.get(field)?.as_object()?.keys().next().cloned()
}

/// The replacement model the lifecycle data names, wherever the evidence keeps it.
fn replacement(evidence: &Value) -> Option<String> {
    let lifecycle = evidence.get("lifecycle").unwrap_or(evidence);
    lifecycle
        .get("replacement")?
        .as_array()?
        .first()?
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn finding(code: Code, message: &str, evidence: Value) -> Finding {
        Finding {
            code,
            severity: code.severity(),
            message: message.to_owned(),
            evidence,
            action: None,
        }
    }

    #[test]
    fn every_code_says_what_to_do() {
        for code in Code::ALL {
            let text = action(&finding(code, "", json!({})), "bot");
            assert!(!text.is_empty(), "{code}");
        }
    }

    #[test]
    fn actions_name_the_pin_the_id_and_the_replacement() {
        let table = [
            (
                finding(
                    Code::ServedModelMismatch,
                    "",
                    json!({"unexpected": {"gpt-4o-mini": 3}}),
                ),
                "add it to the pin's `accept`",
                "`gpt-4o-mini`",
            ),
            (
                finding(
                    Code::RetiredStillServed,
                    "",
                    json!({"replacement": ["gemini-3.8-flash"]}),
                ),
                "move the pin to `gemini-3.8-flash`",
                "--pin bot",
            ),
            (
                finding(
                    Code::ModelNotFound,
                    "",
                    json!({"lifecycle": {"replacement": ["o3"]}}),
                ),
                "`o3`",
                "--pin bot",
            ),
            (
                finding(
                    Code::Inconclusive,
                    "no call succeeded: auth (HTTP 401): bad key",
                    json!({}),
                ),
                "check the provider key",
                "api_key_env",
            ),
            (
                finding(
                    Code::Inconclusive,
                    "3 of 30 planned calls were not answered",
                    json!({"reasons": {"cancelled: the audit's spend cap ($0.10) was reached": 3}}),
                ),
                "raise the cap",
                "--max-cost",
            ),
            (
                finding(Code::NoBaseline, "", json!({})),
                "`modelpin lock --pin bot`",
                "commit modelpin.lock",
            ),
        ];
        for (f, a, b) in table {
            let text = action(&f, "bot");
            assert!(text.contains(a) && text.contains(b), "{}: {text}", f.code);
        }
    }
}
