//! What a release ships, run here as a user's machine or a GitHub runner would run it: the
//! packing scripts the release workflow calls (`dist/package.sh`, `dist/checksums.sh`),
//! `install.sh` against a local directory of release files, and the GitHub Action's script
//! (`dist/action.sh`, the steps of `action.yml`) with the variables a runner sets. The linters the
//! workflows promise to pass (actionlint, hadolint, shellcheck) run on the real files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::Test;
use crate::support::tools::{locate, output as run, succeeded as ok};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The release target install.sh picks on this machine.
fn target() -> String {
    let arch = String::from_utf8(Command::new("uname").arg("-m").output().unwrap().stdout)
        .unwrap()
        .trim()
        .replace("amd64", "x86_64")
        .replace("arm64", "aarch64");
    format!("{arch}-unknown-linux-musl")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The binary to pack: the static release build `.ci/run` makes (what a release ships, and a
/// tenth of the debug build's size to compress), else this test run's own.
fn shipped() -> PathBuf {
    std::env::var_os("MODELPIN_STATIC_BINARY")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_modelpin")))
}

/// A release directory as the release workflow's publish job leaves it: this build's binary
/// packed for this machine's target, install.sh, SHA256SUMS.
fn release(dir: &Path) -> PathBuf {
    let out = dir.join("release");
    ok(&run(Command::new(repo().join("dist/package.sh"))
        .arg(target())
        .arg(shipped())
        .arg(&out)));
    std::fs::copy(repo().join("install.sh"), out.join("install.sh")).unwrap();
    ok(&run(
        Command::new(repo().join("dist/checksums.sh")).arg(&out)
    ));
    out
}

fn install(from: &Path, to: &Path, version: &str) -> Output {
    run(Command::new("sh")
        .arg(repo().join("install.sh"))
        .args(["--version", version, "--from"])
        .arg(from)
        .arg("--to")
        .arg(to)
        .env("PATH", std::env::var("PATH").unwrap()))
}

#[test]
fn the_packed_archive_holds_the_binary_and_both_licenses_and_packs_the_same_twice() {
    let test = Test::new();
    let out = release(test.dir.path());
    let archive = out.join(format!("modelpin-{}.tar.gz", target()));
    let listing = ok(&run(Command::new("tar").arg("-tvzf").arg(&archive)));
    for file in ["modelpin", "LICENSE-MIT", "LICENSE-APACHE", "README.md"] {
        assert!(
            listing.contains(&format!("modelpin-{}/{file}", target())),
            "{listing}"
        );
    }
    assert!(listing.contains("-rwxr-xr-x 0/0"), "{listing}");
    let first = std::fs::read(&archive).unwrap();
    let again = release(&test.path("again"));
    assert_eq!(
        first,
        std::fs::read(again.join(format!("modelpin-{}.tar.gz", target()))).unwrap(),
        "the same inputs pack to the same bytes"
    );
    let sums = std::fs::read_to_string(out.join("SHA256SUMS")).unwrap();
    let names: Vec<&str> = sums
        .lines()
        .map(|l| l.split_once("  ").unwrap().1)
        .collect();
    assert_eq!(
        names,
        [
            "install.sh".to_owned(),
            format!("modelpin-{}.tar.gz", target())
        ]
    );
}

/// Every document in the archive, unpacked as a user finds it: each relative link (and image)
/// names a file the archive holds, so the README's links do not lead nowhere.
#[test]
fn every_link_of_the_unpacked_documents_resolves_inside_the_archive() {
    let test = Test::new();
    let out = release(test.dir.path());
    let unpacked = test.path("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    ok(&run(Command::new("tar")
        .arg("-xzf")
        .arg(out.join(format!("modelpin-{}.tar.gz", target())))
        .arg("-C")
        .arg(&unpacked)));
    let root = unpacked
        .join(format!("modelpin-{}", target()))
        .canonicalize()
        .unwrap();
    let mut documents = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                documents.push(path);
            }
        }
    }
    let mut checked = 0;
    for document in &documents {
        let markdown = std::fs::read_to_string(document).unwrap();
        for (line, target) in crate::support::markdown::links(&markdown) {
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() {
                continue;
            }
            let linked = document.parent().unwrap().join(file).canonicalize();
            assert!(
                linked.is_ok_and(|l| l.starts_with(&root)),
                "{}:{line}: `{target}` is not in the archive",
                document.strip_prefix(&root).unwrap().display()
            );
            checked += 1;
        }
    }
    assert!(
        documents.len() > 10 && checked > 50,
        "{} documents, {checked} links: the archive lost its docs",
        documents.len()
    );
}

#[test]
fn install_sh_installs_the_archive_for_this_platform_after_checking_its_sum() {
    let test = Test::new();
    let out = release(test.dir.path());
    let bin = test.path("bin");
    let installed = install(&out, &bin, "v0.1.0");
    let said = ok(&installed);
    assert!(
        said.contains(&format!("to {}/modelpin", bin.display()))
            && said.contains("SHA-256 verified"),
        "{said}"
    );
    assert_eq!(
        std::fs::read(bin.join("modelpin")).unwrap(),
        std::fs::read(shipped()).unwrap()
    );
    let version = ok(&run(Command::new(bin.join("modelpin")).arg("--version")));
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    // An upgrade over an installed binary, with the version written without its `v`.
    ok(&install(&out, &bin, "0.1.0"));
    let leftovers: Vec<_> = std::fs::read_dir(&bin).unwrap().collect();
    assert_eq!(
        leftovers.len(),
        1,
        "nothing but the binary is left in the directory"
    );
}

#[test]
fn install_sh_refuses_a_download_whose_sum_does_not_match_and_installs_nothing() {
    let test = Test::new();
    let out = release(test.dir.path());
    let archive = out.join(format!("modelpin-{}.tar.gz", target()));
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&archive, bytes).unwrap();
    let bin = test.path("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(bin.join("modelpin"), "the installed one").unwrap();

    let refused = install(&out, &bin, "v0.1.0");
    assert_eq!(refused.status.code(), Some(1));
    let said = text(&refused.stderr);
    assert!(
        said.contains("checksum mismatch for modelpin-") && said.contains("nothing was installed"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(bin.join("modelpin")).unwrap(),
        "the installed one"
    );

    // A release whose SHA256SUMS does not list the archive is refused as well.
    std::fs::write(out.join("SHA256SUMS"), "").unwrap();
    let unlisted = install(&out, &test.path("bin2"), "v0.1.0");
    assert_eq!(unlisted.status.code(), Some(1));
    assert!(
        text(&unlisted.stderr).contains("lists no modelpin-"),
        "{}",
        text(&unlisted.stderr)
    );
    assert!(!test.path("bin2").join("modelpin").exists());
}

#[test]
fn install_sh_refuses_a_version_that_is_no_tag_and_an_unknown_flag() {
    let test = Test::new();
    for (args, says) in [
        (
            vec!["--version", "v1;rm -rf x"],
            "holds a character no release tag has",
        ),
        (vec!["--version", "main"], "takes a tag such as v0.1.0"),
        (vec!["--frobnicate"], "unknown argument: --frobnicate"),
        (vec!["--to"], "--to needs a value"),
    ] {
        let output = run(Command::new("sh")
            .arg(repo().join("install.sh"))
            .args(&args)
            .current_dir(test.dir.path()));
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(
            text(&output.stderr).contains(says),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
}

/// One step of the action: `dist/action.sh MODE` with the variables a runner and action.yml set.
fn action_step(test: &Test, mode: &str, env: &[(&str, &str)]) -> (Output, String) {
    let output_file = test.path("github_output");
    std::fs::write(&output_file, "").unwrap();
    let mut command = Command::new(repo().join("dist/action.sh"));
    command
        .arg(mode)
        .current_dir(test.path("project"))
        .env("GITHUB_OUTPUT", &output_file)
        .env("RUNNER_TEMP", test.path("runner_temp"))
        .env("RUNNER_TOOL_CACHE", test.path("tool_cache"))
        .env_remove("MODELPIN_CONFIG")
        .env_remove("NO_COLOR");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = run(&mut command);
    (output, std::fs::read_to_string(&output_file).unwrap())
}

fn output_value(outputs: &str, key: &str) -> String {
    outputs
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {outputs}"))
        .to_owned()
}

const PINS: &str = r#"version = 1
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "ACTION_TEST_KEY"

[[pin]]
id = "support"
provider = "local"
model = "gpt-4o-2024-08-06"
probes = ["probes/*.toml"]
"#;

#[test]
fn the_action_installs_the_release_then_runs_the_command_and_reports_its_exit_code() {
    let test = Test::new()
        .file("project/pins.toml", PINS)
        .file(
            "project/probes/hi.toml",
            "id = \"hi\"\nprompt = \"Say hi\"\nmax_tokens = 4\n",
        )
        .file("project/app.py", "MODEL = \"gpt-4o-2024-08-06\"\n");
    std::fs::create_dir(test.path("runner_temp")).unwrap();
    let out = release(test.dir.path());
    let releases = out.to_str().unwrap();

    let (located, outputs) = action_step(&test, "locate", &[("MODELPIN_VERSION", "0.1.0")]);
    ok(&located);
    let dir = output_value(&outputs, "dir");
    assert_eq!(output_value(&outputs, "version"), "v0.1.0");
    assert_eq!(output_value(&outputs, "cacheable"), "true");
    assert!(
        dir.starts_with(test.path("tool_cache").to_str().unwrap()),
        "{dir}"
    );

    let (installed, _) = action_step(
        &test,
        "install",
        &[
            ("MODELPIN_VERSION", "v0.1.0"),
            ("MODELPIN_RELEASES", releases),
        ],
    );
    ok(&installed);
    assert!(Path::new(&dir).join("modelpin").is_file());

    // `scan` in the working directory: its stdout is both shown and kept as the report.
    let (scanned, outputs) = action_step(
        &test,
        "run",
        &[
            ("MODELPIN_VERSION", "v0.1.0"),
            ("MODELPIN_COMMAND", "scan"),
            ("MODELPIN_ARGS", "--format json\n  --hidden"),
        ],
    );
    let direct = run(Command::new(env!("CARGO_BIN_EXE_modelpin"))
        .args(["scan", "--format", "json", "--hidden"])
        .current_dir(test.path("project")));
    let code = scanned.status.code().unwrap();
    assert_eq!(output_value(&outputs, "exit-code"), code.to_string());
    let report = std::fs::read_to_string(output_value(&outputs, "report")).unwrap();
    assert_eq!(report, text(&scanned.stdout));
    assert!(
        report.contains("gpt-4o-2024-08-06") && report.contains("app.py"),
        "{report}"
    );
    assert_eq!(
        report,
        text(&direct.stdout),
        "the same report as modelpin's own"
    );
    assert_eq!(
        Some(code),
        direct.status.code(),
        "the action exits as modelpin did"
    );

    // `check` before a lock is inconclusive (exit 3): a failed step, or a warning when allowed.
    let check = [
        ("MODELPIN_VERSION", "v0.1.0"),
        ("MODELPIN_COMMAND", "check"),
        ("ACTION_TEST_KEY", "unused"),
    ];
    let (failed, outputs) = action_step(&test, "run", &check);
    assert_eq!(failed.status.code(), Some(3), "{}", text(&failed.stderr));
    assert_eq!(output_value(&outputs, "exit-code"), "3");
    let allowed = [check.as_slice(), &[("MODELPIN_ALLOW_INCONCLUSIVE", "true")]].concat();
    let (warned, outputs) = action_step(&test, "run", &allowed);
    let shown = ok(&warned);
    assert_eq!(output_value(&outputs, "exit-code"), "3");
    assert!(
        shown.contains("::warning title=modelpin::inconclusive (exit 3)"),
        "{shown}"
    );
}

#[test]
fn the_action_refuses_a_command_or_version_that_could_be_shell_code() {
    let test = Test::new().file("project/.keep", "");
    std::fs::create_dir(test.path("runner_temp")).unwrap();
    for (env, says) in [
        (vec![("MODELPIN_VERSION", "v1$(id)")], "no release tag has"),
        (
            vec![
                ("MODELPIN_COMMAND", "check;id"),
                ("MODELPIN_VERSION", "v0.1.0"),
            ],
            "input 'command' is one modelpin command",
        ),
        (
            vec![
                ("MODELPIN_COMMAND", "--version"),
                ("MODELPIN_VERSION", "v0.1.0"),
            ],
            "input 'command' is one modelpin command",
        ),
    ] {
        let (output, _) = action_step(&test, "run", &env);
        assert_eq!(output.status.code(), Some(2), "{env:?}");
        assert!(
            text(&output.stdout).contains(says),
            "{env:?}: {}",
            text(&output.stdout)
        );
    }
}

/// The variables each step of action.yml sets are the ones dist/action.sh reads, every input is
/// used, and no input is pasted into a script (only into `env:`).
#[test]
fn action_yml_hands_its_inputs_to_the_script_through_the_environment() {
    let action = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let script = std::fs::read_to_string(repo().join("dist/action.sh")).unwrap();
    for line in action
        .lines()
        .filter(|l| l.trim_start().starts_with("run:"))
    {
        assert!(
            !line.contains("${{"),
            "an expression inside a script: {line}"
        );
        assert!(
            line.contains("\"$GITHUB_ACTION_PATH/dist/action.sh\""),
            "{line}"
        );
    }
    let inputs: Vec<&str> = action
        .split("\ninputs:\n")
        .nth(1)
        .unwrap()
        .split("\noutputs:\n")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':'))
        .collect();
    assert_eq!(
        inputs,
        [
            "version",
            "command",
            "args",
            "releases",
            "working-directory",
            "allow-inconclusive"
        ]
    );
    for input in inputs {
        assert!(
            action.contains(&format!("${{{{ inputs.{input} }}}}")),
            "{input} unused"
        );
    }
    for line in action.lines().map(str::trim) {
        if let Some((key, value)) = line.split_once(": ${{ inputs.")
            && key.starts_with("MODELPIN_")
        {
            assert!(
                script.contains(&format!("${{{key}")),
                "{key} ({value}) is never read"
            );
        }
    }
}

const LINTERS: &str = "/opt/modelpin-lint/bin";

#[test]
fn the_workflows_the_example_and_the_action_pass_actionlint() {
    let Some(actionlint) = locate("actionlint", LINTERS) else {
        return;
    };
    assert!(
        locate("shellcheck", LINTERS).is_some() || std::env::var_os("CI").is_none(),
        "actionlint checks run: scripts with shellcheck"
    );
    // The example, as it would run with this checkout as the action (`uses: ./`), so actionlint
    // also checks its `with:` against action.yml's inputs.
    let test = Test::new();
    let copy = test.path("repo");
    std::fs::create_dir_all(copy.join(".github/workflows")).unwrap();
    std::fs::copy(repo().join("action.yml"), copy.join("action.yml")).unwrap();
    let example = std::fs::read_to_string(repo().join("examples/github-actions.yml")).unwrap();
    assert!(example.contains("uses: modelpin/modelpin@v0"));
    std::fs::write(
        copy.join(".github/workflows/example.yml"),
        example.replace("uses: modelpin/modelpin@v0", "uses: ./"),
    )
    .unwrap();
    std::fs::copy(
        repo().join(".github/workflows/release.yml"),
        copy.join(".github/workflows/release.yml"),
    )
    .unwrap();
    // A wrong input must be caught, or this test proves nothing.
    std::fs::write(
        copy.join(".github/workflows/wrong.yml"),
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - uses: ./\n        with:\n          comand: check\n",
    )
    .unwrap();
    // actionlint finds local actions from the repository's root.
    ok(&run(Command::new("git")
        .args(["init", "-q"])
        .current_dir(&copy)));
    let linted = run(Command::new(&actionlint)
        .arg("-no-color")
        .current_dir(&copy)
        .env("PATH", path_with(LINTERS)));
    let said = text(&linted.stdout);
    let problems: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with(".github/workflows/"))
        .collect();
    assert_eq!(problems.len(), 1, "{said}");
    assert!(
        problems[0].starts_with(".github/workflows/wrong.yml") && problems[0].contains("comand"),
        "{said}"
    );
}

fn path_with(dir: &str) -> String {
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

#[test]
fn the_dockerfile_passes_hadolint_and_the_scripts_pass_shellcheck() {
    if let Some(hadolint) = locate("hadolint", LINTERS) {
        let linted = run(Command::new(hadolint).arg(repo().join("Dockerfile")));
        ok(&linted);
    }
    if let Some(shellcheck) = locate("shellcheck", LINTERS) {
        let linted = run(Command::new(shellcheck).args(
            [
                "install.sh",
                "dist/package.sh",
                "dist/checksums.sh",
                "dist/action.sh",
                "fuzz/run.sh",
            ]
            .map(|f| repo().join(f)),
        ));
        ok(&linted);
    }
}

/// `cargo binstall --git … modelpin` asks for the file and path the release workflow publishes, for every
/// target it builds.
#[test]
fn binstall_metadata_names_the_archives_the_release_publishes() {
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(repo().join("Cargo.toml")).unwrap()).unwrap();
    let binstall = &manifest["package"]["metadata"]["binstall"];
    let workflow = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    let targets: Vec<&str> = workflow
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- {target: "))
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(targets.len(), 4, "{targets:?}");
    for target in targets {
        let expand = |template: &str| {
            template
                .replace("{ repo }", env!("CARGO_PKG_REPOSITORY"))
                .replace("{ version }", env!("CARGO_PKG_VERSION"))
                .replace("{ target }", target)
                .replace("{ bin }", "modelpin")
                .replace("{ binary-ext }", "")
        };
        assert_eq!(
            expand(binstall["pkg-url"].as_str().unwrap()),
            format!(
                "https://github.com/modelpin/modelpin/releases/download/v{}/modelpin-{target}.tar.gz",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(
            expand(binstall["bin-dir"].as_str().unwrap()),
            format!("modelpin-{target}/modelpin")
        );
    }
    assert_eq!(binstall["pkg-fmt"].as_str(), Some("tgz"));
    // The publish job packs each of those targets with dist/package.sh.
    assert!(
        workflow.contains("dist/package.sh \"${dir#artifacts/binary-}\" \"$dir/modelpin\" release")
    );
}
