//! The status page's fleet: three pins in the three states a page must tell apart, and the
//! overview's rows read back from its HTML.

use modelpin::provider::ProviderKind;
use modelpin::sim::scenario::Reported;

use crate::harness::{Sim, Test};
use crate::support::daemon::Daemon;
use crate::support::pins::{Pin, Pins, Provider};
use crate::support::wait::{DEADLINE, poll};
use crate::world::{model, reroute, single};

pub const STEADY: &str = "acme-pro-001";
pub const SWAPPED: &str = "acme-mini-002";

/// Three pins: `steady` stays ok, `swapped` is served `served_instead` after its lock (drift),
/// `unlocked` has no baseline (inconclusive), audited on `schedule`; `token_env` names the
/// variable of the API token, if one is wanted.
pub fn fleet(served_instead: &str, schedule: &str, token_env: Option<&str>) -> (Sim, Test) {
    let sim = Sim::start(reroute(
        single(STEADY, model(STEADY, 4.0, (1.25, 10.0))),
        SWAPPED,
        model(SWAPPED, 4.0, (0.5, 2.0)),
        Reported::Honest,
    ));
    let mut pins = Pins::new()
        .setting("timeout", "5s")
        .setting("budget", "30s")
        .daemon()
        .setting("schedule", schedule)
        .provider(Provider::new(
            ProviderKind::Gemini,
            &sim.url(ProviderKind::Gemini),
        ))
        .pin(Pin::new("steady", STEADY).samples(2))
        .pin(Pin::new("swapped", SWAPPED).samples(2))
        .pin(Pin::new("unlocked", STEADY).samples(2));
    if let Some(var) = token_env {
        pins = pins.setting("api_token_env", var);
    }
    let test = pins.project();
    test.run(&["lock", "--pin", "steady", "--pin", "swapped"])
        .code(0);
    sim.set(reroute(
        sim.sim.scenario(),
        SWAPPED,
        model(served_instead, 4.0, (0.5, 2.0)),
        Reported::Honest,
    ));
    (sim, test)
}

/// (pin id, status word) of each pin's card on the overview, in page order.
pub fn rows(html: &str) -> Vec<(String, String)> {
    html.split("<article class=\"pin ")
        .skip(1)
        .filter_map(|card| {
            let id = card
                .split_once("data-pin=\"")?
                .1
                .split_once('"')?
                .0
                .to_owned();
            let status = card
                .split_once("<span class=\"st ")?
                .1
                .split_once("</span>")?
                .0;
            let word = status.rsplit_once(' ').map_or(status, |(_, w)| w);
            Some((id, word.to_owned()))
        })
        .collect()
}

/// Waits until the overview shows `want` (id, status) rows in this order; the page then.
pub fn wait_for(daemon: &Daemon, want: &[(&str, &str)]) -> String {
    let page = || daemon.get("/").map(|r| r.text()).unwrap_or_default();
    let reached = poll(DEADLINE, || {
        let html = page();
        let got = rows(&html);
        let same = got.len() == want.len()
            && got
                .iter()
                .zip(want)
                .all(|((id, st), (wid, wst))| id == wid && st == wst);
        same.then_some(html)
    });
    reached.unwrap_or_else(|| {
        let last = page();
        panic!("rows {:?}\n{last}\n{}", rows(&last), daemon.log())
    })
}
