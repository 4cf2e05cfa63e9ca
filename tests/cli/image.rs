//! The container image as the Dockerfile's final stage lays it out, built here as an OCI image
//! with umoci (no registry: the layer holds a statically linked release build of this checkout,
//! where the Dockerfile's build stage would compile one against musl) and run with runc the way
//! `docker run --read-only --tmpfs /tmp IMAGE …` runs it: its own namespaces, a read-only root,
//! the image's user, entrypoint and working directory.
//!
//! Needs `MODELPIN_STATIC_BINARY` (a static build; `.ci/run` makes one), umoci and runc, and
//! root for unpacking with the image's owners. Skipped with a notice outside CI when missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::Test;
use crate::support::tools::{output as run, succeeded as ok};

const DOCKERFILE: &str = include_str!("../../Dockerfile");

/// What the Dockerfile's final stage says: user, working directory, entrypoint, volume, port.
#[derive(Debug, PartialEq)]
struct Runtime {
    base: String,
    user: String,
    workdir: String,
    entrypoint: Vec<String>,
    volume: String,
    expose: String,
    copies: Vec<String>,
}

fn final_stage(dockerfile: &str) -> Runtime {
    let stage = dockerfile.rsplit("\nFROM ").next().expect("a FROM line");
    let mut lines = stage.lines();
    let base = lines.next().unwrap().trim().to_owned();
    let mut runtime = Runtime {
        base,
        user: String::new(),
        workdir: String::new(),
        entrypoint: Vec::new(),
        volume: String::new(),
        expose: String::new(),
        copies: Vec::new(),
    };
    let json_list =
        |value: &str| -> Vec<String> { serde_json::from_str(value).expect("an exec-form list") };
    for line in lines.map(str::trim) {
        let (instruction, value) = line.split_once(' ').unwrap_or((line, ""));
        match instruction {
            "USER" => value.clone_into(&mut runtime.user),
            "WORKDIR" => value.clone_into(&mut runtime.workdir),
            "ENTRYPOINT" => runtime.entrypoint = json_list(value),
            "VOLUME" => runtime.volume = json_list(value).concat(),
            "EXPOSE" => value.clone_into(&mut runtime.expose),
            "COPY" => runtime.copies.push(value.to_owned()),
            _ => {}
        }
    }
    runtime
}

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

fn needed() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let binary = std::env::var_os("MODELPIN_STATIC_BINARY").map(PathBuf::from);
    let found = |name: &str| {
        ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    };
    let root = is_root();
    match (binary, found("umoci"), found("runc")) {
        (Some(binary), Some(umoci), Some(runc)) if binary.is_file() && root => {
            Some((binary, umoci, runc))
        }
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the image test needs MODELPIN_STATIC_BINARY, umoci, runc and root in CI (.ci/run provides them)"
            );
            eprintln!("notice: no static build, umoci, runc or root here; skipping the image test");
            None
        }
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n")
}

/// Runs the unpacked image's entrypoint with `args` under runc, as `docker run --read-only
/// --tmpfs /tmp` would; returns its output.
fn container(runc: &Path, bundle: &Path, id: &str, args: &[&str]) -> Output {
    let path = bundle.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut command: Vec<serde_json::Value> = config["process"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .take(1)
        .cloned()
        .collect();
    command.extend(args.iter().map(|a| serde_json::Value::from(*a)));
    config["process"]["args"] = command.into();
    config["process"]["terminal"] = false.into();
    config["root"]["readonly"] = true.into();
    // This machine mixes cgroup v1 and v2, where runc cannot apply device limits; the limits
    // are docker's business, not the image's.
    config["linux"].as_object_mut().unwrap().remove("resources");
    let mounts = config["mounts"].as_array_mut().unwrap();
    mounts.retain(|m| m["destination"] != "/tmp");
    mounts.push(serde_json::json!({
        "destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
        "options": ["nosuid", "nodev", "mode=1777"]
    }));
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let output = run(Command::new(runc)
        .args(["run", "--bundle"])
        .arg(bundle)
        .arg(id));
    let _ = run(Command::new(runc).args(["delete", "--force", id]));
    output
}

#[test]
fn the_image_runs_version_and_the_demo_read_only_as_nonroot() {
    let Some((binary, umoci, runc)) = needed() else {
        return;
    };
    let runtime = final_stage(DOCKERFILE);
    let test = Test::new();
    // The final stage's file system: distroless's /tmp and nonroot user, then the stage's COPYs.
    let rootfs = test.path("rootfs");
    for dir in ["usr/local/bin", "var/lib/modelpin", "tmp", "etc"] {
        std::fs::create_dir_all(rootfs.join(dir)).unwrap();
    }
    std::fs::copy(&binary, rootfs.join("usr/local/bin/modelpin")).unwrap();
    std::fs::write(
        rootfs.join("etc/passwd"),
        "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
    )
    .unwrap();
    ok(&run(Command::new("chmod")
        .arg("1777")
        .arg(rootfs.join("tmp"))));
    ok(&run(Command::new("chown")
        .arg("65532:65532")
        .arg(rootfs.join("var/lib/modelpin"))));
    let layer = test.path("layer.tar");
    ok(&run(Command::new("tar")
        .args(["--numeric-owner", "-C"])
        .arg(&rootfs)
        .arg("-cf")
        .arg(&layer)
        .arg(".")));

    let layout = test.path("layout");
    let image = format!("{}:test", layout.display());
    ok(&run(Command::new(&umoci)
        .arg("init")
        .arg("--layout")
        .arg(&layout)));
    ok(&run(Command::new(&umoci).args(["new", "--image", &image])));
    ok(&run(Command::new(&umoci)
        .args(["raw", "add-layer", "--image", &image])
        .arg(&layer)));
    let mut configure = Command::new(&umoci);
    configure.args(["config", "--image", &image]);
    configure.args(["--config.user", &runtime.user]);
    configure.args(["--config.workingdir", &runtime.workdir]);
    configure.args(["--config.volume", &runtime.volume]);
    configure.args(["--config.exposedports", &format!("{}/tcp", runtime.expose)]);
    for part in &runtime.entrypoint {
        configure.args(["--config.entrypoint", part]);
    }
    ok(&run(&mut configure));
    let bundle = test.path("bundle");
    ok(&run(Command::new(&umoci)
        .args(["unpack", "--image", &image])
        .arg(&bundle)));

    let id = format!("modelpin-image-{}", std::process::id());
    let version = ok(&container(&runc, &bundle, &id, &["--version"]));
    assert_eq!(
        version.trim(),
        format!("modelpin {}", env!("CARGO_PKG_VERSION"))
    );
    let demo = container(&runc, &bundle, &id, &["demo"]);
    let shown = ok(&demo);
    for finding in ["retired_still_served", "served_model_mismatch"] {
        assert!(shown.contains(finding), "{shown}");
    }
    // The root really is read-only to it: keeping the demo's project there is refused.
    let kept = container(&runc, &bundle, &id, &["demo", "--keep", "/kept"]);
    assert!(!kept.status.success());
    let said = String::from_utf8_lossy(&kept.stderr);
    assert!(said.contains("Read-only file system"), "{said}");
    // And it ran as the image's user, which umoci took from the Dockerfile's `USER`.
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["process"]["user"]["uid"], 65532);
}
