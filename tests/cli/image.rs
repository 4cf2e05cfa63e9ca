//! The container image as the Dockerfile's final stage lays it out, built here as an OCI image
//! with umoci (no registry: the layer holds a statically linked release build of this checkout,
//! where the Dockerfile's build stage would compile one against musl) and run with runc the way
//! `docker run --read-only --tmpfs /tmp IMAGE …` runs it: its own namespaces, a read-only root,
//! the image's user, entrypoint and working directory.
//!
//! Needs `MODELPIN_STATIC_BINARY` (a static build; `.ci/run` makes one), umoci and runc, and
//! root for unpacking with the image's owners. Skipped with a notice outside CI when missing.

use std::path::Path;

use crate::harness::Test;
use crate::support::oci::{self, DOCKERFILE, Runtime, final_stage};
use crate::support::tools::succeeded as ok;

#[test]
fn the_dockerfile_s_final_stage_is_distroless_nonroot_with_the_store_on_a_volume() {
    let runtime = final_stage(DOCKERFILE);
    assert_eq!(
        runtime,
        Runtime {
            base: "gcr.io/distroless/static-debian13:nonroot".into(),
            user: "65532:65532".into(),
            workdir: "/var/lib/modelpin".into(),
            entrypoint: vec!["/usr/local/bin/modelpin".into()],
            volume: "/var/lib/modelpin".into(),
            expose: "9464".into(),
            copies: vec![
                "--from=build /out/usr/local/bin/modelpin /usr/local/bin/modelpin".into(),
                "--from=build --chown=65532:65532 /out/var/lib/modelpin /var/lib/modelpin".into(),
            ],
        }
    );
    // The Kubernetes examples run a project image built on that image, as that user.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kubernetes");
    let project = std::fs::read_to_string(examples.join("project.Dockerfile")).unwrap();
    assert!(
        project.lines().any(|l| l
            == format!(
                "FROM ghcr.io/modelpin/modelpin:v{}",
                env!("CARGO_PKG_VERSION")
            )),
        "{project}"
    );
    for example in ["single.yaml", "fleet.yaml"] {
        let text = std::fs::read_to_string(examples.join(example)).unwrap();
        assert!(text.contains("runAsUser: 65532") && text.contains("readOnlyRootFilesystem: true"));
    }
}

#[test]
fn the_image_runs_version_and_the_demo_read_only_as_nonroot() {
    let Some(tools) = oci::tools("the image test") else {
        return;
    };
    let runtime = final_stage(DOCKERFILE);
    let test = Test::new();
    // The final stage's file system: distroless's /tmp and nonroot user, then the stage's COPYs.
    let rootfs = test.path("rootfs");
    oci::release_rootfs(&rootfs, &tools.binary);
    let bundle = oci::bundle(&test, &tools, &rootfs, &runtime);
    let runc = &tools.runc;

    let id = format!("modelpin-image-{}", std::process::id());
    let version = ok(&oci::run_in(runc, &bundle, &id, &["--version"]));
    assert_eq!(
        version.trim(),
        format!("modelpin {}", env!("CARGO_PKG_VERSION"))
    );
    let demo = oci::run_in(runc, &bundle, &id, &["demo"]);
    let shown = ok(&demo);
    for finding in ["retired_still_served", "served_model_mismatch"] {
        assert!(shown.contains(finding), "{shown}");
    }
    // The root really is read-only to it: keeping the demo's project there is refused.
    let kept = oci::run_in(runc, &bundle, &id, &["demo", "--keep", "/kept"]);
    assert!(!kept.status.success());
    let said = String::from_utf8_lossy(&kept.stderr);
    assert!(said.contains("Read-only file system"), "{said}");
    // And it ran as the image's user, which umoci took from the Dockerfile's `USER`.
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["process"]["user"]["uid"], 65532);
}
