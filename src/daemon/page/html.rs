//! What both pages share: the document shell with its inline style and refresh script, escaping,
//! and the cells that describe a pin.
//!
//! Text a provider or the config controls goes through `outside` where it is written: control
//! and bidirectional characters shown as escapes (`text::terminal`), cut to a bound with a hash
//! (`text::bounded`), then HTML-escaped. A served model named `<script>` is text on the page.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};

use crate::daemon::page::{Meta, PinView, Standing};
use crate::finding::{Finding, Severity};
use crate::text::{DISPLAY_ID_CHARS, bounded, terminal};
use crate::words::{count, count_of};

/// The page's style: light and dark schemes; on `/` one card per pin whose facts flow into as
/// many columns as fit, so nothing scrolls sideways from a phone to a wide screen.
pub const STYLE: &str = r":root{color-scheme:light dark;--bg:#fff;--card:#f6f8fa;--fg:#1f2328;--mute:#59636e;--line:#d1d9e0;--k:#1a7f37;--w:#9a6700;--d:#cf222e;--i:#6e40c9;--p:#8c959f;--m0:#0969da;--m1:#bf3989;--m2:#1a7f37;--m3:#9a6700;--m4:#6e40c9;--m5:#59636e}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--card:#151b23;--fg:#e6edf3;--mute:#9198a1;--line:#3d444d;--k:#3fb950;--w:#d29922;--d:#f85149;--i:#a371f7;--p:#656c76;--m0:#4493f8;--m1:#db61a2;--m2:#3fb950;--m3:#d29922;--m4:#a371f7;--m5:#9198a1}}
*{box-sizing:border-box}body{margin:0;padding:1rem;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif}
main{max-width:80rem;margin:0 auto}a{color:inherit}h1{font-size:1.35rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
.m,.n{color:var(--mute);font-size:.9em}table{border-collapse:collapse;width:100%}
caption{text-align:left;font-weight:600;padding:.5rem 0}th,td{text-align:left;vertical-align:top;padding:.45rem .5rem;border-top:1px solid var(--line)}
thead th{font-size:.85em;color:var(--mute);border-top:0}code{font-size:.92em;overflow-wrap:anywhere}time{white-space:nowrap}
ul{margin:0;padding-left:1.1rem}li+li{margin-top:.3rem}.todo{color:var(--mute)}
.st{font-weight:700;white-space:nowrap}.st.k{color:var(--k)}.st.w{color:var(--w)}.st.d{color:var(--d)}.st.i{color:var(--i)}.st.p{color:var(--mute)}
.chg{color:var(--d);font-weight:600}.rule{max-width:60rem}
.pin{background:var(--card);border:1px solid var(--line);border-left:6px solid var(--p);border-radius:6px;margin:.75rem 0;padding:.6rem .8rem;min-width:0}
.pin.d{border-left-color:var(--d)}.pin.w{border-left-color:var(--w)}.pin.i{border-left-color:var(--i)}.pin.k{border-left-color:var(--k)}
.pin h2{display:inline;font-size:1.1rem;margin:0 .6rem 0 0;overflow-wrap:anywhere}.head{display:flex;flex-wrap:wrap;align-items:baseline;gap:.2rem .8rem}.head .m{overflow-wrap:anywhere}
.facts{display:grid;grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:.3rem 1rem;margin:.5rem 0}.facts div{min-width:0}.facts dt{color:var(--mute);font-size:.85em}.facts dd{margin:0}.facts code{font-size:.85em}
@media (min-width:1000px){.facts{grid-template-columns:minmax(0,3fr) minmax(0,3fr) minmax(0,2fr) minmax(0,2fr)}}
.what{border-top:1px solid var(--line);padding-top:.4rem;margin-top:.3rem}.aside{margin:.3rem 0}
.strip{display:flex;justify-content:flex-end;gap:2px;margin-top:.5rem;flex-wrap:wrap}.strip a{flex:1 1 0;min-width:8px;max-width:2.75rem;height:1.6rem;border-radius:3px;background:var(--p)}
.strip a.t{height:1rem;align-self:flex-end}.strip a:hover,.strip a:focus{outline:2px solid var(--fg);outline-offset:1px}
.strip a.k,.key.k{background:var(--k)}.strip a.w,.key.w{background:var(--w)}.strip a.d,.key.d{background:var(--d)}.strip a.i,.key.i{background:var(--i)}
.key{display:inline-block;width:.7rem;height:.7rem;border-radius:2px;vertical-align:-1px}.axis{display:flex;flex-wrap:wrap;justify-content:space-between;gap:0 1rem}
svg .k{fill:var(--k)}svg .w{fill:var(--w)}svg .d{fill:var(--d)}svg .i{fill:var(--i)}
svg .m0{fill:var(--m0)}svg .m1{fill:var(--m1)}svg .m2{fill:var(--m2)}svg .m3{fill:var(--m3)}svg .m4{fill:var(--m4)}svg .m5{fill:var(--m5)}
.sstrip{max-width:100%;height:auto}.chart{width:100%;max-width:420px;height:70px;display:block}.frame{fill:none;stroke:var(--line)}.zone{fill:var(--d);fill-opacity:.12}
.line{fill:none;stroke:var(--m0);stroke-width:1.5;vector-effect:non-scaling-stroke}.dot{fill:var(--m0)}.alpha{stroke:var(--d);stroke-dasharray:4 3;vector-effect:non-scaling-stroke}
figure{margin:0 0 1rem}figcaption{font-size:.9em;margin-bottom:.2rem}tr:target{outline:2px solid var(--m0)}
@media (max-width:760px){table,caption,thead,tbody,tr,th,td{display:block}thead{position:absolute;left:-9999px}tr{border:1px solid var(--line);border-radius:6px;margin:.6rem 0;padding:.3rem .5rem}th,td{border:0;padding:.2rem 0}td[data-l]::before{content:attr(data-l) ': ';color:var(--mute)}body{padding:.6rem}}";

/// Swaps in a fresh `<main>` every 30 s when the page changed (the server answers 304 while it
/// has not), so the page stays current without a reload that would lose the scroll position.
pub const SCRIPT: &str = r#"setInterval(function(){var m=document.querySelector("main");fetch(location.href,{cache:"no-cache",credentials:"same-origin"}).then(function(r){return r.ok&&r.headers.get("ETag")!==m.dataset.etag?r.text():null}).then(function(t){if(!t)return;var n=new DOMParser().parseFromString(t,"text/html").querySelector("main");if(n){m.replaceWith(n);m=n}}).catch(function(){})},30000);"#;

/// `'sha256-…'` of the inline style and script, for the Content-Security-Policy.
pub static STYLE_HASH: LazyLock<String> = LazyLock::new(|| csp_hash(STYLE));
pub static SCRIPT_HASH: LazyLock<String> = LazyLock::new(|| csp_hash(SCRIPT));

fn csp_hash(text: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The policy every page is served with: nothing loads but the page's own style and script, and
/// the script may only fetch from the daemon.
#[must_use]
pub fn content_security_policy() -> String {
    format!(
        "default-src 'none'; style-src {}; script-src {}; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        *STYLE_HASH, *SCRIPT_HASH
    )
}

/// Text escaped for HTML content and attribute values.
#[must_use]
pub fn esc(text: &str) -> Cow<'_, str> {
    if !text.contains(['&', '<', '>', '"', '\'']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Text from outside, ready for the page: inert, bounded to `max` characters, escaped.
#[must_use]
pub fn outside(text: &str, max: usize) -> String {
    esc(&bounded(&terminal(text), max)).into_owned()
}

/// Prose from outside (a finding's message or action) as `outside` makes it, with each
/// `` `quoted` `` span set as code. Backticks carry no meaning in HTML, so this runs after
/// escaping; a span left open by the bound stays as it is.
#[must_use]
pub fn prose(text: &str, max: usize) -> String {
    let safe = outside(text, max);
    let mut out = String::with_capacity(safe.len() + 32);
    let mut rest = safe.as_str();
    while let Some(open) = rest.find('`') {
        let Some(close) = rest[open + 1..].find('`') else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str("<code>");
        out.push_str(&rest[open + 1..open + 1 + close]);
        out.push_str("</code>");
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    out
}

/// An ID from outside as the page shows it.
#[must_use]
pub fn id_text(id: &str) -> String {
    outside(id, DISPLAY_ID_CHARS)
}

/// How much of a long ID a cell shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// The overview: at most `SHORT_ID_CHARS`, the whole ID in `title`.
    Short,
    /// A pin's own page: the whole ID (as bounded for display), wrapping where it must.
    Full,
}

/// Longest ID the overview shows whole (wrapping where it must). A Bedrock profile ID
/// (`us.anthropic.claude-sonnet-4-20250514-v1:0`, 42) fits whole in its column at 1280 px;
/// longer ones (Vertex resource paths) keep their head and tail, since the date and version at
/// the end are what tell snapshots apart.
pub const SHORT_ID_CHARS: usize = 48;

/// `<code>` with an ID from outside, shortened in the middle for `Fit::Short` when it is long.
#[must_use]
pub fn id_code(id: &str, fit: Fit) -> String {
    let inert = bounded(&terminal(id), DISPLAY_ID_CHARS).into_owned();
    match shortened(&inert, fit) {
        Some(short) => format!("<code title=\"{}\">{}</code>", esc(&inert), esc(&short)),
        None => format!("<code>{}</code>", esc(&inert)),
    }
}

/// A link to a pin's page with its id, shortened like `id_code`.
#[must_use]
pub fn id_link(href: &str, id: &str, fit: Fit) -> String {
    let inert = bounded(&terminal(id), DISPLAY_ID_CHARS).into_owned();
    match shortened(&inert, fit) {
        Some(short) => format!(
            "<a href=\"{href}\" title=\"{}\">{}</a>",
            esc(&inert),
            esc(&short)
        ),
        None => format!("<a href=\"{href}\">{}</a>", esc(&inert)),
    }
}

/// The head and tail of `text` around `…`, when `fit` asks for it and `text` is too long.
fn shortened(text: &str, fit: Fit) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    if fit == Fit::Full || chars.len() <= SHORT_ID_CHARS {
        return None;
    }
    let tail = SHORT_ID_CHARS * 3 / 5;
    let head = SHORT_ID_CHARS - tail - 1;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    Some(out)
}

pub use crate::text::path_segment as segment;

#[must_use]
pub fn time_text(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// `<time>` with the machine-readable instant.
#[must_use]
pub fn time_tag(at: DateTime<Utc>) -> String {
    format!(
        "<time datetime=\"{}\">{}</time>",
        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        time_text(at)
    )
}

/// The whole document around `main`.
#[must_use]
pub fn document(title: &str, meta: &Meta, main: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"color-scheme\" content=\"light dark\"><title>{}</title><link rel=\"icon\" href=\"data:,\"><style>{STYLE}</style><noscript><meta http-equiv=\"refresh\" content=\"60\"></noscript></head><body><main data-etag=\"{}\">{main}</main><script>{SCRIPT}</script></body></html>",
        esc(title),
        esc(&meta.etag)
    )
}

/// A status as a coloured word with a symbol, so it never depends on colour alone.
#[must_use]
pub fn standing_badge(standing: Standing) -> String {
    let (class, symbol) = match standing {
        Standing::Drift => ("d", "✗"),
        Standing::Inconclusive => ("i", "?"),
        Standing::Warning => ("w", "!"),
        Standing::Pending => ("p", "…"),
        Standing::Ok => ("k", "✓"),
    };
    format!(
        "<span class=\"st {class}\">{symbol} {}</span>",
        standing.as_str()
    )
}

/// Served IDs with their counts; those the lock does not list are marked as changed.
#[must_use]
pub fn served_cell(view: &PinView, fit: Fit) -> String {
    let Some(latest) = &view.latest else {
        return "—".to_owned();
    };
    if latest.pin.served_models.is_empty() {
        return "<span class=\"n\">nothing answered</span>".to_owned();
    }
    let many = latest.pin.served_models.len() > 1;
    // The most frequent few, like a traffic record's (`traffic::budget`), whatever was stored.
    let mut shown: Vec<(&String, &u64)> = latest.pin.served_models.iter().collect();
    shown.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let unlisted = shown.len().saturating_sub(SERVED_CELL_IDS);
    shown.truncate(SERVED_CELL_IDS);
    shown.sort();
    let mut items: Vec<String> = shown
        .into_iter()
        .map(|(id, n)| {
            let count = if many {
                format!(" ×{n}")
            } else {
                String::new()
            };
            let changed = view
                .locked
                .as_ref()
                .is_some_and(|locked| !locked.contains(id));
            let flag = if changed {
                " <span class=\"chg\">not at lock</span>"
            } else {
                ""
            };
            // What the traffic budget summed: how many IDs `(others)` stands for.
            let summed = latest
                .pin
                .capped
                .get("served_models")
                .filter(|_| id == crate::traffic::budget::OTHERS)
                .map_or(String::new(), |o| {
                    format!(" of {}", crate::words::count(o.ids, "distinct ID"))
                });
            format!("{}{count}{summed}{flag}", id_code(id, fit))
        })
        .collect();
    if unlisted > 0 {
        items.push(format!(
            "and {unlisted} more {}",
            crate::words::noun(unlisted as u64, "served ID")
        ));
    }
    items.join("<br>")
}

/// Served IDs a "served" cell lists: a traffic record's 16 and its `(others)`.
const SERVED_CELL_IDS: usize = crate::traffic::budget::MAX_IDS + 1;

#[must_use]
pub fn locked_cell(view: &PinView, fit: Fit) -> String {
    match &view.locked {
        None => "<span class=\"n\">not locked</span>".to_owned(),
        Some(ids) if ids.is_empty() => "<span class=\"n\">nothing recorded</span>".to_owned(),
        Some(ids) => ids
            .iter()
            .map(|id| id_code(id, fit))
            .collect::<Vec<_>>()
            .join("<br>"),
    }
}

/// "in 12 days (2027-01-01) → next-model", "retired 3 days ago", or that none is known.
#[must_use]
pub fn retirement_cell(view: &PinView, fit: Fit) -> String {
    let life = view.latest.as_ref().and_then(|r| r.pin.lifecycle.as_ref());
    let Some(life) = life else {
        return "<span class=\"n\">none announced</span>".to_owned();
    };
    let when = match life.days_left {
        Some(d) if d < 0 => format!("retired {} ago", count(d.unsigned_abs(), "day")),
        Some(0) => "retires today".to_owned(),
        Some(d) => format!("in {}", count(d.unsigned_abs(), "day")),
        None => life.stage.as_str().to_owned(),
    };
    let mut out = outside(&when, 40);
    if let Some(date) = &life.retires {
        let _ = write!(out, " ({})", outside(date, 40));
    }
    if !life.replacement.is_empty() {
        let names: Vec<String> = life
            .replacement
            .iter()
            .take(3)
            .map(|m| id_code(m, fit))
            .collect();
        let _ = write!(out, " → {}", names.join(", "));
    }
    out
}

/// Findings, errors first, each with what to do; at most `limit`, texts cut to `max` characters.
#[must_use]
pub fn findings_list(findings: &[Finding], limit: usize, max: usize, more_href: &str) -> String {
    if findings.is_empty() {
        return "<span class=\"n\">none</span>".to_owned();
    }
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    sorted.sort_by_key(|f| severity_rank(f.severity));
    let mut out = "<ul>".to_owned();
    for f in sorted.iter().take(limit) {
        let severity = f.severity.map_or("unmeasured", Severity::as_str);
        let _ = write!(
            out,
            "<li><strong>{severity}:</strong> {}",
            prose(&f.message, max)
        );
        if let Some(action) = &f.action {
            let _ = write!(
                out,
                "<div class=\"todo\">What to do: {}</div>",
                prose(action, max)
            );
        }
        out.push_str("</li>");
    }
    if sorted.len() > limit {
        let _ = write!(
            out,
            "<li><a href=\"{more_href}\">{} more on the pin's page</a></li>",
            count_of(sorted.len() - limit, "finding")
        );
    }
    out.push_str("</ul>");
    out
}

fn severity_rank(severity: Option<Severity>) -> u8 {
    match severity {
        Some(Severity::Error) => 0,
        None => 1,
        Some(Severity::Warning) => 2,
        Some(Severity::Info) => 3,
    }
}

/// Since when the latest status holds, as far back as the strip goes.
#[must_use]
pub fn since_text(view: &PinView) -> String {
    let Some(last) = view.marks.last() else {
        return String::new();
    };
    let run = view
        .marks
        .iter()
        .rev()
        .take_while(|m| m.status == last.status)
        .count();
    let first = &view.marks[view.marks.len() - run];
    let qualifier = if run == view.marks.len() && run > 1 {
        "at least "
    } else {
        ""
    };
    format!(
        " <span class=\"m\">since {qualifier}{}</span>",
        time_tag(first.started_at)
    )
}

#[cfg(test)]
mod tests {
    use super::{esc, outside, prose, segment};

    #[test]
    fn outside_text_is_escaped_inert_and_bounded() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        let shown = outside("<script>\u{202e}x", 100);
        assert_eq!(shown, "&lt;script&gt;\\u{202e}x");
        assert!(outside(&"<".repeat(10_000), 50).chars().count() < 300);
    }

    #[test]
    fn prose_sets_quoted_spans_as_code_after_escaping() {
        assert_eq!(
            prose("served `<b>` not `a`; `open", 100),
            "served <code>&lt;b&gt;</code> not <code>a</code>; `open"
        );
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(segment("a b/<c>"), "a%20b%2F%3Cc%3E");
        assert_eq!(segment("pin-1.x_y~"), "pin-1.x_y~");
    }
}
