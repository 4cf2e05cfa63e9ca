//! The overview at `/`: one sentence that says what is wrong, then one card per pin, worst
//! first: its status and since when, what it serves now and at lock, its last audit and
//! retirement in as many columns as the width allows, the open findings with what to do on
//! their own full-width row, and its recent audits as a strip of marks that link to each audit
//! on the pin's page. Nothing is wider than the screen: long IDs are shortened in the middle with
//! the whole ID in `title`, and the facts wrap into fewer columns on a phone.

use std::fmt::Write as _;

use crate::daemon::page::html::{
    Fit, document, esc, findings_list, id_code, id_link, id_text, locked_cell, retirement_cell,
    segment, served_cell, since_text, standing_badge, time_tag,
};
use crate::daemon::page::svg::{status_class, strip_summary};
use crate::daemon::page::{Aside, Mark, Meta, PinView, SetAside, Standing, TRAFFIC_RULE};
use crate::words::{count, count_of};

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
        "<section aria-labelledby=\"pins\"><p id=\"pins\" class=\"m\">{}, most urgent first</p>",
        count_of(pins.len(), "pin")
    );
    for view in pins {
        card(&mut main, view);
    }
    let _ = write!(
        main,
        "</section><p class=\"m rule\">Traffic verdicts: {TRAFFIC_RULE}</p>"
    );
    document("modelpin status", meta, &main)
}

fn card(out: &mut String, view: &PinView) {
    let standing = Standing::of(view);
    let href = format!("pins/{}", segment(&view.id));
    let class = view
        .latest
        .as_ref()
        .map_or("p", |r| status_class(r.pin.status));
    let _ = write!(
        out,
        "<article class=\"pin {class}\" data-pin=\"{}\"><div class=\"head\"><h2>{}</h2>{}{}<span class=\"m\">{} · {}</span></div>",
        id_text(&view.id),
        id_link(&href, &view.id, Fit::Full),
        standing_badge(standing),
        since_text(view),
        id_text(&view.provider),
        id_code(&view.model, Fit::Short),
    );
    let _ = write!(
        out,
        "<dl class=\"facts\"><div><dt>Served now</dt><dd>{}</dd></div><div><dt>At lock</dt><dd>{}</dd></div><div><dt>Last audit</dt><dd>{}</dd></div><div><dt>Retirement</dt><dd>{}</dd></div></dl>",
        served_cell(view, Fit::Short),
        locked_cell(view, Fit::Short),
        last_audit(view),
        retirement_cell(view, Fit::Short),
    );
    if let Some(r) = view.latest.as_ref().filter(|r| !r.pin.findings.is_empty()) {
        let _ = write!(
            out,
            "<div class=\"what\">{}</div>",
            findings_list(
                &r.pin.findings,
                OVERVIEW_FINDINGS,
                OVERVIEW_TEXT_CHARS,
                &href
            )
        );
    }
    if let Some(aside) = &view.aside {
        let _ = write!(out, "<p class=\"m aside\">{}</p>", aside_text(aside));
    }
    out.push_str(&strip(&href, &view.marks));
    out.push_str("</article>");
}

fn last_audit(view: &PinView) -> String {
    view.latest.as_ref().map_or("—".to_owned(), |r| {
        if r.source.is_some() {
            format!(
                "{}<div class=\"m\">from traffic: {}</div>",
                time_tag(r.finished_at),
                count(r.pin.calls.sent, "span")
            )
        } else {
            format!(
                "{}<div class=\"m\">{} of {} ok</div>",
                time_tag(r.finished_at),
                r.pin.calls.ok,
                count(r.pin.calls.sent, "call")
            )
        }
    })
}

/// Why a traffic verdict no longer sets the status, in words.
#[must_use]
pub fn aside_text(aside: &SetAside) -> String {
    let why = match aside.why {
        Aside::LaterProbe(at) => format!("a later probe audit ({}) found no drift", time_tag(at)),
        Aside::Quiet => format!(
            "no spans for {} minutes",
            crate::daemon::page::TRAFFIC_COUNTS_MINUTES
        ),
    };
    format!(
        "Traffic verdict {} of {} no longer counts: {why}.",
        aside.status.as_str(),
        time_tag(aside.judged_at)
    )
}

/// The recent audits as marks, oldest left and the newest at the right edge, each linking to
/// `{href}#a-<millis>`; traffic verdicts are the shorter marks. `href` is already escaped.
#[must_use]
pub fn strip(href: &str, marks: &[Mark]) -> String {
    let summary = esc(&strip_summary(marks)).into_owned();
    let mut out = format!("<div class=\"strip\" role=\"group\" aria-label=\"{summary}\">");
    for mark in marks {
        let label = format!(
            "{}: {}{}",
            crate::daemon::page::html::time_text(mark.started_at),
            mark.status.as_str(),
            if mark.traffic { " (traffic)" } else { "" }
        );
        let _ = write!(
            out,
            "<a href=\"{href}#{}\" class=\"{}{}\" title=\"{label}\" aria-label=\"{label}\"></a>",
            mark.anchor(),
            status_class(mark.status),
            if mark.traffic { " t" } else { "" },
        );
    }
    out.push_str("</div>");
    match (marks.first(), marks.last()) {
        (Some(first), Some(last)) if marks.len() > 1 => {
            let _ = write!(
                out,
                "<div class=\"axis m\"><span>{}</span><span>{summary}</span><span>{}</span></div>",
                time_tag(first.started_at),
                time_tag(last.started_at)
            );
        }
        _ => {
            let _ = write!(out, "<div class=\"axis m\"><span>{summary}</span></div>");
        }
    }
    out
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
        let all = match pins.len() {
            1 => "The pin is ok.".to_owned(),
            n => format!("All {n} pins ok."),
        };
        format!("<span class=\"st k\">✓ {all}</span>")
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
        "marks: {} ok, {} warning, {} inconclusive, {} drift; short marks are traffic verdicts",
        legend_mark("k"),
        legend_mark("w"),
        legend_mark("i"),
        legend_mark("d")
    )
}

fn legend_mark(class: &str) -> String {
    format!("<span class=\"key {class}\" aria-hidden=\"true\"></span>")
}
