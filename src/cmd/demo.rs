//! `modelpin demo`: the whole product on a simulated provider, in seconds, without keys.
//!
//! It locks three pins, retires `gemini-2.5-pro` and reroutes it to another model (first with
//! the new ID in the body, then masked behind the old ID), and shows `check` catching both. The
//! exit code says whether the demo itself worked: 0 only if every expected finding appeared.

mod serve;

use std::path::Path;
use std::sync::Arc;

use chrono::{NaiveDate, Utc};
use tokio_util::sync::CancellationToken;

use crate::audit::Plan;
use crate::audit::lifecycle::Facts;
use crate::audit::run::{Context, Request, Samples, audit};
use crate::cmd::AppError;
use crate::cmd::{Output, init};
use crate::config::Config;
use crate::exit::Exit;
use crate::finding::Code;
use crate::lifecycle::builtin;
use crate::lock::LoadedLock;
use crate::provider::ProviderKind;
use crate::report::{Report, human};
use crate::sim::Simulator;
use crate::sim::demo_world::{self, CONTROL, DEMO_KEY, OPENROUTER_SLUG, PINNED};

const KEY_VARIABLE: &str = "MODELPIN_DEMO_KEY";

/// `modelpin demo`: the walkthrough, or with `--serve` its simulator kept running to play with.
pub async fn start(
    out: Output,
    keep: Option<&Path>,
    serve: bool,
    port: u16,
) -> Result<Exit, AppError> {
    if serve {
        serve::serve(out, keep, port).await
    } else {
        run(out, keep).await
    }
}

/// Where the demo writes its project: a temporary directory removed at the end, or `--keep DIR`.
enum Place {
    Temporary(tempfile::TempDir),
    Kept(std::path::PathBuf),
}

impl Place {
    fn new(keep: Option<&Path>) -> Result<Place, AppError> {
        let Some(dir) = keep else {
            return tempfile::tempdir()
                .map(Place::Temporary)
                .map_err(|e| AppError::io("cannot create a temporary directory", e));
        };
        // Never overwrite a project: the demo writes pins.toml, probes/ and modelpin.lock.
        if let Some(taken) = ["pins.toml", "modelpin.lock", "probes"]
            .iter()
            .map(|name| dir.join(name))
            .find(|path| path.exists())
        {
            return Err(AppError::Usage(format!(
                "--keep {}: {} already exists; name an empty or new directory",
                dir.display(),
                taken.display()
            )));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| AppError::io(format!("cannot create {}", dir.display()), e))?;
        Ok(Place::Kept(dir.to_owned()))
    }

    fn path(&self) -> &Path {
        match self {
            Place::Temporary(dir) => dir.path(),
            Place::Kept(dir) => dir,
        }
    }
}

pub async fn run(out: Output, keep: Option<&Path>) -> Result<Exit, AppError> {
    let dir = Place::new(keep)?;
    let sim = Simulator::start(demo_world::before())
        .await
        .map_err(|e| AppError::io("cannot start the simulator on loopback", e))?;
    let today = Utc::now().date_naive();
    let ahead = today + chrono::Duration::days(30);
    let config = project(dir.path(), &sim, ahead)?;
    let transport = crate::cmd::transport_for(&config)?;
    let ctx = Context {
        transport: &transport,
        facts: Some(Arc::new(Facts {
            facts: builtin().to_vec(),
            warnings: Vec::new(),
        })),
        cancel: CancellationToken::new(),
        progress: Arc::default(),
    };
    crate::cmd::emit(&format!(
        "modelpin demo: a simulated provider on {}\n\n",
        sim.addr()
    ));
    crate::cmd::emit(&format!(
        "1. Lock the baseline: what each pinned ID serves today. `{PINNED}` retires on {ahead}.\n"
    ));
    crate::cmd::lock::lock_pins(&config, &crate::cli::LockArgs::default(), out).await?;
    let lock = crate::lock::read(&config.settings.lockfile)?;
    let clean = audit_all(&config, lock.as_ref(), &ctx).await;
    let render =
        |report: &Report| human::render_with(report, human::Detail::for_stdout(out.verbose));
    crate::cmd::emit(&render(&clean));

    let passed = today - chrono::Duration::days(1);
    crate::cmd::emit(&format!(
        "\n2. The retirement date passed ({passed}). The provider keeps answering `{PINNED}`,\n"
    ));
    crate::cmd::emit(&format!(
        "   with `{}` — another tokenizer, another price.\n",
        demo_world::REPLACEMENT
    ));
    let config = project(dir.path(), &sim, passed)?;
    sim.set_scenario(demo_world::rerouted());
    let open = audit_all(&config, lock.as_ref(), &ctx).await;
    crate::cmd::emit(&render(&open));

    crate::cmd::emit(&format!(
        "\n3. The harder case: the provider keeps reporting `{PINNED}` in the body.\n"
    ));
    crate::cmd::emit("   Only the tokenizer and the price give the replacement away.\n");
    sim.set_scenario(demo_world::masked());
    let masked = audit_all(&config, lock.as_ref(), &ctx).await;
    crate::cmd::emit(&render(&masked));

    let verdict = verdict(&clean, &open, &masked);
    crate::cmd::emit(&format!(
        "\n{}\n",
        verdict.as_ref().map_or_else(
            |e| format!("demo FAILED: {e}"),
            |()| "demo: both reroutes caught.".to_owned()
        )
    ));
    crate::cmd::emit(&closing(&dir));
    Ok(if verdict.is_err() {
        Exit::Failed
    } else {
        Exit::Ok
    })
}

/// Where the project went, and the next step for the user's own pins.
fn closing(dir: &Place) -> String {
    let kept = match dir {
        Place::Temporary(_) => "Its files (pins.toml, probes/, modelpin.lock) were in a temporary directory, now removed; `modelpin demo --keep DIR` keeps them.".to_owned(),
        Place::Kept(path) => format!(
            "Its files are in {}: pins.toml, probes/ and modelpin.lock (the simulated provider stopped with the demo, so a `check` there finds nothing listening; `modelpin demo --serve` keeps one running).",
            path.display()
        ),
    };
    format!(
        "{kept}\n\nnext: `modelpin init` writes a commented pins.toml and probes/ for your own providers; then `modelpin lock` records the baseline and `modelpin check` audits it.\n"
    )
}

/// One audit of every pin of the demo project.
async fn audit_all(config: &Config, lock: Option<&LoadedLock>, ctx: &Context<'_>) -> Report {
    let request = Request {
        pins: config.pins.iter().collect(),
        samples: Samples::Audit,
        max_cost: None,
        strict: false,
        resolve: None,
    };
    let plan = Plan::for_audit(config, &request, ctx.watch(), lock);
    audit(&plan, lock, ctx).await.report
}

/// Writes the demo project with the pinned model retiring on `retires_on`, and loads it.
fn project(
    dir: &Path,
    sim: &Simulator,
    retires_on: NaiveDate,
) -> Result<crate::config::Config, AppError> {
    let config_path = write_project(dir, sim, retires_on)?;
    let env = |name: &str| (name == KEY_VARIABLE).then(|| DEMO_KEY.to_owned());
    Ok(crate::config::load(&config_path, &env)?)
}

/// What the demo promises to show; anything missing fails it.
fn verdict(clean: &Report, open: &Report, masked: &Report) -> Result<(), String> {
    if clean.exit_code != Exit::Ok {
        return Err(format!(
            "the check right after locking exited {}",
            clean.exit_code.code()
        ));
    }
    expect(
        clean,
        "gemini",
        &[Code::DeprecationScheduled],
        &[Code::RetiredStillServed],
    )?;
    expect(
        open,
        "gemini",
        &[
            Code::ServedModelMismatch,
            Code::TokenizerChanged,
            Code::CostChanged,
            Code::RetiredStillServed,
        ],
        &[],
    )?;
    expect(
        open,
        "control",
        &[],
        &[
            Code::ServedModelMismatch,
            Code::TokenizerChanged,
            Code::CostChanged,
        ],
    )?;
    expect(
        masked,
        "gemini",
        &[
            Code::TokenizerChanged,
            Code::CostChanged,
            Code::RetiredStillServed,
        ],
        &[Code::ServedModelMismatch],
    )?;
    expect(
        masked,
        "router",
        &[Code::TokenizerChanged, Code::CostChanged],
        &[Code::ServedModelMismatch],
    )
}

fn expect(report: &Report, pin: &str, present: &[Code], absent: &[Code]) -> Result<(), String> {
    let pin = report
        .pins
        .iter()
        .find(|p| p.id == pin)
        .ok_or(format!("pin {pin} missing"))?;
    let has = |code: &Code| pin.findings.iter().any(|f| f.code == *code);
    if let Some(code) = present.iter().find(|c| !has(c)) {
        return Err(format!("pin {} lacks {code}", pin.id));
    }
    if let Some(code) = absent.iter().find(|c| has(c)) {
        return Err(format!("pin {} unexpectedly has {code}", pin.id));
    }
    Ok(())
}

fn write_project(
    dir: &Path,
    sim: &Simulator,
    retires_on: NaiveDate,
) -> Result<std::path::PathBuf, AppError> {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap_or(dir))
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|e| AppError::io(format!("cannot write {}", path.display()), e))
    };
    for (name, text) in init::EXAMPLE
        .iter()
        .filter(|(n, _)| n.starts_with("probes/"))
    {
        write(name, text)?;
    }
    let pins = format!(
        r#"version = 1

[settings]
timeout = "5s"
budget = "30s"

[providers.gemini]
kind = "gemini"
base_url = "{gemini}"
api_key_env = "{KEY_VARIABLE}"

[providers.openrouter]
kind = "openrouter"
base_url = "{openrouter}"
api_key_env = "{KEY_VARIABLE}"

[providers.openai]
kind = "openai"
base_url = "{openai}"
api_key_env = "{KEY_VARIABLE}"

[[pin]]
id = "gemini"
provider = "gemini"
model = "{PINNED}"
probes = ["probes/*.toml"]
price = {{ input = 1.25, output = 10.00 }}
retires_on = {retires_on}

[[pin]]
id = "router"
provider = "openrouter"
model = "{OPENROUTER_SLUG}"
probes = ["probes/*.toml"]
price = {{ input = 1.25, output = 10.00 }}
retires_on = {retires_on}

[[pin]]
id = "control"
provider = "openai"
model = "{CONTROL}"
probes = ["probes/*.toml"]
price = {{ input = 5.00, output = 30.00 }}
"#,
        gemini = sim.base_url(ProviderKind::Gemini),
        openrouter = sim.base_url(ProviderKind::OpenRouter),
        openai = sim.base_url(ProviderKind::OpenAi),
    );
    write("pins.toml", &pins)?;
    Ok(dir.join("pins.toml"))
}
