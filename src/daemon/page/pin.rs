//! One pin's page: its facts as on the overview, every open finding in full, its recent history
//! as small charts (served model, token counts, cost per call, p-values), and a table with a row
//! per audit that the overview's strip links to (`#a-<millis>`). The table is also the charts'
//! data in text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::daemon::page::html::{
    Fit, document, findings_list, id_code, id_text, locked_cell, outside, retirement_cell,
    served_cell, since_text, standing_badge, time_tag,
};
use crate::daemon::page::overview::{aside_text, strip};
use crate::daemon::page::svg::{Scale, chart, served_strip, status_class, swatch};
use crate::daemon::page::{Meta, PinHistory, Standing, TRAFFIC_RULE, anchor};
use crate::store::AuditRecord;

/// Longest finding message or action shown on a pin's page, in characters.
const PIN_TEXT_CHARS: usize = 1000;

/// Served IDs in the legend and the served-models table (those seen in the most audits); the
/// rest are counted in one row. With `PIN_AUDITS` rows of at most `SERVED_PER_ROW` IDs each,
/// this bounds the page whatever the served IDs did (`MAX_PAGE_BYTES`).
const LEGEND_IDS: usize = 24;

/// Served IDs listed per audit row; the rest are counted.
const SERVED_PER_ROW: usize = 4;

#[must_use]
pub fn page(history: &PinHistory, meta: &Meta) -> String {
    let view = &history.view;
    let mut main = format!(
        "<p><a href=\"../\">← all pins</a></p><h1>{}</h1><p>{} {}</p>",
        id_text(&view.id),
        standing_badge(Standing::of(view)),
        since_text(view)
    );
    let last = view
        .latest
        .as_ref()
        .map_or("never".to_owned(), |r| time_tag(r.finished_at));
    let _ = write!(
        main,
        "<table><caption>Now</caption><tbody><tr><th scope=\"row\">Provider · model</th><td>{} · {}</td></tr><tr><th scope=\"row\">Served now</th><td>{}</td></tr><tr><th scope=\"row\">At lock</th><td>{}</td></tr><tr><th scope=\"row\">Last audit</th><td>{last}</td></tr><tr><th scope=\"row\">Retirement</th><td>{}</td></tr><tr><th scope=\"row\">Spent in the last 24 hours</th><td>{}</td></tr></tbody></table>",
        id_text(&view.provider),
        id_code(&view.model, Fit::Full),
        served_cell(view, Fit::Full),
        locked_cell(view, Fit::Full),
        retirement_cell(view, Fit::Full),
        spend_text(&history.records, meta.generated)
    );
    if let Some(aside) = &view.aside {
        let _ = write!(
            main,
            "<p class=\"m aside\">{} {TRAFFIC_RULE}</p>",
            aside_text(aside)
        );
    }
    let findings = view
        .latest
        .as_ref()
        .map_or(&[][..], |r| &r.pin.findings[..]);
    let _ = write!(
        main,
        "<h2>Open findings and what to do</h2>{}",
        findings_list(findings, usize::MAX, PIN_TEXT_CHARS, "")
    );
    charts(&mut main, history);
    served_table(&mut main, &history.records);
    audits_table(&mut main, &history.records);
    document(&format!("{} · modelpin", view.id), meta, &main)
}

/// What the pin's audits spent in the day before `now`: USD (where priced), audits and calls,
/// and the month at that rate; "at least" when the day reaches past the records kept.
fn spend_text(records: &[AuditRecord], now: chrono::DateTime<chrono::Utc>) -> String {
    let from = now - chrono::Duration::days(1);
    let day: Vec<&AuditRecord> = records
        .iter()
        .filter(|r| r.source.is_none() && r.finished_at > from && r.finished_at <= now)
        .collect();
    let calls: u64 = day.iter().map(|r| r.pin.calls.sent).sum();
    let priced: Vec<f64> = day.iter().filter_map(|r| r.pin.cost_usd).collect();
    let partial = records.len() >= crate::daemon::page::PIN_AUDITS
        && records.first().is_some_and(|r| r.finished_at > from);
    let counted = format!(
        "{}{} ({})",
        if partial { "at least " } else { "" },
        crate::words::count(day.len() as u64, "audit"),
        crate::words::count(calls, "call")
    );
    if priced.is_empty() {
        return format!("{counted}; no price, so no cost");
    }
    let usd: f64 = priced.iter().sum();
    let unpriced = day.len() - priced.len();
    let rest = if unpriced > 0 {
        format!(
            "; {} without a cost",
            crate::words::count(unpriced as u64, "audit")
        )
    } else {
        String::new()
    };
    format!(
        "${usd:.4} in {counted}, about ${:.2} a month (30 days) at that rate{rest}",
        usd * 30.0
    )
}

/// Per audit: a value per successful call, `None` when no call succeeded.
fn per_call(
    records: &[AuditRecord],
    value: impl Fn(&AuditRecord) -> Option<f64>,
) -> Vec<Option<f64>> {
    records
        .iter()
        .map(|r| {
            let ok = r.pin.calls.ok;
            (ok > 0).then(|| value(r).map(|v| v / ok as f64)).flatten()
        })
        .collect()
}

/// The smallest Holm-adjusted p-value of an audit's behaviour tests.
fn smallest_p(record: &AuditRecord) -> Option<f64> {
    record
        .pin
        .behaviour
        .iter()
        .filter_map(|t| t.adjusted_p)
        .filter(|p| p.is_finite())
        .reduce(f64::min)
}

/// "from 12 to 15, latest 15" for a chart's title.
fn range_text(values: &[Option<f64>], digits: usize) -> String {
    let present: Vec<f64> = values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let (Some(lo), Some(hi), Some(last)) = (
        present.iter().copied().reduce(f64::min),
        present.iter().copied().reduce(f64::max),
        present.last(),
    ) else {
        return "no values".to_owned();
    };
    format!("from {lo:.digits$} to {hi:.digits$}, latest {last:.digits$}")
}

fn figure(out: &mut String, caption: &str, svg: &str) {
    let _ = write!(
        out,
        "<figure><figcaption>{caption}</figcaption>{svg}</figure>"
    );
}

fn charts(out: &mut String, history: &PinHistory) {
    let records = &history.records;
    let n = records.len();
    let _ = write!(out, "<h2>Last {}</h2>", crate::words::count_of(n, "audit"));
    let marks: Vec<_> = records.iter().map(crate::daemon::page::Mark::of).collect();
    figure(out, "Status of each audit, oldest left", &strip("", &marks));
    let (legend, unlisted) = served_legend(records);
    let served: Vec<Option<usize>> = records
        .iter()
        .map(|r| {
            let top = r.pin.served_models.iter().max_by_key(|(_, c)| **c)?;
            legend.iter().position(|(id, _)| id == top.0)
        })
        .collect();
    let names: Vec<String> = legend
        .iter()
        .enumerate()
        .map(|(i, (id, _))| format!("{} {}", swatch(i), id_code(id, Fit::Full)))
        .collect();
    let title = format!(
        "Model served most in each audit: {} different",
        legend.len() + unlisted
    );
    let names = if unlisted > 0 {
        let mut names = names;
        names.push(format!(
            "and {unlisted} more {}",
            crate::words::noun(unlisted as u64, "ID")
        ));
        names
    } else {
        names
    };
    figure(
        out,
        &format!("Served model: {}", names.join(" · ")),
        &served_strip(&title, &served),
    );
    for (caption, values, digits) in [
        (
            "Input tokens per call",
            per_call(records, |r| Some(r.pin.tokens.input as f64)),
            1,
        ),
        (
            "Output tokens per call",
            per_call(records, |r| Some(r.pin.tokens.output as f64)),
            1,
        ),
        (
            "Cost per call (USD)",
            per_call(records, |r| r.pin.cost_usd),
            6,
        ),
    ] {
        let title = format!("{caption}: {}", range_text(&values, digits));
        figure(out, &title, &chart(&title, &values, Scale::Linear));
    }
    let p: Vec<Option<f64>> = records.iter().map(smallest_p).collect();
    let title = format!(
        "Smallest adjusted p-value, p = 1 at the top and 1e-8 at the bottom (log scale); drift below the dashed line at alpha {}: {}",
        history.alpha,
        range_text(&p, 4)
    );
    figure(
        out,
        &title,
        &chart(
            &title,
            &p,
            Scale::PValue {
                alpha: history.alpha,
            },
        ),
    );
    evidence_chart(out, records);
}

/// The behaviour evidence accumulated since the lock against its threshold, when the daemon
/// weighed any of these audits.
fn evidence_chart(out: &mut String, records: &[AuditRecord]) {
    let Some(last) = records.iter().rev().find_map(|r| r.pin.lifetime.as_ref()) else {
        return;
    };
    let values: Vec<Option<f64>> = records
        .iter()
        .map(|r| r.pin.lifetime.as_ref().map(|l| l.statistic))
        .collect();
    let since = last
        .since
        .map(|s| format!(", building since {}", s.format("%Y-%m-%d %H:%M UTC")))
        .unwrap_or_default();
    let alarm = match &last.alarm {
        Some(a) => format!("; alarmed {}", a.at.format("%Y-%m-%d %H:%M UTC")),
        None => String::new(),
    };
    let title = format!(
        "Behaviour evidence since the lock (Shiryaev–Roberts statistic, log scale, 1 at the top): {:.3e} after {}{since}; an alarm below the dashed line at {:.3e}; with each audit's own look, a false alarm comes once in {:.0} years on average{alarm}",
        last.statistic,
        crate::words::count(last.audits, "audit"),
        last.threshold,
        last.years_to_false_alarm
    );
    let scale = Scale::Evidence {
        threshold: last.threshold,
    };
    figure(out, &title, &chart(&title, &values, scale));
}

/// The served IDs seen in the most audits (at most `LEGEND_IDS`) in order of first sight, with
/// the audits each was seen in; and how many other IDs were seen.
fn served_legend(records: &[AuditRecord]) -> (Vec<(String, Seen)>, usize) {
    let mut seen: BTreeMap<&str, Seen> = BTreeMap::new();
    for r in records {
        for id in r.pin.served_models.keys() {
            let entry = seen.entry(id).or_insert(Seen {
                first: r.started_at,
                last: r.started_at,
                audits: 0,
            });
            entry.last = r.started_at;
            entry.audits += 1;
        }
    }
    let mut legend: Vec<(String, Seen)> =
        seen.into_iter().map(|(id, s)| (id.to_owned(), s)).collect();
    legend.sort_by(|a, b| b.1.audits.cmp(&a.1.audits).then(a.1.first.cmp(&b.1.first)));
    let rest = legend.split_off(LEGEND_IDS.min(legend.len()));
    legend.sort_by_key(|(_, s)| s.first);
    (legend, rest.len())
}

struct Seen {
    first: chrono::DateTime<chrono::Utc>,
    last: chrono::DateTime<chrono::Utc>,
    audits: usize,
}

fn served_table(out: &mut String, records: &[AuditRecord]) {
    out.push_str("<table><caption>Served models</caption><thead><tr><th scope=\"col\">Model</th><th scope=\"col\">First seen</th><th scope=\"col\">Last seen</th><th scope=\"col\">Audits</th></tr></thead><tbody>");
    let (legend, unlisted) = served_legend(records);
    for (i, (id, seen)) in legend.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><th scope=\"row\">{} {}</th><td data-l=\"First seen\">{}</td><td data-l=\"Last seen\">{}</td><td data-l=\"Audits\">{}</td></tr>",
            swatch(i),
            id_code(id, Fit::Full),
            time_tag(seen.first),
            time_tag(seen.last),
            seen.audits
        );
    }
    if unlisted > 0 {
        let _ = write!(
            out,
            "<tr><th scope=\"row\">{} not listed</th><td colspan=\"3\">seen in fewer audits than those above</td></tr>",
            crate::words::count(unlisted as u64, "other served ID")
        );
    }
    out.push_str("</tbody></table>");
}

fn audits_table(out: &mut String, records: &[AuditRecord]) {
    out.push_str("<table><caption>Audits, newest first</caption><thead><tr><th scope=\"col\">Started</th><th scope=\"col\">Status</th><th scope=\"col\">Served</th><th scope=\"col\">Calls ok</th><th scope=\"col\">Tokens in / out</th><th scope=\"col\">Cost per call</th><th scope=\"col\">Smallest p</th><th scope=\"col\">Findings</th></tr></thead><tbody>");
    for r in records.iter().rev() {
        let mut served: Vec<String> = r
            .pin
            .served_models
            .iter()
            .take(SERVED_PER_ROW)
            .map(|(id, n)| format!("{} ×{n}", id_code(id, Fit::Full)))
            .collect();
        let more = r.pin.served_models.len().saturating_sub(SERVED_PER_ROW);
        if more > 0 {
            served.push(format!(
                "and {more} more {}",
                crate::words::noun(more as u64, "ID")
            ));
        }
        let ok = r.pin.calls.ok;
        let cost = r
            .pin
            .cost_usd
            .filter(|_| ok > 0)
            .map_or("—".to_owned(), |c| format!("${:.6}", c / ok as f64));
        let p = smallest_p(r).map_or("—".to_owned(), |p| format!("{p:.2e}"));
        let codes: Vec<&str> = r.pin.findings.iter().map(|f| f.code.as_str()).collect();
        let _ = write!(
            out,
            "<tr id=\"{}\"><th scope=\"row\">{}<div class=\"m\"><code>{}</code></div></th><td data-l=\"Status\"><span class=\"st {}\">{}</span>{}</td><td data-l=\"Served\">{}</td><td data-l=\"Calls ok\">{}/{}</td><td data-l=\"Tokens\">{} / {}</td><td data-l=\"Cost per call\">{cost}</td><td data-l=\"Smallest p\">{p}</td><td data-l=\"Findings\">{}</td></tr>",
            anchor(r.started_at),
            time_tag(r.started_at),
            outside(&r.audit_id, 64),
            status_class(r.pin.status),
            r.pin.status.as_str(),
            if r.source.is_some() {
                "<div class=\"m\">from traffic</div>"
            } else {
                ""
            },
            if served.is_empty() {
                "—".to_owned()
            } else {
                served.join("<br>")
            },
            ok,
            r.pin.calls.sent,
            r.pin.tokens.input,
            r.pin.tokens.output,
            if codes.is_empty() {
                "none".to_owned()
            } else {
                codes.join(", ")
            },
        );
    }
    out.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::daemon::page::{MAX_PAGE_BYTES, Meta, PIN_AUDITS, PinHistory};
    use crate::finding::{Code, Finding};

    /// Pin `p`'s page over `records` (its latest the newest), rendered now.
    fn page_of(records: Vec<crate::store::AuditRecord>, locked: Option<Vec<String>>) -> String {
        let mut view = crate::daemon::page::tests::view("p", None, None);
        view.latest = records.last().cloned();
        view.locked = locked;
        let history = PinHistory {
            view,
            records,
            alpha: 0.001,
        };
        let meta = Meta {
            generated: chrono::Utc::now(),
            etag: String::new(),
        };
        super::page(&history, &meta)
    }

    /// A page of the longest records anything could have stored before the budget: a thousand
    /// served IDs of markup per audit, every finding code with a long message of markup.
    #[test]
    fn a_pin_page_of_hostile_records_stays_within_its_bound() {
        let served: BTreeMap<String, u64> = (0..1000)
            .map(|i| (format!("{i:04}{}", "&<".repeat(200)), 1))
            .collect();
        let findings: Vec<Finding> = Code::ALL
            .iter()
            .map(|c| Finding {
                code: *c,
                severity: c.severity(),
                message: "&\"".repeat(3000),
                evidence: serde_json::json!({}),
                action: Some("<&".repeat(3000)),
            })
            .collect();
        let records: Vec<_> = (0..PIN_AUDITS)
            .map(|i| {
                let at = 1_800_000_000 + i64::try_from(i).unwrap();
                let mut r = crate::store::tests::record("p", at, &"&".repeat(200));
                r.pin.served_models = served.clone();
                r.pin.findings = findings.clone();
                r
            })
            .collect();
        let html = page_of(records, Some(vec!["m".to_owned()]));
        assert!(html.len() <= MAX_PAGE_BYTES, "{} bytes", html.len());
        assert!(html.contains("and 983 more served IDs"), "the rest counted");
    }

    #[test]
    fn the_evidence_since_the_lock_is_plotted_against_its_threshold_once_the_daemon_weighed_it() {
        let records: Vec<_> = (0..5u32)
            .map(|i| {
                let mut r = crate::store::tests::record("p", 1_800_000_000 + i64::from(i), "a");
                r.pin.lifetime = (i > 0).then(|| crate::report::LifetimeEvidence {
                    audits: u64::from(i),
                    smallest_p: Some(0.5),
                    look: None,
                    conformal_p: Some(0.5),
                    e_value: Some(0.64),
                    statistic: 10f64.powi(i32::try_from(i).unwrap()),
                    threshold: 876_000.0,
                    since: None,
                    years_to_false_alarm: 100.0,
                    held_back: i == 4,
                    alarm: None,
                    next_behaviour: None,
                });
                r
            })
            .collect();
        let page = |records| page_of(records, None);
        let html = page(records.clone());
        assert!(
            html.contains("Behaviour evidence since the lock (Shiryaev–Roberts statistic, log scale, 1 at the top): 1.000e4 after 4 audits; an alarm below the dashed line at 8.760e5; with each audit's own look, a false alarm comes once in 100 years on average"),
            "{html}"
        );
        let at = html.find("Behaviour evidence since the lock").unwrap();
        let figure = &html[at..at + html[at..].find("</svg>").unwrap()];
        assert!(figure.contains("class=\"alpha\""), "the threshold line");
        // The audit the daemon did not weigh is left out of the line: one polyline.
        assert_eq!(figure.matches("<polyline").count(), 1, "{figure}");
        let unweighed: Vec<_> = records
            .into_iter()
            .map(|mut r| {
                r.pin.lifetime = None;
                r
            })
            .collect();
        assert!(!page(unweighed).contains("Behaviour evidence since the lock"));
    }

    #[test]
    fn the_day_s_spend_counts_the_audits_of_the_last_24_hours() {
        let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let at = |hours_ago: i64, cost: Option<f64>| {
            let mut r = crate::store::tests::record("p", 1_800_000_000 - hours_ago * 3600, "a");
            r.pin.calls.sent = 316;
            r.pin.cost_usd = cost;
            r
        };
        for (records, text) in [
            (
                vec![at(30, Some(9.0)), at(20, Some(0.05)), at(1, Some(0.05))],
                "$0.1000 in 2 audits (632 calls), about $3.00 a month (30 days) at that rate",
            ),
            (
                vec![at(2, None), at(1, Some(0.05))],
                "$0.0500 in 2 audits (632 calls), about $1.50 a month (30 days) at that rate; 1 audit without a cost",
            ),
            (
                vec![at(1, None)],
                "1 audit (316 calls); no price, so no cost",
            ),
            (vec![], "0 audits (0 calls); no price, so no cost"),
        ] {
            assert_eq!(super::spend_text(&records, now), text);
        }
        let full: Vec<_> = (0..PIN_AUDITS).map(|_| at(1, Some(0.01))).collect();
        assert!(super::spend_text(&full, now).contains("in at least 100 audits"));
    }
}
