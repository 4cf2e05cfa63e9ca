//! Alert state and the outbox on PostgreSQL: each channel's queue is the pending rows (a partial
//! index), an attempt's outcome written only over the bytes it was read as.

use std::collections::BTreeSet;

use crate::store::alerts::Notification;
use crate::store::alerts::PinAlerts;
use crate::store::postgres::{PgStore, Refused};
use crate::store::{DeliveryState, Entry, Queued, StoreError, Token};

/// An entry's key as a token holds it: its creation millis (big-endian) and id, the sled
/// store's outbox key.
fn key(created_millis: i64, id: &str) -> Vec<u8> {
    let mut key = (created_millis.max(0) as u64).to_be_bytes().to_vec();
    key.extend_from_slice(id.as_bytes());
    key
}

/// The (millis, id) a token's key names.
fn unkey(key: &[u8]) -> Option<(i64, String)> {
    let at = u64::from_be_bytes(key.get(..8)?.try_into().ok()?);
    let id = String::from_utf8(key.get(8..)?.to_vec()).ok()?;
    Some((i64::try_from(at).ok()?, id))
}

fn created_millis(n: &Notification) -> i64 {
    n.created_at.timestamp_millis().max(0)
}

/// Queues a new entry (stored again as given when its key exists).
pub(super) async fn insert(
    tx: &tokio_postgres::Transaction<'_>,
    n: &Notification,
    bytes: &[u8],
) -> Result<(), Refused> {
    tx.execute(
        "INSERT INTO modelpin_outbox (created_millis, id, channel, pin, pending, entry)
         VALUES ($1, $2, $3, $4, true, $5)
         ON CONFLICT (created_millis, id) DO UPDATE
         SET channel = EXCLUDED.channel, pin = EXCLUDED.pin, pending = true, entry = EXCLUDED.entry",
        &[&created_millis(n), &n.id, &n.channel, &n.pin, &bytes],
    )
    .await?;
    Ok(())
}

/// Rewrites the entry `token` read, if it still holds the bytes read; `false` when it changed.
pub(super) async fn rewrite(
    tx: &tokio_postgres::Transaction<'_>,
    token: &Token,
    bytes: &[u8],
    pending: bool,
) -> Result<bool, Refused> {
    let Some((at, id)) = unkey(&token.key) else {
        return Ok(false);
    };
    let changed = tx
        .execute(
            "UPDATE modelpin_outbox SET entry = $3, pending = $4
             WHERE created_millis = $1 AND id = $2 AND entry = $5",
            &[&at, &id, &bytes, &pending, &token.bytes],
        )
        .await?;
    Ok(changed == 1)
}

impl PgStore {
    pub async fn alert_state(&self, subject: &str) -> Result<PinAlerts, StoreError> {
        let row = self
            .row(
                "SELECT state FROM modelpin_alert_state WHERE subject = $1",
                &[&subject.as_bytes()],
            )
            .await?;
        Ok(row
            .and_then(|r| serde_json::from_slice(r.get::<_, &[u8]>(0)).ok())
            .unwrap_or_default())
    }

    /// Removes finished entries created before `cutoff` (see `Store::prune_outbox`).
    pub async fn prune_outbox(
        &self,
        cutoff: chrono::DateTime<chrono::Utc>,
    ) -> Result<usize, StoreError> {
        self.delete_before(
            "DELETE FROM modelpin_outbox WHERE NOT pending AND created_millis < $1",
            cutoff,
        )
        .await
    }

    /// Pending entries of `channel` (one pin's, or all), by pin, then creation.
    async fn queue(&self, channel: &str, pin: Option<&str>) -> Result<Vec<Queued>, StoreError> {
        let rows = self
            .rows(
                "SELECT created_millis, id, entry FROM modelpin_outbox
                         WHERE pending AND channel = $1 AND ($2::text IS NULL OR pin = $2)
                         ORDER BY pin, created_millis, id",
                &[&channel, &pin],
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let bytes: Vec<u8> = row.get(2);
                let entry = serde_json::from_slice::<Entry>(&bytes).ok()?;
                Some(Queued {
                    entry,
                    token: Token {
                        key: key(row.get(0), row.get(1)),
                        bytes,
                    },
                })
            })
            .collect())
    }

    pub async fn waiting(&self, channel: &str, pin: &str) -> Result<Vec<Queued>, StoreError> {
        self.queue(channel, Some(pin)).await
    }

    pub async fn queued(&self, channel: &str) -> Result<Vec<Vec<Queued>>, StoreError> {
        Ok(crate::store::outbox::by_pin(
            self.queue(channel, None).await?,
        ))
    }

    pub async fn channels_waiting(&self) -> Result<BTreeSet<String>, StoreError> {
        let rows = self
            .rows(
                "SELECT DISTINCT channel FROM modelpin_outbox WHERE pending",
                &[],
            )
            .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub async fn outbox_all(&self) -> Result<Vec<Entry>, StoreError> {
        Ok(self.outbox_counted().await?.0)
    }

    /// Every entry that decodes, oldest first, and how many did not.
    pub(super) async fn outbox_counted(&self) -> Result<(Vec<Entry>, u64), StoreError> {
        let rows = self
            .rows(
                "SELECT entry FROM modelpin_outbox ORDER BY created_millis, id",
                &[],
            )
            .await?;
        let mut unreadable = 0;
        let entries = rows
            .iter()
            .filter_map(|r| {
                let entry = serde_json::from_slice(r.get::<_, &[u8]>(0)).ok();
                unreadable += u64::from(entry.is_none());
                entry
            })
            .collect();
        Ok((entries, unreadable))
    }

    /// Records an attempt's outcome, unless the entry changed while it was being sent.
    pub async fn update_delivery(&self, queued: &Queued, entry: &Entry) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(entry).map_err(|e| self.error(e))?;
        let pending = entry.delivery.state == DeliveryState::Pending;
        self.write(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            self.fenced(&tx).await?;
            rewrite(&tx, &queued.token, &bytes, pending).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// A PostgreSQL store never held entries without a queue.
    #[allow(clippy::unused_async)] // the interface's, async for sled
    pub async fn index_older_entries(&self) -> Result<(), StoreError> {
        Ok(())
    }
}
