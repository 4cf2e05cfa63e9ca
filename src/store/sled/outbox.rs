//! Alert state and the outbox on sled: each channel's queue read through its pending index, an
//! attempt's outcome written only over the bytes it was read as.

use std::collections::BTreeSet;

use sled::Transactional as _;
use sled::transaction::TransactionError;

use crate::store::alerts::PinAlerts;
use crate::store::sled::{Refused, SledStore, Trees, keys, transaction_refused};
use crate::store::{DeliveryState, Entry, Queued, StoreError, Token};

impl SledStore {
    /// The alert state of `subject` (empty when it never alerted).
    pub async fn alert_state(&self, subject: &str) -> Result<PinAlerts, StoreError> {
        let key = keys::state_key(subject);
        self.read(move |t| {
            let bytes = t.alerts.get(key)?;
            Ok(bytes
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default())
        })
        .await
    }

    /// The entries waiting in one channel's queue for one pin, oldest first.
    pub async fn waiting(&self, channel: &str, pin: &str) -> Result<Vec<Queued>, StoreError> {
        let prefix = keys::queue_prefix(channel, Some(pin));
        self.read(move |t| queue(t, prefix)).await
    }

    /// A channel's queue: pending entries grouped by pin, each pin's in creation order.
    pub async fn queued(&self, channel: &str) -> Result<Vec<Vec<Queued>>, StoreError> {
        let prefix = keys::queue_prefix(channel, None);
        let all = self.read(move |t| queue(t, prefix)).await?;
        Ok(crate::store::outbox::by_pin(all))
    }

    /// Channels with notifications waiting.
    pub async fn channels_waiting(&self) -> Result<BTreeSet<String>, StoreError> {
        self.read(|t| {
            let mut out = BTreeSet::new();
            for item in t.pending.iter().keys() {
                let key = item?;
                if let Some(channel) = key.split(|b| *b == 0).next() {
                    out.insert(String::from_utf8_lossy(channel).into_owned());
                }
            }
            Ok(out)
        })
        .await
    }

    /// Every entry, oldest first.
    pub async fn outbox_all(&self) -> Result<Vec<Entry>, StoreError> {
        Ok(self.outbox_counted().await?.0)
    }

    /// Every entry that decodes, oldest first, and how many did not.
    pub(super) async fn outbox_counted(&self) -> Result<(Vec<Entry>, u64), StoreError> {
        self.read(|t| {
            let (mut out, mut unreadable) = (Vec::new(), 0);
            for item in &t.outbox {
                let (_, bytes) = item?;
                match serde_json::from_slice::<Entry>(&bytes) {
                    Ok(entry) => out.push(entry),
                    Err(_) => unreadable += 1,
                }
            }
            Ok((out, unreadable))
        })
        .await
    }

    /// Records an attempt's outcome and flushes, unless the entry changed while it was being
    /// sent (a newer notification superseded it): then the newer state stands.
    pub async fn update_delivery(&self, queued: &Queued, entry: &Entry) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(entry).map_err(|e| self.write_error(e))?;
        let done = entry.delivery.state != DeliveryState::Pending;
        let index = keys::queue_key(&entry.notification);
        let Token {
            key,
            bytes: expected,
        } = queued.token.clone();
        self.write(move |t| {
            (&t.outbox, &t.pending)
                .transaction(|(outbox, pending)| {
                    if outbox.get(&key)?.as_deref() != Some(expected.as_slice()) {
                        return Ok(());
                    }
                    outbox.insert(key.as_slice(), bytes.as_slice())?;
                    if done {
                        pending.remove(index.as_slice())?;
                    }
                    Ok(())
                })
                .map_err(|e: TransactionError<()>| transaction_refused(e))
        })
        .await
    }

    /// Removes finished entries created before `cutoff` (see `Store::prune_outbox`).
    pub async fn prune_outbox(
        &self,
        cutoff: chrono::DateTime<chrono::Utc>,
    ) -> Result<usize, StoreError> {
        let end = keys::millis(cutoff).to_be_bytes();
        let finished = self
            .read(move |t| {
                let mut keys = Vec::new();
                for item in t.outbox.range(..end.as_slice()) {
                    let (key, bytes) = item?;
                    if serde_json::from_slice::<Entry>(&bytes)
                        .is_ok_and(|e| e.delivery.state != DeliveryState::Pending)
                    {
                        keys.push((key.to_vec(), bytes.to_vec()));
                    }
                }
                Ok(keys)
            })
            .await?;
        let count = finished.len();
        // Each removed only if it still holds what was read: an entry rewritten meanwhile stays.
        self.write(move |t| {
            for (key, bytes) in &finished {
                t.outbox
                    .compare_and_swap(key, Some(bytes.as_slice()), None as Option<&[u8]>)
                    .map_err(|e| Refused::Failed(e.to_string()))?
                    .ok();
            }
            Ok(())
        })
        .await?;
        Ok(count)
    }

    /// Indexes pending entries written before channel queues existed (a store from an older
    /// modelpin), so they are still sent.
    pub async fn index_older_entries(&self) -> Result<(), StoreError> {
        const DONE: &[u8] = b"outbox_indexed";
        let indexed = self.read(|t| t.alerts.contains_key(DONE)).await?;
        if indexed {
            return Ok(());
        }
        let missing = self
            .read(|t| {
                let mut missing = Vec::new();
                for item in &t.outbox {
                    let (key, bytes) = item?;
                    if let Ok(entry) = serde_json::from_slice::<Entry>(&bytes)
                        && entry.delivery.state == DeliveryState::Pending
                    {
                        missing.push((keys::queue_key(&entry.notification), key.to_vec()));
                    }
                }
                Ok(missing)
            })
            .await?;
        self.write(move |t| {
            let failed = |e: sled::Error| Refused::Failed(e.to_string());
            for (index, key) in missing {
                t.pending.insert(index, key).map_err(failed)?;
            }
            t.alerts.insert(DONE, &[]).map_err(failed)?;
            Ok(())
        })
        .await
    }
}

/// The pending entries under `prefix` of the queue index, in key order.
fn queue(t: &Trees, prefix: Vec<u8>) -> Result<Vec<Queued>, sled::Error> {
    let mut out = Vec::new();
    for item in t.pending.scan_prefix(prefix) {
        let (_, key) = item?;
        let Some(bytes) = t.outbox.get(&key)? else {
            continue;
        };
        let Ok(entry) = serde_json::from_slice::<Entry>(&bytes) else {
            continue;
        };
        out.push(Queued {
            entry,
            token: Token {
                key: key.to_vec(),
                bytes: bytes.to_vec(),
            },
        });
    }
    Ok(out)
}
