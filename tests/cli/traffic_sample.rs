//! `modelpin traffic` on the sample export docs/traffic.md uses (`examples/traffic-otlp.json`) with
//! the repository's own pins.toml: a report headed as traffic that counts spans, and the spans that
//! matched no pin listed by what they asked for and of whom.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::Test;

/// The repository's example pins.toml and probes, in a fresh directory (no lock).
fn readme_project() -> Test {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut test = Test::new()
        .file(
            "pins.toml",
            &std::fs::read_to_string(root.join("pins.toml")).unwrap(),
        )
        .file(
            "traffic-otlp.json",
            &std::fs::read_to_string(root.join("examples/traffic-otlp.json")).unwrap(),
        );
    for entry in std::fs::read_dir(root.join("probes")).unwrap() {
        let path = entry.unwrap().path();
        let name = format!("probes/{}", path.file_name().unwrap().to_string_lossy());
        test = test.file(&name, &std::fs::read_to_string(&path).unwrap());
    }
    test
}

#[test]
fn the_readme_sample_export_is_judged_as_traffic_and_names_what_matched_no_pin() {
    let test = readme_project();
    let run = test.run(&["traffic", "traffic-otlp.json"]);
    run.code(1);
    assert!(
        run.stdout.starts_with("modelpin traffic · config sha256:"),
        "its own header: {}",
        run.stdout
    );
    let header = run.stdout.lines().find(|l| l.starts_with("PIN ")).unwrap();
    assert!(
        header.contains(" SPANS ") && !header.contains("CALLS"),
        "{header}"
    );
    assert!(
        run.stdout.contains(
            "served `gpt-5.5-mini-2026-04-23` (2 of 5 spans) where the pin accepts `gpt-5.5-2026-04-23`"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(" · 8 spans · "), "{}", run.stdout);
    assert!(
        !run.stdout.contains(" calls"),
        "spans, not calls: {}",
        run.stdout
    );
    for line in [
        "traffic: 11 spans in traffic-otlp.json: 11 GenAI, 3 matching no pin",
        "traffic: seen but matching no pin (requested model · provider):",
        "  gpt-4.1 · openai ×2",
        "  claude-sonnet-4-5 · anthropic ×1",
    ] {
        assert!(
            run.stderr.lines().any(|l| l == line),
            "{line:?} in\n{}",
            run.stderr
        );
    }
}

fn span(i: usize, requested: &str, provider: &str) -> Value {
    let kv = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    json!({
        "traceId": format!("{i:032x}"), "spanId": format!("{i:016x}"), "name": "chat",
        "attributes": [
            kv("gen_ai.provider.name", provider),
            kv("gen_ai.request.model", requested),
            kv("gen_ai.response.model", requested),
        ]
    })
}

#[test]
fn spans_that_match_no_pin_are_listed_by_pair_bounded_and_the_rule_is_stated() {
    let mut spans: Vec<Value> = (0..15)
        .map(|i| span(i, &format!("unpinned-model-{i:02}"), "openai"))
        .collect();
    spans.extend((15..18).map(|i| span(i, "gpt-5.5-2026-04-23", "azure.ai.openai")));
    let export = json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
    let test = readme_project().file("none.json", &export.to_string());
    let run = test.run(&["traffic", "none.json"]);
    run.code(3);
    let listed: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains(" · "))
        .collect();
    assert_eq!(listed.len(), 10, "at most ten pairs: {}", run.stderr);
    assert_eq!(
        listed[0], "  gpt-5.5-2026-04-23 · azure.ai.openai ×3",
        "most seen first"
    );
    assert!(
        run.stderr.contains("  … and 6 more pairs (6 spans)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("`openai-compatible` pins match `openai` spans"),
        "{}",
        run.stderr
    );
}
