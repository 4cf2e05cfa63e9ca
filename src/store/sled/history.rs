//! History on sled: records by pin and time, read a page or a pin's newest at a time.

use std::ops::Bound;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::store::sled::{Refused, SledStore, Trees, keys};
use crate::store::{
    AuditRecord, Cursor, LatestKey, Order, Page, RawRecord, RecordSource, StoreError,
};

/// Only a record's `source`, read on the way past traffic verdicts: a pin with much traffic has
/// many.
#[derive(Deserialize)]
struct Source {
    #[serde(default)]
    source: Option<RecordSource>,
}

impl SledStore {
    /// Audits since `since` (all when `None`), for one pin or all, oldest first.
    pub async fn history(
        &self,
        pin: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let pin = pin.map(keys::pin_prefix);
        let (records, undecodable) = self
            .read(move |t| {
                let from = since.map_or(0, keys::millis).to_be_bytes();
                let mut records = Vec::new();
                let mut undecodable = 0;
                for entry in t.by_time.range(from.as_slice()..) {
                    let (_, key) = entry?;
                    match record_at(t, pin.as_deref(), &key)? {
                        At::Record(record) => records.push(*record),
                        At::Undecodable => undecodable += 1,
                        At::None => {}
                    }
                }
                Ok((records, undecodable))
            })
            .await?;
        self.left_out(undecodable);
        Ok(records)
    }

    /// At most `limit` audits from `since` on, in `order`, with the cursor of the next page
    /// when there is one: oldest first after `cursor`, newest first before it. Reads one page
    /// of records, never the whole history.
    pub async fn history_page(
        &self,
        pin: Option<&str>,
        since: Option<DateTime<Utc>>,
        cursor: Option<&Cursor>,
        order: Order,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let from = since.map_or(0, keys::millis).to_be_bytes().to_vec();
        let Some(range) = page_range(from, cursor, order) else {
            return Ok(Page::default());
        };
        let pin = pin.map(keys::pin_prefix);
        let (page, undecodable) = self
            .read(move |t| {
                let entries = t.by_time.range::<Vec<u8>, _>(range);
                match order {
                    Order::Asc => fill_page(t, entries, pin.as_deref(), limit),
                    Order::Desc => fill_page(t, entries.rev(), pin.as_deref(), limit),
                }
            })
            .await?;
        self.left_out(undecodable);
        Ok(page)
    }

    /// The latest probe audit of a pin: traffic verdicts are history too, but not audits, and
    /// the schedule looks past them.
    pub async fn last_audit(&self, pin: &str) -> Result<Option<AuditRecord>, StoreError> {
        let prefix = keys::pin_prefix(pin);
        let (last, undecodable) = self
            .read(move |t| {
                let mut undecodable = 0;
                for entry in t.audits.scan_prefix(prefix).rev() {
                    let (_, bytes) = entry?;
                    let Ok(source) = serde_json::from_slice::<Source>(&bytes) else {
                        undecodable += 1;
                        continue;
                    };
                    if source.source.is_some() {
                        continue;
                    }
                    match serde_json::from_slice::<AuditRecord>(&bytes) {
                        Ok(record) => return Ok((Some(record), undecodable)),
                        Err(_) => undecodable += 1,
                    }
                }
                Ok((None, undecodable))
            })
            .await?;
        self.left_out(undecodable);
        Ok(last)
    }

    /// The key of each pin's latest record, read without decoding it.
    pub async fn latest_keys(&self, pins: &[String]) -> Result<Vec<Option<LatestKey>>, StoreError> {
        let pins = pins.to_vec();
        self.read(move |t| {
            pins.iter()
                .map(|pin| {
                    let key = t
                        .audits
                        .scan_prefix(keys::pin_prefix(pin))
                        .keys()
                        .next_back();
                    Ok(key.transpose()?.map(|key| LatestKey {
                        started_millis: keys::key_millis(pin, &key).unwrap_or(0),
                        audit_id: keys::key_audit_id(pin, &key),
                    }))
                })
                .collect()
        })
        .await
    }

    /// Each pin's latest `limit` records as stored, newest first.
    pub async fn recent(
        &self,
        pins: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<RawRecord>>, StoreError> {
        let pins = pins.to_vec();
        self.read(move |t| {
            pins.iter()
                .map(|pin| {
                    t.audits
                        .scan_prefix(keys::pin_prefix(pin))
                        .values()
                        .rev()
                        .take(limit)
                        .map(|v| v.map(|bytes| RawRecord(bytes.to_vec())))
                        .collect()
                })
                .collect()
        })
        .await
    }

    /// Removes audits that started before `cutoff`; returns how many.
    pub async fn prune(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        let end = keys::millis(cutoff).to_be_bytes();
        let removed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = removed.clone();
        self.write(move |t| {
            for entry in t.by_time.range(..end.as_slice()) {
                let (index, key) = entry.map_err(|e| Refused::Failed(e.to_string()))?;
                t.audits
                    .remove(&key)
                    .map_err(|e| Refused::Failed(e.to_string()))?;
                t.by_time
                    .remove(&index)
                    .map_err(|e| Refused::Failed(e.to_string()))?;
                count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(())
        })
        .await?;
        Ok(removed.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// A range of time index keys, as sled takes it.
type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The part of the time index a page reads, `from` (`since`'s key) on: after `cursor` oldest
/// first (a cursor before `from` starts at `from`), before it newest first. `None` when nothing
/// is left: newest first, a cursor at or before `from` has passed every record.
fn page_range(from: Vec<u8>, cursor: Option<&Cursor>, order: Order) -> Option<KeyRange> {
    Some(match (order, cursor) {
        (Order::Asc, Some(after)) if after.0 >= from => {
            (Bound::Excluded(after.0.clone()), Bound::Unbounded)
        }
        (Order::Asc, _) | (Order::Desc, None) => (Bound::Included(from), Bound::Unbounded),
        (Order::Desc, Some(before)) if before.0 > from => {
            (Bound::Included(from), Bound::Excluded(before.0.clone()))
        }
        (Order::Desc, Some(_)) => return None,
    })
}

/// At most `limit` of `pin`'s records (any pin's when `None`) from the time index `entries`,
/// in the order they come, with the index key of the last one read as the next page's cursor
/// when another of that pin's follows; and how many did not decode.
fn fill_page(
    t: &Trees,
    entries: impl Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>,
    pin: Option<&[u8]>,
    limit: usize,
) -> Result<(Page, usize), sled::Error> {
    let mut page = Page::default();
    let mut undecodable = 0;
    let mut last = None;
    for entry in entries {
        let (index, key) = entry?;
        if pin.is_some_and(|p| !key.starts_with(p)) {
            continue;
        }
        if page.records.len() == limit {
            page.next = last.take();
            break;
        }
        match record_at(t, None, &key)? {
            At::Record(record) => page.records.push(*record),
            At::Undecodable => undecodable += 1,
            At::None => {}
        }
        last = Some(Cursor(index.to_vec()));
    }
    Ok((page, undecodable))
}

/// What the time index leads to.
enum At {
    Record(Box<AuditRecord>),
    /// Bytes that are not a record: damage, counted and said, never skipped silently.
    Undecodable,
    /// Another pin's record, or one pruned after the index was read.
    None,
}

/// The record at `key`, when it is `pin`'s (any pin's when `None`).
fn record_at(t: &Trees, pin: Option<&[u8]>, key: &[u8]) -> Result<At, sled::Error> {
    if pin.is_some_and(|p| !key.starts_with(p)) {
        return Ok(At::None);
    }
    Ok(match t.audits.get(key)? {
        None => At::None,
        Some(bytes) => {
            serde_json::from_slice(&bytes).map_or(At::Undecodable, |r| At::Record(Box::new(r)))
        }
    })
}
