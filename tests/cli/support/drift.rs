//! A pin that drifts and is fixed on cue, for the alert and outage tests: the simulator serves
//! the pinned model, `reroute_now` swaps in a cheaper one behind the same ID, `restore` puts the
//! pinned one back.

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{Sim, Test};
use crate::support::pins::{Channel, Pins};
use crate::world::{model, reroute, single};

pub const ID: &str = "acme-pro-001";

/// A simulator serving the pinned model as locked.
pub fn clean_sim() -> Sim {
    Sim::start(single(ID, model(ID, 4.0, (1.0, 2.0))))
}

pub fn reroute_now(sim: &Sim) {
    sim.set(reroute(
        sim.sim.scenario(),
        ID,
        model("acme-cheap-002", 3.1, (0.1, 0.2)),
        Reported::Honest,
    ));
}

pub fn restore(sim: &Sim) {
    sim.set(single(ID, model(ID, 4.0, (1.0, 2.0))));
}

/// `pins` pins (`pin`, `pin-2`, …) on the simulated model, one sample each, audited every second
/// by a daemon, with 2 s calls.
pub fn pins(sim: &Sim, pins: usize) -> Pins {
    Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .setting("timeout", "2s")
        .setting("budget", "20s")
        .daemon()
        .each_pin("samples", 1)
        .copies(pins)
}

/// [`pins`] with `channels`, locked.
pub fn project(sim: &Sim, n: usize, channels: Vec<Channel>) -> Test {
    channels
        .into_iter()
        .fold(pins(sim, n), Pins::alert)
        .locked()
}
