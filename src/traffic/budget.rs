//! The byte budget of what traffic writes: a hostile or broken exporter whose every span names a
//! new served model must not grow the store, the history answers or the pages with it.
//!
//! A traffic verdict's maps of IDs (served models, upstreams, the same in each finding's
//! evidence) keep the `MAX_IDS` most frequent IDs with their counts; the rest are summed into one
//! `(others)` entry, and what was summed (how many distinct IDs, how many spans) is written
//! beside the map under `capped`, so the drift signal and its size stay visible. Lists in the
//! evidence keep `MAX_ITEMS` entries and texts `MAX_TEXT` characters, and a record is at most
//! `MAX_RECORD` bytes as stored: past that the evidence gives way to a note saying so. Applied
//! where traffic records are written, and to records read back for pages and `/api/history`,
//! so records written before the budget existed are bounded on the way out too.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use crate::report::Others;
use crate::report::PinReport;
use crate::store::AuditRecord;

/// IDs kept per map, most frequent first; the rest become `OTHERS`.
pub const MAX_IDS: usize = 16;
/// Entries kept per list in a finding's evidence (examples, token counts).
pub const MAX_ITEMS: usize = 16;
/// Characters kept per text in a record (messages, actions, evidence strings).
pub const MAX_TEXT: usize = 512;
/// The most bytes one traffic record takes as stored (JSON).
pub const MAX_RECORD: usize = 16 * 1024;
/// The key the IDs past `MAX_IDS` are summed under.
pub const OTHERS: &str = "(others)";

/// `counts` with at most `MAX_IDS` IDs besides `OTHERS`: the most frequent (ties by ID) stay,
/// the rest are summed into `OTHERS`. `None` when nothing had to go.
pub fn cap_counts(counts: &mut BTreeMap<String, u64>) -> Option<Others> {
    let summed = counts.remove(OTHERS);
    if counts.len() <= MAX_IDS {
        if let Some(n) = summed {
            counts.insert(OTHERS.to_owned(), n);
        }
        return None;
    }
    let mut ranked: Vec<(String, u64)> = std::mem::take(counts).into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let rest = ranked.split_off(MAX_IDS);
    let others = Others {
        ids: rest.len() as u64,
        count: rest.iter().map(|(_, n)| n).sum(),
    };
    counts.extend(ranked);
    counts.insert(OTHERS.to_owned(), others.count + summed.unwrap_or(0));
    Some(others)
}

/// The pin's report within the budget: its ID maps capped (noted in `capped`), each finding's
/// message, action and evidence bounded.
pub fn cap_report(pin: &mut PinReport) {
    for (field, map) in [
        ("served_models", &mut pin.served_models),
        ("upstreams", &mut pin.upstreams),
    ] {
        if let Some(others) = cap_counts(map) {
            add(pin.capped.entry(field.to_owned()).or_default(), others);
        }
    }
    for finding in &mut pin.findings {
        finding.message = cut(&finding.message, MAX_TEXT);
        finding.action = finding.action.as_deref().map(|a| cut(a, MAX_TEXT));
        cap_value(&mut finding.evidence);
    }
}

/// The record within the budget: `cap_report`, then, while it is over `MAX_RECORD` bytes, the
/// evidence replaced by a note, then the maps cut to a few IDs. Records are never dropped.
pub fn cap_record(record: &mut AuditRecord) {
    cap_report(&mut record.pin);
    if stored_len(record) <= MAX_RECORD {
        return;
    }
    for finding in &mut record.pin.findings {
        let bytes = finding.evidence.to_string().len();
        finding.evidence = serde_json::json!({
            "capped": format!("evidence of {bytes} bytes left out: the record is over its budget of {MAX_RECORD} bytes")
        });
    }
    if stored_len(record) <= MAX_RECORD {
        return;
    }
    for finding in &mut record.pin.findings {
        finding.message = cut(&finding.message, MAX_TEXT / 4);
        finding.action = None;
    }
    for (field, map) in [
        ("served_models", &mut record.pin.served_models),
        ("upstreams", &mut record.pin.upstreams),
    ] {
        if let Some(others) = keep_top(map, 4) {
            add(
                record.pin.capped.entry(field.to_owned()).or_default(),
                others,
            );
        }
    }
}

/// Bytes the record takes as stored.
#[must_use]
pub fn stored_len(record: &AuditRecord) -> usize {
    serde_json::to_vec(record).map_or(usize::MAX, |b| b.len())
}

/// `cap_counts` with a smaller bound: `map` keeps its `keep` largest entries besides `OTHERS`.
fn keep_top(map: &mut BTreeMap<String, u64>, keep: usize) -> Option<Others> {
    let summed = map.remove(OTHERS).unwrap_or(0);
    let mut ranked: Vec<(String, u64)> = std::mem::take(map).into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let rest = ranked.split_off(keep.min(ranked.len()));
    map.extend(ranked);
    if rest.is_empty() && summed == 0 {
        return None;
    }
    let count: u64 = rest.iter().map(|(_, n)| n).sum();
    map.insert(OTHERS.to_owned(), count + summed);
    (!rest.is_empty()).then_some(Others {
        ids: rest.len() as u64,
        count,
    })
}

fn add(total: &mut Others, more: Others) {
    total.ids += more.ids;
    total.count += more.count;
}

/// Evidence within the budget, at any depth: maps of counts capped like `cap_counts`, lists cut
/// to `MAX_ITEMS`, texts to `MAX_TEXT`; what went is noted in the object's `capped`.
fn cap_value(value: &mut Value) {
    match value {
        Value::String(text) => *text = cut(text, MAX_TEXT),
        Value::Array(items) => {
            items.truncate(MAX_ITEMS);
            items.iter_mut().for_each(cap_value);
        }
        Value::Object(fields) => cap_object(fields),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn cap_object(fields: &mut Map<String, Value>) {
    let mut capped = match fields.remove("capped") {
        Some(Value::Object(noted)) => noted,
        _ => Map::new(),
    };
    for (name, value) in fields.iter_mut() {
        let lost = match value {
            Value::Object(map) if is_counts(map) => cap_count_map(map),
            Value::Array(items) if items.len() > MAX_ITEMS => {
                let n = (items.len() - MAX_ITEMS) as u64;
                Some(Others { ids: n, count: n })
            }
            _ => None,
        };
        cap_value(value);
        if let Some(others) = lost {
            let noted = capped
                .get(name)
                .and_then(|v| serde_json::from_value::<Others>(v.clone()).ok())
                .unwrap_or_default();
            let mut total = noted;
            add(&mut total, others);
            capped.insert(
                name.clone(),
                serde_json::to_value(total).unwrap_or(Value::Null),
            );
        }
    }
    if !capped.is_empty() {
        fields.insert("capped".to_owned(), Value::Object(capped));
    }
}

/// An object whose every value is a count: a map of IDs.
fn is_counts(map: &Map<String, Value>) -> bool {
    map.len() > MAX_IDS && map.values().all(Value::is_u64)
}

fn cap_count_map(map: &mut Map<String, Value>) -> Option<Others> {
    let mut counts: BTreeMap<String, u64> = std::mem::take(map)
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.as_u64()?)))
        .collect();
    let others = cap_counts(&mut counts);
    map.extend(counts.into_iter().map(|(k, v)| (k, Value::from(v))));
    others
}

/// `text` cut to `max` characters, marked with `…` when it was longer.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests;
