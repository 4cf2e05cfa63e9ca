//! The overview at `/`: one sentence that says what is wrong, then every pin, worst first, with
//! its status and since when, what it serves now and at lock, its retirement, the open findings
//! with what to do, and a strip of its recent audits linking to each on the pin's page.

use std::fmt::Write as _;

use crate::daemon::page::html::{
    document, findings_list, id_text, locked_cell, retirement_cell, segment, served_cell,
    since_text, standing_badge, time_tag,
};
use crate::daemon::page::svg::strip;
use crate::daemon::page::{Meta, PinView, Standing};

/// Longest finding message or action shown on the overview, in characters.
pub const OVERVIEW_TEXT_CHARS: usize = 300;

/// Findings listed per pin on the overview; the rest are on its page.
const OVERVIEW_FINDINGS: usize = 3;

/// The overview: a headline that says what is wrong, then every pin, worst first.
#[must_use]
pub fn overview(pins: &[PinView], meta: &Meta) -> String {
    let mut main = format!(
        "<h1>modelpin status</h1><p>{}</p><p class=\"m\">Latest audit {} · refreshes by itself · {}</p>",
        headline(pins),
        time_tag(meta.generated),
        legend()
    );
    let _ = write!(
        main,
        "<table><caption>{} pins, most urgent first</caption><thead><tr><th scope=\"col\">Pin</th><th scope=\"col\">Status</th><th scope=\"col\">Served now</th><th scope=\"col\">At lock</th><th scope=\"col\">Last audit</th><th scope=\"col\">Retirement</th><th scope=\"col\">Open findings and what to do</th><th scope=\"col\">Recent audits</th></tr></thead><tbody>",
        pins.len()
    );
    for view in pins {
        row(&mut main, view);
    }
    main.push_str("</tbody></table>");
    document("modelpin status", meta, &main)
}

fn row(out: &mut String, view: &PinView) {
    let standing = Standing::of(view);
    let href = format!("pins/{}", segment(&view.id));
    let last = view.latest.as_ref().map_or("—".to_owned(), |r| {
        if r.source.is_some() {
            format!(
                "{}<div class=\"m\">from traffic: {} spans</div>",
                time_tag(r.finished_at),
                r.pin.calls.sent
            )
        } else {
            format!(
                "{}<div class=\"m\">{}/{} calls ok</div>",
                time_tag(r.finished_at),
                r.pin.calls.ok,
                r.pin.calls.sent
            )
        }
    });
    let findings = view.latest.as_ref().map_or(String::new(), |r| {
        findings_list(
            &r.pin.findings,
            OVERVIEW_FINDINGS,
            OVERVIEW_TEXT_CHARS,
            &href,
        )
    });
    let _ = write!(
        out,
        "<tr><th scope=\"row\"><a href=\"{href}\">{}</a><div class=\"m\">{} · <code>{}</code></div></th><td data-l=\"Status\">{}{}</td><td data-l=\"Served now\">{}</td><td data-l=\"At lock\">{}</td><td data-l=\"Last audit\">{last}</td><td data-l=\"Retirement\">{}</td><td data-l=\"Findings\">{findings}</td><td data-l=\"Recent\">{}</td></tr>",
        id_text(&view.id),
        id_text(&view.provider),
        id_text(&view.model),
        standing_badge(standing),
        since_text(view),
        served_cell(view),
        locked_cell(view),
        retirement_cell(view),
        strip(&href, &view.marks),
    );
}

/// One sentence: everything fine, or how many pins need attention and why.
#[must_use]
pub fn headline(pins: &[PinView]) -> String {
    let count = |s: Standing| pins.iter().filter(|v| Standing::of(v) == s).count();
    let parts: Vec<String> = [
        Standing::Drift,
        Standing::Inconclusive,
        Standing::Warning,
        Standing::Pending,
    ]
    .into_iter()
    .map(|s| (s, count(s)))
    .filter(|(_, n)| *n > 0)
    .map(|(s, n)| format!("{n} {}", s.as_str()))
    .collect();
    if pins.is_empty() {
        "No pins are configured.".to_owned()
    } else if parts.is_empty() {
        format!("<span class=\"st k\">✓ All {} pins ok.</span>", pins.len())
    } else {
        let ok = count(Standing::Ok);
        format!(
            "<strong>Needs attention: {}.</strong> {ok} ok.",
            parts.join(", ")
        )
    }
}

fn legend() -> String {
    format!(
        "strip colours: {} ok, {} warning, {} inconclusive, {} drift",
        legend_mark("k"),
        legend_mark("w"),
        legend_mark("i"),
        legend_mark("d")
    )
}

fn legend_mark(class: &str) -> String {
    format!(
        "<svg width=\"8\" height=\"10\" aria-hidden=\"true\"><rect width=\"8\" height=\"10\" class=\"{class}\"/></svg>"
    )
}
