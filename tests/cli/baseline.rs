//! A lock whose entries name only each pin's model: enough for `check` to call the provider
//! (it makes no call for a pin without a baseline), with nothing recorded to compare the
//! answers with, for tests about what a provider sends rather than what it changed.

/// `modelpin.lock` text with a bare entry for each (pin id, model).
pub fn bare_lock(pins: &[(&str, &str)]) -> String {
    let entries: serde_json::Map<String, serde_json::Value> = pins
        .iter()
        .map(|(id, model)| {
            (
                (*id).to_owned(),
                serde_json::json!({
                    "provider": "p",
                    "kind": "openai",
                    "model": model,
                    "served_models": {},
                    "upstreams": {},
                    "system_fingerprints": [],
                    "effective_price": null,
                    "probes": {}
                }),
            )
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "lock_version": 1,
        "modelpin_version": "0.0.0",
        "config_digest": "sha256:none",
        "pins": entries,
    }))
    .unwrap()
}
