//! End to end with real parts: the official `openai` Python client, instrumented by
//! OpenTelemetry's OpenAI instrumentation and exporting with the OTLP/HTTP exporter (all from
//! PyPI, pinned in .ci/run), calls the simulator and sends its spans to the daemon. When the
//! simulator starts answering with another model, the finding, the alert and the metric follow
//! within seconds, with no probe call.
//!
//! `MODELPIN_OTEL_PYTHON` names the virtualenv's `python`; a missing one fails under CI and
//! skips elsewhere.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{KEY, Sim};
use crate::schema::Record;
use crate::support::daemon::Daemon;
use crate::support::http::get;
use crate::support::pins::Channel;
use crate::support::receivers::Webhook;
use crate::support::traffic::{ID, pins};
use crate::support::wait::{DEADLINE, eventually};
use crate::world::{model, reroute, single};

const APP: &str = include_str!("../fixtures/otel/app.py");

fn python() -> Option<PathBuf> {
    let path = std::env::var_os("MODELPIN_OTEL_PYTHON").map(PathBuf::from);
    let found = path.as_ref().is_some_and(|p| {
        Command::new(p)
            .args([
                "-c",
                "import openai, opentelemetry.instrumentation.openai_v2",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found {
        return path;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the OpenTelemetry Python packages are required in CI (.ci/run installs them)"
    );
    eprintln!(
        "notice: MODELPIN_OTEL_PYTHON does not name a python with openai and \
         opentelemetry-instrumentation-openai-v2; skipping this test"
    );
    None
}

/// Runs the instrumented application: `calls` chat completions, spans flushed before it exits.
fn run_app(python: &PathBuf, sim: &Sim, port: u16, calls: u32) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), APP).unwrap();
    let out = Command::new(python)
        .arg(dir.path().join("app.py"))
        .env("OPENAI_BASE_URL", sim.url(ProviderKind::OpenAi))
        .env("OPENAI_API_KEY", KEY)
        .env("MODEL", ID)
        .env("CALLS", calls.to_string())
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("http://127.0.0.1:{port}/v1/traces"),
        )
        .env(
            "OTEL_SEMCONV_STABILITY_OPT_IN",
            "gen_ai_latest_experimental",
        )
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "the application ran: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn mismatch_in_traffic(records: &[Record]) -> bool {
    records
        .iter()
        .any(|r| r.is_traffic() && r.has_finding("served_model_mismatch"))
}

#[test]
fn traffic_from_the_openai_sdk_instrumented_by_opentelemetry_shows_a_reroute_within_seconds() {
    let Some(python) = python() else { return };
    let sim = Sim::start(single(ID, model(ID, 4.0, (1.25, 10.0))));
    let hook = Webhook::start();
    let test = pins(&sim)
        .alert(Channel::webhook("hook", &hook.url()))
        .locked();
    let daemon = Daemon::start(&test);
    let port = daemon.port();

    let answered = run_app(&python, &sim, port, 3);
    assert_eq!(answered.lines().collect::<Vec<_>>(), [ID; 3]);
    daemon.wait_records("the honest traffic judged ok", |records| {
        records
            .iter()
            .any(|r| r.is_traffic() && r.pin.status == "ok")
    });
    let probe_calls = sim.requests();

    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        model("acme-flash-002", 3.3, (0.5, 3.0)),
        Reported::Honest,
    ));
    let answered = run_app(&python, &sim, port, 3);
    // The exporter has flushed: the spans are with the daemon from here.
    let sent = Instant::now();
    assert!(answered.contains("acme-flash-002"), "{answered}");
    daemon.wait_records("the reroute as a finding", mismatch_in_traffic);
    // Judged every second; the margin is for a loaded test machine (bench/traffic measures the
    // latency itself).
    let seen_after = sent.elapsed();
    assert!(
        seen_after <= Duration::from_secs(5),
        "finding after {seen_after:?}"
    );
    assert!(
        eventually(DEADLINE, || {
            hook.hits()
                .iter()
                .any(|h| String::from_utf8_lossy(&h.body).contains("served_model_mismatch"))
        }),
        "the alert reaches the webhook: {}",
        daemon.log()
    );
    let hit = hook
        .hits()
        .into_iter()
        .find(|h| String::from_utf8_lossy(&h.body).contains("served_model_mismatch"))
        .unwrap();
    assert_eq!(hit.json()["source"], "traffic", "marked as traffic");
    let exposition = get(port, "/metrics")
        .map(|(_, _, body)| body)
        .unwrap_or_default();
    let line = "modelpin_traffic_spans_total{pin=\"pin\",served=\"acme-flash-002\"} 3";
    assert!(exposition.contains(line), "{line} in\n{exposition}");
    // No probe was spent on it: the simulator saw only the application's calls.
    assert_eq!(sim.requests(), probe_calls + 3);
}
