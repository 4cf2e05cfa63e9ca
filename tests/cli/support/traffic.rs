//! The project the traffic receiver's tests share: one OpenAI-kind pin on the simulator, its
//! probes run once at start and then once a year, so every later verdict comes from traffic.

use modelpin::provider::ProviderKind;

use crate::harness::Sim;
use crate::support::pins::Pins;

pub const ID: &str = "acme-pro-001";

/// Probes once a year (and once at start).
pub const YEARLY: &str = "0 0 0 1 1 *";

/// A daemon's pins.toml for traffic tests; add `[traffic]` keys with [`Pins::traffic`].
pub fn pins(sim: &Sim) -> Pins {
    Pins::one(ProviderKind::OpenAi, &sim.url(ProviderKind::OpenAi), ID)
        .setting("timeout", "5s")
        .daemon()
        .setting("schedule", YEARLY)
        .each_pin("samples", 2)
}
