//! The deployment examples: the Kubernetes manifests (`examples/kubernetes/`) pass the
//! Kubernetes 1.37 JSON schemas strictly (`kubernetes-validate`, pinned in `.ci/run`), their
//! PrometheusRule holds the shipped rules and passes `promtool`, each ConfigMap's pins.toml is
//! one modelpin loads, and the systemd unit passes `systemd-analyze verify`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::Test;
use crate::support::tools::program;

/// `kubernetes-validate` from `MODELPIN_K8S_VALIDATE`, else `.ci/run`'s virtualenv, else PATH.
fn validator() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("MODELPIN_K8S_VALIDATE").map(PathBuf::from),
        Some(PathBuf::from("/opt/modelpin-k8s/bin/kubernetes-validate")),
    ];
    if let Some(found) = candidates.into_iter().flatten().find(|p| p.exists()) {
        return Some(found);
    }
    program("kubernetes-validate", &["--version"]).map(|()| PathBuf::from("kubernetes-validate"))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn kubernetes_manifests_pass_the_schemas_and_hold_the_shipped_rules_and_a_loadable_pins_toml() {
    let Some(validate) = validator() else {
        return;
    };
    if program("promtool", &["--version"]).is_none() {
        return;
    }
    let manifests = ["fleet.yaml", "single.yaml", "monitoring.yaml"];
    let out = Command::new(&validate)
        .args(["--strict", "-k", "1.37.0"])
        .args(manifests)
        .current_dir(root().join("examples/kubernetes"))
        .output()
        .expect("kubernetes-validate runs");
    let said = text(&out);
    assert!(out.status.success(), "kubernetes-validate: {said}");
    for resource in [
        "configmap/modelpin-config",
        "secret/modelpin-keys",
        "deployment/modelpin",
        "service/modelpin",
        "poddisruptionbudget/modelpin",
        "statefulset/modelpin-single",
        "service/modelpin-single",
    ] {
        assert!(
            said.contains(&format!("passed for resource {resource} ")),
            "{resource} validated: {said}"
        );
    }

    // The rest is read out with the validator's own Python (it brings PyYAML).
    let test = Test::new();
    let python = validate.with_file_name("python");
    let python = if python.exists() {
        python
    } else {
        PathBuf::from("python3")
    };
    let out = Command::new(python)
        .arg(root().join("tests/kubernetes/extract.py"))
        .arg(root().join("examples"))
        .arg(test.path(""))
        .output()
        .expect("extract.py runs");
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("Deployment replicas=2"), "{said}");
    assert!(said.contains("StatefulSet replicas=1"), "{said}");

    let out = Command::new("promtool")
        .args(["check", "rules"])
        .arg(test.path("rules.yml"))
        .output()
        .expect("promtool runs");
    assert!(out.status.success(), "promtool: {}", text(&out));

    // The fleet's pins.toml loads: modelpin gets as far as reaching its PostgreSQL server.
    let fleet = test.run(&["--config", "fleet.pins.toml", "history"]);
    assert!(
        fleet
            .stderr
            .contains("the store at postgres://modelpin@postgres.db.svc:5432/modelpin")
            && !fleet.stderr.contains(" --> "),
        "{}",
        fleet.stderr
    );
    // The single daemon's, with its volume's path moved here: it opens its sled store.
    let single = test.read("single.pins.toml");
    let here = test.path("store").display().to_string();
    let moved = single.replace("/var/lib/modelpin/store", &here);
    assert_ne!(moved, single);
    std::fs::write(test.path("single.pins.toml"), moved).expect("write");
    test.run(&["--config", "single.pins.toml", "history"])
        .code(0);
}

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    if program("systemd-analyze", &["--version"]).is_none() {
        return;
    }
    let unit = std::fs::read_to_string(root().join("examples/systemd/modelpin.service"))
        .expect("the unit");
    let binary = assert_cmd::cargo::cargo_bin("modelpin");
    let here = unit.replace("/usr/local/bin/modelpin", &binary.display().to_string());
    assert_ne!(here, unit);
    let test = Test::new().file("modelpin.service", &here);
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(test.path("modelpin.service"))
        .output()
        .expect("systemd-analyze runs");
    // verify prints nothing for a sound unit; a warning or an error is a line that names it.
    assert!(
        out.status.success() && text(&out).trim().is_empty(),
        "{}",
        text(&out)
    );
}
