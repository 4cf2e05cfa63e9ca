//! `examples/grafana-dashboard.json` stays true to the daemon: every query names only metric
//! families `/metrics` declares, every panel reads from the `datasource` variable, panels have
//! unique ids and non-overlapping places on Grafana's 24-column grid, and the whole file is valid
//! under Grafana's dashboard JSON schema (vendored, see `tests/fixtures/grafana/SOURCES.md`).

use std::collections::BTreeSet;

use serde_json::Value;

const DASHBOARD: &str = include_str!("../../examples/grafana-dashboard.json");
const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/grafana/dashboard.jsonschema.json"
);

/// Metric family names from `# TYPE` lines of a fresh daemon's exposition.
fn declared() -> BTreeSet<String> {
    modelpin::daemon::metrics::Metrics::new()
        .render()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Identifiers in a PromQL expression that start with `modelpin_`.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("modelpin_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

fn panels(dashboard: &Value) -> &[Value] {
    dashboard["panels"].as_array().map_or(&[], Vec::as_slice)
}

#[test]
fn grafana_dashboard_queries_only_metrics_the_daemon_declares() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    let declared = declared();
    let mut used = BTreeSet::new();
    for panel in panels(&dashboard) {
        let targets = panel["targets"]
            .as_array()
            .expect("every panel has targets");
        assert!(!targets.is_empty(), "{}", panel["title"]);
        for target in targets {
            let expr = target["expr"].as_str().expect("a PromQL expr");
            let names = metric_names(expr);
            assert!(!names.is_empty(), "{expr} reads no modelpin metric");
            for name in names {
                assert!(
                    declared.contains(&name),
                    "`{name}` in {expr} is not on /metrics"
                );
                used.insert(name);
            }
        }
    }
    for wanted in [
        "modelpin_pin_status",
        "modelpin_served_model_info",
        "modelpin_cost_per_request_usd",
        "modelpin_retirement_timestamp_seconds",
        "modelpin_audit_duration_seconds",
        "modelpin_notifications_total",
    ] {
        assert!(used.contains(wanted), "no panel shows {wanted}");
    }
}

#[test]
fn grafana_dashboard_reads_the_datasource_variable_and_lays_out_on_the_grid() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).unwrap();
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    assert!(
        variables.iter().any(|v| v["type"] == "datasource"
            && v["name"] == "datasource"
            && v["query"] == "prometheus"),
        "a `datasource` variable of Prometheus data sources"
    );
    let mut ids = BTreeSet::new();
    let mut boxes: Vec<(u64, u64, u64, u64, String)> = Vec::new();
    for panel in panels(&dashboard) {
        let title = panel["title"].as_str().unwrap_or_default().to_owned();
        assert!(
            ids.insert(panel["id"].as_u64().expect("numeric id")),
            "duplicate id: {title}"
        );
        for source in std::iter::once(&panel["datasource"]).chain(
            panel["targets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| &t["datasource"]),
        ) {
            assert_eq!(source["uid"], "${datasource}", "{title}");
        }
        let grid = &panel["gridPos"];
        let [x, y, w, h] = ["x", "y", "w", "h"].map(|k| grid[k].as_u64().expect("gridPos"));
        assert!(w > 0 && h > 0 && x + w <= 24, "{title}: {grid}");
        for (ox, oy, ow, oh, other) in &boxes {
            let apart = x + w <= *ox || *ox + ow <= x || y + h <= *oy || *oy + oh <= y;
            assert!(apart, "{title} overlaps {other}");
        }
        boxes.push((x, y, w, h, title));
    }
    assert!(ids.len() >= 6, "{ids:?}");
}

/// Grafana's schema for the classic dashboard model, checked with Python's `jsonschema`; skipped
/// with a notice outside CI when it is missing.
#[test]
fn grafana_dashboard_is_valid_under_grafanas_schema() {
    crate::harness::assert_valid_under_schema(SCHEMA, "Draft7Validator", DASHBOARD, "dashboard");
}
