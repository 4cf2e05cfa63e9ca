//! The deployment examples: the Kubernetes manifests (`examples/kubernetes/`) pass the
//! Kubernetes 1.37 JSON schemas strictly (`kubernetes-validate`, pinned in `.ci/run`), and so does
//! README.md's ConfigMap route put into them; their PrometheusRule holds the shipped rules and
//! passes `promtool`; their example pins.toml files are ones modelpin loads; the project image
//! `project.Dockerfile` builds puts the project where the manifests read it (laid out here and
//! run, and under runc as the image's user when the image test's tools are here); no manifest
//! takes the lock from a ConfigMap; and the systemd unit passes `systemd-analyze verify`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use modelpin::provider::ProviderKind;

use crate::harness::{KEY, Sim, Test};
use crate::support::oci;
use crate::support::tools::{locate, output as run, program, succeeded as ok};
use crate::world::{model, single};

const PROJECT_DOCKERFILE: &str = include_str!("../../examples/kubernetes/project.Dockerfile");

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
    let said = extract(&python_next_to(&validate), &test);
    assert!(said.contains("Deployment replicas=2"), "{said}");
    assert!(said.contains("StatefulSet replicas=1"), "{said}");

    // README.md's ConfigMap route, put into both workloads as it says, passes the schemas too.
    let out = Command::new(&validate)
        .args(["--strict", "-k", "1.37.0"])
        .arg(test.path("configmap-route.yaml"))
        .output()
        .expect("kubernetes-validate runs");
    let said = text(&out);
    assert!(out.status.success(), "kubernetes-validate: {said}");
    for resource in ["deployment/modelpin", "statefulset/modelpin-single"] {
        assert!(
            said.contains(&format!("passed for resource {resource} ")),
            "the ConfigMap route's {resource} validated: {said}"
        );
    }

    let out = Command::new("promtool")
        .args(["check", "rules"])
        .arg(test.path("rules.yml"))
        .output()
        .expect("promtool runs");
    assert!(out.status.success(), "promtool: {}", text(&out));

    // The pins.toml each manifest's project image carries (the example's [settings], with the
    // shipped probes beside it) loads: the fleet's gets as far as reaching its PostgreSQL server.
    let test = with_probes(test);
    for name in ["fleet.pins.toml", "single.pins.toml"] {
        std::fs::copy(
            root().join("examples/kubernetes").join(name),
            test.path(name),
        )
        .unwrap();
    }
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

/// The validator's own Python (it brings PyYAML).
fn python_next_to(validate: &Path) -> PathBuf {
    let python = validate.with_file_name("python");
    if python.exists() {
        python
    } else {
        PathBuf::from("python3")
    }
}

/// A Python with PyYAML for `tests/kubernetes/extract.py`: the validator's, else `python3` when it
/// imports yaml; `None` (with a notice) outside CI.
fn python_with_yaml() -> Option<PathBuf> {
    if let Some(validate) = validator() {
        return Some(python_next_to(&validate));
    }
    let imports = Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    if imports {
        return Some(PathBuf::from("python3"));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "kubernetes-validate's Python (PyYAML) is required in CI (.ci/run installs it)"
    );
    eprintln!("notice: no Python with PyYAML here; skipping this test");
    None
}

/// Runs `extract.py` into `test`'s directory (rules.yml, workloads.json, configmap-route.yaml);
/// returns what it printed.
fn extract(python: &Path, test: &Test) -> String {
    let out = Command::new(python)
        .arg(root().join("tests/kubernetes/extract.py"))
        .arg(root().join("examples"))
        .arg(test.path(""))
        .output()
        .expect("extract.py runs");
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    said
}

/// The manifests' workloads and ConfigMaps as extract.py reads them.
fn manifests() -> Option<serde_json::Value> {
    let python = python_with_yaml()?;
    let test = Test::new();
    extract(&python, &test);
    Some(serde_json::from_str(&test.read("workloads.json")).expect("workloads.json"))
}

/// `test` with the shipped probes (the ones `modelpin init` writes) in its `probes/`.
fn with_probes(test: Test) -> Test {
    let mut test = test;
    for entry in std::fs::read_dir(root().join("probes")).expect("probes/") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        test = test.file(
            &format!("probes/{name}"),
            &std::fs::read_to_string(&path).unwrap(),
        );
    }
    test
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

/// What `project.Dockerfile` says: the image it builds on, its copies, and the image name its
/// `docker build` line tags.
#[derive(Debug)]
struct ProjectImage {
    base: String,
    copies: Vec<CopyLine>,
    name: String,
}

/// One `COPY [--chown=U:G] SRC… DEST`.
#[derive(Debug)]
struct CopyLine {
    chown: Option<(u32, u32)>,
    sources: Vec<String>,
    dest: String,
}

/// Reads the Dockerfile's instructions. Only `FROM` and `COPY` are laid out by this test, so any
/// other instruction (or flag) fails it here rather than being skipped in silence.
fn project_image(dockerfile: &str) -> ProjectImage {
    let mut image = ProjectImage {
        base: String::new(),
        copies: Vec::new(),
        name: String::new(),
    };
    for line in dockerfile.lines().map(str::trim) {
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(build) = comment.trim().strip_prefix("docker build ") {
                let tag = build
                    .split_whitespace()
                    .skip_while(|w| *w != "-t")
                    .nth(1)
                    .expect("`docker build` tags the image with -t");
                tag.split(':').next().unwrap().clone_into(&mut image.name);
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        assert!(!line.ends_with('\\'), "one line per instruction: {line}");
        let mut words = line.split_whitespace();
        match words.next().unwrap() {
            "FROM" => {
                assert!(image.base.is_empty(), "one stage");
                words.next().unwrap().clone_into(&mut image.base);
            }
            "COPY" => {
                let mut chown = None;
                let mut paths = Vec::new();
                for word in words {
                    if let Some(owner) = word.strip_prefix("--chown=") {
                        let (user, group) = owner.split_once(':').expect("--chown=UID:GID");
                        chown = Some((user.parse().unwrap(), group.parse().unwrap()));
                    } else {
                        assert!(
                            !word.starts_with("--"),
                            "a COPY flag this test does not lay out: {word}"
                        );
                        paths.push(word.to_owned());
                    }
                }
                let dest = paths.pop().expect("a destination");
                assert!(dest.starts_with('/') && !paths.is_empty(), "{line}");
                image.copies.push(CopyLine {
                    chown,
                    sources: paths,
                    dest,
                });
            }
            other => {
                panic!("project.Dockerfile: `{other}` is an instruction this test does not lay out")
            }
        }
    }
    assert!(!image.name.is_empty(), "the file says how CI builds it");
    image
}

/// The project directory as the image has it: each `COPY` of `context` (the repository the image
/// is built from) done under `root`, with Docker's rules (a directory's contents are copied; with
/// several sources, or a destination ending in `/`, files land in it under their own names) and,
/// when `owners`, its `--chown`.
fn lay_out(image: &ProjectImage, context: &Path, root: &Path, owners: bool) {
    for copy in &image.copies {
        let dest = root.join(copy.dest.trim_start_matches('/'));
        let into_dir = copy.sources.len() > 1 || copy.dest.ends_with('/');
        for source in &copy.sources {
            let from = context.join(source.trim_end_matches('/'));
            assert!(from.exists(), "COPY {source}: not in the project");
            let to = if from.is_dir() || !into_dir {
                dest.clone()
            } else {
                dest.join(from.file_name().unwrap())
            };
            copy_tree(&from, &to);
        }
        if let (Some((uid, gid)), true) = (copy.chown, owners) {
            ok(&run(Command::new("chown")
                .arg("-R")
                .arg(format!("{uid}:{gid}"))
                .arg(&dest)));
        }
    }
}

/// `from` (a file, or a directory's contents) at `to`, modes kept as COPY keeps them.
fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
}

/// The manifest's `--config` path: where the daemon reads pins.toml, and beside it the probes
/// and the lock.
fn config_path(workload: &serde_json::Value) -> PathBuf {
    let args: Vec<&str> = workload["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    match args.as_slice() {
        ["daemon", "--config", config] => PathBuf::from(config),
        other => panic!("{}: the container runs {other:?}", workload["file"]),
    }
}

fn mount_paths(workload: &serde_json::Value) -> Vec<PathBuf> {
    workload["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| PathBuf::from(m["mountPath"].as_str().unwrap()))
        .collect()
}

/// `modelpin traffic` (which reads pins.toml, its probes and the lock, and calls nobody) on an
/// empty span export: the config and lock digests it reports.
fn digests(report: &str) -> (String, String) {
    let report: serde_json::Value =
        serde_json::from_str(report).unwrap_or_else(|e| panic!("{e}: {report}"));
    let lock = report["lock_digest"]
        .as_str()
        .unwrap_or_else(|| panic!("no lock read: {report}"));
    assert_eq!(
        report["lock_config_digest"], report["config_digest"],
        "{report}"
    );
    (
        report["config_digest"].as_str().unwrap().to_owned(),
        lock.to_owned(),
    )
}

const NO_SPANS: &str = r#"{"resourceSpans":[]}"#;

/// Containers run so far, for runc ids of their own.
static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[test]
fn the_project_image_puts_pins_toml_probes_and_the_lock_where_the_manifests_read_them() {
    let image = project_image(PROJECT_DOCKERFILE);
    assert_eq!(
        image.base,
        format!("ghcr.io/modelpin/modelpin:v{}", env!("CARGO_PKG_VERSION")),
        "the project image builds on this release's image"
    );
    // Its files belong to the image's user: a working copy may keep them private.
    for copy in &image.copies {
        assert_eq!(copy.chown, Some((65532, 65532)), "{copy:?}");
    }
    // hadolint, as the repository's Dockerfile (release.rs), where `.ci/run` installs it.
    if let Some(hadolint) = locate("hadolint", "/opt/modelpin-lint/bin") {
        ok(&run(Command::new(hadolint).arg(
            root().join("examples/kubernetes/project.Dockerfile"),
        )));
    }
    let Some(manifests) = manifests() else {
        return;
    };
    for workload in manifests["workloads"].as_array().unwrap() {
        let file = workload["file"].as_str().unwrap();
        // It runs the project image, as the user its files belong to, on a read-only root.
        let running = workload["image"].as_str().unwrap();
        assert_eq!(
            running.split(':').next(),
            Some(image.name.as_str()),
            "{file}"
        );
        assert_eq!(workload["runAsUser"], 65532, "{file}");
        assert_eq!(workload["readOnlyRootFilesystem"], true, "{file}");
        assert!(workload["workingDir"].is_null(), "{file}");

        // Every copy lands in the directory of `--config`, and no mount hides any of it.
        let config = config_path(workload);
        let project = config.parent().unwrap();
        for copy in &image.copies {
            assert!(
                Path::new(&copy.dest).starts_with(project),
                "{copy:?} outside {project:?}"
            );
            for mount in mount_paths(workload) {
                assert!(
                    !project.starts_with(&mount) && !Path::new(&copy.dest).starts_with(&mount),
                    "{file}: the volume on {mount:?} hides the image's {}",
                    copy.dest
                );
            }
        }

        // A real project with this manifest's pins.toml, locked by `modelpin lock` (against the
        // simulator), laid out as the image has it and read with the manifest's `--config`.
        let name = file.replace(".yaml", ".pins.toml");
        let example =
            std::fs::read_to_string(root().join("examples/kubernetes").join(&name)).unwrap();
        let model_id = "gpt-4o-2024-08-06";
        let sim = Sim::start(single(model_id, model(model_id, 4.0, (2.5, 10.0))));
        let pins = example.replace(
            "kind = \"openai\"\n",
            &format!(
                "kind = \"openai\"\nbase_url = \"{}\"\n",
                sim.url(ProviderKind::OpenAi)
            ),
        );
        assert_ne!(pins, example);
        let context = with_probes(Test::new())
            .env("OPENAI_API_KEY", KEY)
            .pins(&pins)
            .file("spans.json", NO_SPANS)
            .locked();
        let locked = context.run(&["traffic", "spans.json", "--format", "json"]);
        let want = digests(&locked.stdout);

        let laid = Test::new().file("spans.json", NO_SPANS);
        let rootfs = laid.path("rootfs");
        lay_out(&image, context.path("").as_path(), &rootfs, false);
        let config_here = rootfs.join(config.strip_prefix("/").unwrap());
        let read = laid.run(&[
            "traffic",
            "--config",
            config_here.to_str().unwrap(),
            "spans.json",
            "--format",
            "json",
        ]);
        assert_eq!(digests(&read.stdout), want, "{file}: {}", read.stderr);

        // The same in the image itself, when the image test's tools are here.
        if let Some(tools) = oci::tools("running the project image") {
            let said = in_image(&image, &context, &tools, &config);
            assert_eq!(digests(&said), want, "{file} in the image");
        }
    }
}

/// Builds the project image as an OCI image (the released image's final stage, then
/// `project.Dockerfile`'s copies of `context`, with their owners) and runs
/// `modelpin traffic --config CONFIG` in it under runc, as `docker run --read-only --tmpfs /tmp`
/// would: the image's user, a read-only root, no network. Returns its standard output.
fn in_image(image: &ProjectImage, context: &Test, tools: &oci::Tools, config: &Path) -> String {
    let test = Test::new();
    let rootfs = test.path("rootfs");
    oci::release_rootfs(&rootfs, &tools.binary);
    lay_out(image, &context.path(""), &rootfs, true);
    // The span export traffic reads, outside the project.
    std::fs::write(rootfs.join("spans.json"), NO_SPANS).unwrap();
    // The project image keeps the released image's user, working directory and entrypoint.
    let runtime = oci::final_stage(oci::DOCKERFILE);
    let bundle = oci::bundle(&test, tools, &rootfs, &runtime);
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(spec["process"]["user"]["uid"], 65532);
    let id = format!(
        "modelpin-project-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let config = config.to_str().unwrap();
    let args = [
        "traffic",
        "--config",
        config,
        "/spans.json",
        "--format",
        "json",
    ];
    let output = oci::run_in(&tools.runc, &bundle, &id, &args);
    assert!(
        output.status.code() == Some(3) || output.status.success(),
        "{}",
        text(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn example(name: &str) -> String {
    std::fs::read_to_string(root().join("examples/kubernetes").join(name)).expect(name)
}

/// The comment blocks (runs of `#` lines) of a manifest or Dockerfile, each as its lines' text.
fn comment_blocks(text: &str) -> Vec<Vec<String>> {
    let mut blocks: Vec<Vec<String>> = Vec::new();
    let mut open = false;
    for line in text.lines().map(str::trim) {
        match line.strip_prefix('#') {
            Some(comment) => {
                if !open {
                    blocks.push(Vec::new());
                }
                blocks.last_mut().unwrap().push(comment.trim().to_owned());
                open = true;
            }
            None => open = false,
        }
    }
    blocks
}

#[test]
fn no_manifest_takes_the_lock_from_a_configmap_and_the_readme_gives_that_route_with_its_limit() {
    // The ConfigMap route, with the limit that makes it the small projects' one.
    let readme = example("README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for needed in [
        "kubectl create configmap modelpin-lock --from-file=modelpin.lock",
        "kubectl create configmap modelpin-config --from-file=pins.toml",
        "kubectl create configmap modelpin-probes --from-file=probes/",
        "\"The data stored in a ConfigMap cannot exceed 1 MiB\"",
        "<https://kubernetes.io/docs/concepts/configuration/configmap/>",
        "1 MiB (1048576 bytes) for all the files of one ConfigMap together",
        // The per-pin sizes docs/lock.md states from BENCHMARKS.md's measurement.
        "about 16 KB per pin",
        "up to about 140 KB",
        "roughly 7 pins",
        "wc -c modelpin.lock",
        &format!(
            "image: ghcr.io/modelpin/modelpin:v{}",
            env!("CARGO_PKG_VERSION")
        ),
        "- {name: project, mountPath: /etc/modelpin, readOnly: true}",
        "- {name: probes, mountPath: /etc/modelpin/probes, readOnly: true}",
    ] {
        assert!(readme.contains(needed), "README.md: {needed}");
    }
    let lock_doc = std::fs::read_to_string(root().join("docs/lock.md")).unwrap();
    let lock_doc = lock_doc.split_whitespace().collect::<Vec<_>>().join(" ");
    for size in ["About 16 KB per pin", "up to about 140 KB per pin"] {
        assert!(lock_doc.contains(size), "docs/lock.md: {size}");
    }

    // Every comment telling the reader to create something names the command, and the project
    // image's two commands (build, push) are the same everywhere they are given.
    let mut given = Vec::new();
    for name in [
        "fleet.yaml",
        "single.yaml",
        "project.Dockerfile",
        "README.md",
    ] {
        let text = example(name);
        if name != "README.md" {
            for block in comment_blocks(&text) {
                let asks = block.iter().any(|l| l.to_lowercase().contains("create"));
                let command = block
                    .iter()
                    .any(|l| l.starts_with("kubectl ") || l.starts_with("docker "));
                assert!(!asks || command, "{name}: no command in {block:#?}");
            }
        }
        let commands: Vec<String> = text
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim().to_owned())
            .filter(|l| l.starts_with("docker build ") || l.starts_with("docker push "))
            .collect();
        assert_eq!(commands.len(), 2, "{name}: {commands:?}");
        given.push(commands);
    }
    assert!(given.windows(2).all(|w| w[0] == w[1]), "{given:#?}");
    let image = project_image(PROJECT_DOCKERFILE);
    assert!(
        given[0][1].starts_with(&format!("docker push {}:", image.name)),
        "{given:?}"
    );

    // The manifests themselves mount no ConfigMap: the project, its lock included, is the image's.
    let Some(manifests) = manifests() else {
        return;
    };
    assert_eq!(
        manifests["configmaps"],
        serde_json::json!([]),
        "{manifests:#}"
    );
    for workload in manifests["workloads"].as_array().unwrap() {
        for mount in workload["mounts"].as_array().unwrap() {
            let source = mount["source"].to_string();
            assert!(
                !source.contains("configMap") && !source.contains("modelpin-lock"),
                "{}: {mount}",
                workload["file"]
            );
        }
    }
}
