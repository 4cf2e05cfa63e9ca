//! `modelpin sim` (hidden): serve a scenario file on loopback until interrupted.

use std::net::SocketAddr;
use std::path::Path;

use crate::cmd::AppError;
use crate::cmd::Output;
use crate::exit::Exit;
use crate::provider::ProviderKind;
use crate::sim::Simulator;
use crate::sim::scenario::Scenario;

pub async fn run(scenario: &Path, listen: SocketAddr, out: Output) -> Result<Exit, AppError> {
    if !listen.ip().is_loopback() {
        return Err(AppError::Usage(format!(
            "the simulator listens on loopback only; {listen} is not a loopback address"
        )));
    }
    let text = std::fs::read_to_string(scenario)
        .map_err(|e| AppError::io(format!("cannot read {}", scenario.display()), e))?;
    let scenario: Scenario = serde_json::from_str(&text).map_err(|e| {
        AppError::Usage(format!(
            "{} is not a valid scenario: {e}",
            scenario.display()
        ))
    })?;
    let sim = Simulator::start_on(listen, scenario)
        .await
        .map_err(|e| AppError::io(format!("cannot listen on {listen}"), e))?;
    // The address goes to stdout so a script can read it; the rest is progress.
    crate::cmd::emit(&format!("{}\n", sim.addr()));
    for kind in ProviderKind::ALL {
        out.progress(&format!("{kind}: base_url = \"{}\"", sim.base_url(kind)));
    }
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| AppError::io("cannot wait for Ctrl-C", e))?;
    Ok(Exit::Ok)
}
