//! The released container image, built here as an OCI image with umoci and run with runc the way
//! `docker run --read-only --tmpfs /tmp IMAGE …` runs it: no registry, no daemon. The layer is
//! the Dockerfile's final stage as it lays it out (distroless's `/tmp` and `nonroot` user, the
//! store directory owned by 65532), with a statically linked build of this checkout
//! (`MODELPIN_STATIC_BINARY`, which `.ci/run` makes) where the build stage would compile one.
//!
//! Needs umoci, runc and root (unpacking keeps the image's owners). `tools` says when they are
//! missing: a failure under `CI`, a notice elsewhere.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::Test;
use crate::support::tools::{output as run, succeeded as ok};

/// The repository's Dockerfile.
pub const DOCKERFILE: &str = include_str!("../../../Dockerfile");

/// What a Dockerfile's final stage says: base, user, working directory, entrypoint, volume,
/// port, copies.
#[derive(Debug, PartialEq)]
pub struct Runtime {
    pub base: String,
    pub user: String,
    pub workdir: String,
    pub entrypoint: Vec<String>,
    pub volume: String,
    pub expose: String,
    pub copies: Vec<String>,
}

#[must_use]
pub fn final_stage(dockerfile: &str) -> Runtime {
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

/// The static build, umoci and runc, found as root.
pub struct Tools {
    pub binary: PathBuf,
    pub umoci: PathBuf,
    pub runc: PathBuf,
}

/// The tools, or `None` after a notice saying `what` is skipped; a failure under `CI`.
#[must_use]
pub fn tools(what: &str) -> Option<Tools> {
    let binary = std::env::var_os("MODELPIN_STATIC_BINARY").map(PathBuf::from);
    let found = |name: &str| {
        ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    };
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    match (binary, found("umoci"), found("runc")) {
        (Some(binary), Some(umoci), Some(runc)) if binary.is_file() && root => Some(Tools {
            binary,
            umoci,
            runc,
        }),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{what} needs MODELPIN_STATIC_BINARY, umoci, runc and root in CI (.ci/run provides them)"
            );
            eprintln!("notice: no static build, umoci, runc or root here; {what} is skipped");
            None
        }
    }
}

/// Lays out the released image's final stage under `rootfs`: the binary where the Dockerfile
/// copies it, distroless's `/tmp` and `nonroot` user, the store directory owned by 65532.
pub fn release_rootfs(rootfs: &Path, binary: &Path) {
    for dir in ["usr/local/bin", "var/lib/modelpin", "tmp", "etc"] {
        std::fs::create_dir_all(rootfs.join(dir)).unwrap();
    }
    std::fs::copy(binary, rootfs.join("usr/local/bin/modelpin")).unwrap();
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
}

/// `rootfs` as a one-layer OCI image configured as `runtime` says, unpacked into a runtime
/// bundle under `test`; returns the bundle's directory.
pub fn bundle(test: &Test, tools: &Tools, rootfs: &Path, runtime: &Runtime) -> PathBuf {
    let layer = test.path("layer.tar");
    ok(&run(Command::new("tar")
        .args(["--numeric-owner", "-C"])
        .arg(rootfs)
        .arg("-cf")
        .arg(&layer)
        .arg(".")));
    let layout = test.path("layout");
    let image = format!("{}:test", layout.display());
    ok(&run(Command::new(&tools.umoci)
        .arg("init")
        .arg("--layout")
        .arg(&layout)));
    ok(&run(
        Command::new(&tools.umoci).args(["new", "--image", &image])
    ));
    ok(&run(Command::new(&tools.umoci)
        .args(["raw", "add-layer", "--image", &image])
        .arg(&layer)));
    let mut configure = Command::new(&tools.umoci);
    configure.args(["config", "--image", &image]);
    configure.args(["--config.user", &runtime.user]);
    configure.args(["--config.workingdir", &runtime.workdir]);
    if !runtime.volume.is_empty() {
        configure.args(["--config.volume", &runtime.volume]);
    }
    if !runtime.expose.is_empty() {
        configure.args(["--config.exposedports", &format!("{}/tcp", runtime.expose)]);
    }
    for part in &runtime.entrypoint {
        configure.args(["--config.entrypoint", part]);
    }
    ok(&run(&mut configure));
    let bundle = test.path("bundle");
    ok(&run(Command::new(&tools.umoci)
        .args(["unpack", "--image", &image])
        .arg(&bundle)));
    bundle
}

/// Runs the bundle's entrypoint with `args` under runc as container `id`, as `docker run
/// --read-only --tmpfs /tmp` would; returns its output.
pub fn run_in(runc: &Path, bundle: &Path, id: &str, args: &[&str]) -> Output {
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
