//! The fleet's inbox of traffic spans (`modelpin_spans`): whichever member an exporter reaches
//! writes the spans it accepted here before answering 200, and the leader alone takes them, in
//! the order they arrived, into the windows it judges. So spans posted to any member are judged
//! once, by one process, and alert once; a batch accepted while the leader dies waits here for
//! the next one.
//!
//! Bounded: a batch is written only while the inbox holds less than `MAX_BYTES`, so a leader
//! that cannot keep up (or none at all) fills it to that and no further; the receiver answers
//! the rest 429 with `Retry-After`, which exporters retry.

use crate::store::StoreError;
use crate::store::postgres::PgStore;

/// The most the inbox holds, in bytes of span batches: a few minutes of a busy application's
/// spans at the 4 MiB a request may carry (`traffic::otlp::MAX_BODY`), at most.
pub const MAX_BYTES: i64 = 64 << 20;

/// Batches the leader takes at once; the rest wait for its next pass.
pub const TAKE: i64 = 256;

/// Whether a batch was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    Accepted,
    /// The inbox holds `MAX_BYTES` already.
    Full,
}

impl PgStore {
    /// Writes one batch of spans (encoded by the caller) from `member`, unless the inbox is full.
    /// Any member may: the inbox holds what exporters sent, not the leader's decisions.
    pub async fn offer_spans(&self, member: &str, batch: &[u8]) -> Result<Offered, StoreError> {
        self.write(async {
            let client = self.client().await?;
            let written = client
                .execute(
                    "INSERT INTO modelpin_spans (member, spans)
                     SELECT $1, $2
                     WHERE (SELECT coalesce(sum(octet_length(spans)), 0) FROM modelpin_spans) < $3",
                    &[&member, &batch, &MAX_BYTES],
                )
                .await?;
            Ok(if written == 1 {
                Offered::Accepted
            } else {
                Offered::Full
            })
        })
        .await
    }

    /// Takes (deletes and returns) the oldest `TAKE` batches, oldest first; only the lease holder
    /// may, so a deposed leader never takes spans it cannot judge.
    pub async fn take_spans(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        self.write(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            self.fenced(&tx).await?;
            let rows = tx
                .query(
                    "DELETE FROM modelpin_spans WHERE id IN
                         (SELECT id FROM modelpin_spans ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
                     RETURNING id, spans",
                    &[&TAKE],
                )
                .await?;
            tx.commit().await?;
            let mut batches: Vec<(i64, Vec<u8>)> =
                rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            batches.sort_by_key(|(id, _)| *id);
            Ok(batches.into_iter().map(|(_, spans)| spans).collect())
        })
        .await
    }
}
