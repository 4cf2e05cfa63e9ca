//! History on PostgreSQL: records by pin and start time, a page or each pin's newest at a time,
//! and the commit that stores a record with its alert state and notifications.

use chrono::{DateTime, Utc};

use crate::store::postgres::{PgStore, Refused, millis, outbox};
use crate::store::{
    AuditRecord, Commit, Cursor, DeliveryState, Entry, LatestKey, Order, Page, RawRecord, Replace,
    StoreError,
};

/// A page cursor: the time index's key, as the sled store has it (millis big-endian, pin, NUL,
/// audit id), so a cursor means the same place in either backend.
fn cursor_at(millis: i64, pin: &str, audit_id: &str) -> Cursor {
    Cursor::index_key(millis.max(0) as u64, pin, audit_id)
}

/// A cursor's place: (millis, pin, audit id); `None` for bytes that are not one.
fn place(cursor: &Cursor) -> Option<(i64, String, String)> {
    let at = u64::from_be_bytes(cursor.0.get(..8)?.try_into().ok()?);
    let rest = cursor.0.get(8..)?;
    let nul = rest.iter().position(|b| *b == 0)?;
    Some((
        i64::try_from(at).ok()?,
        String::from_utf8(rest[..nul].to_vec()).ok()?,
        String::from_utf8(rest[nul + 1..].to_vec()).ok()?,
    ))
}

impl PgStore {
    pub async fn commit(&self, c: &Commit<'_>, superseded: &[Replace]) -> Result<(), StoreError> {
        let audit = c
            .audit
            .map(|r| serde_json::to_vec(r).map(|bytes| (r, bytes)))
            .transpose()
            .map_err(|e| self.error(e))?;
        let state = c
            .state
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| self.error(e))?;
        let rewrites = superseded
            .iter()
            .map(|r| serde_json::to_vec(&r.entry).map(|bytes| (r, bytes)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))?;
        let queue = c
            .notifications
            .iter()
            .map(|n| serde_json::to_vec(&Entry::pending(n)).map(|bytes| (n, bytes)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))?;
        self.write(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            self.fenced(&tx).await?;
            crate::fault::stop_inside_commit();
            if let Some((record, bytes)) = &audit {
                insert_audit(&tx, record, bytes).await?;
            }
            if let Some(bytes) = &state {
                tx.execute(
                    "INSERT INTO modelpin_alert_state (subject, state) VALUES ($1, $2)
                     ON CONFLICT (subject) DO UPDATE SET state = EXCLUDED.state",
                    &[&c.subject.as_bytes(), bytes],
                )
                .await?;
            }
            for (replace, bytes) in &rewrites {
                let pending = replace.entry.delivery.state == DeliveryState::Pending;
                if !outbox::rewrite(&tx, &replace.queued.token, bytes, pending).await? {
                    return Err(Refused::Conflict);
                }
            }
            for (n, bytes) in &queue {
                outbox::insert(&tx, n, bytes).await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    pub async fn history(
        &self,
        pin: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let from = since.map_or(0, millis);
        let rows = self
            .rows(
                "SELECT record FROM modelpin_audits
                         WHERE started_millis >= $1 AND ($2::text IS NULL OR pin = $2)
                         ORDER BY started_millis, pin, audit_id",
                &[&from, &pin],
            )
            .await?;
        Ok(self.decoded(rows.iter().map(|r| r.get::<_, &[u8]>(0))))
    }

    /// Decodes records, counting (and logging) those that do not decode.
    fn decoded<'a>(&self, bytes: impl Iterator<Item = &'a [u8]>) -> Vec<AuditRecord> {
        let mut undecodable = 0;
        let records = bytes
            .filter_map(|b| {
                let record = serde_json::from_slice(b).ok();
                undecodable += usize::from(record.is_none());
                record
            })
            .collect();
        self.left_out(undecodable);
        records
    }

    pub async fn history_page(
        &self,
        pin: Option<&str>,
        since: Option<DateTime<Utc>>,
        cursor: Option<&Cursor>,
        order: Order,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let from = since.map_or(0, millis);
        // As on sled: oldest first, a cursor before `since` starts the page at `since`; newest
        // first, a cursor at or before `since` has passed every record.
        let from_key = (from as u64).to_be_bytes();
        let at = match (order, cursor) {
            (Order::Desc, Some(c)) if c.0.as_slice() <= from_key.as_slice() => {
                return Ok(Page::default());
            }
            (_, cursor) => cursor
                .filter(|c| c.0.as_slice() >= from_key.as_slice())
                .and_then(place),
        };
        let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let rows = match (order, &at) {
            (Order::Asc, Some((m, p, id))) => {
                self.rows(
                    "SELECT started_millis, pin, audit_id, record FROM modelpin_audits
                     WHERE (started_millis, pin, audit_id) > ($1, $2, $3)
                       AND ($4::text IS NULL OR pin = $4)
                     ORDER BY started_millis, pin, audit_id LIMIT $5",
                    &[m, p, id, &pin, &fetch],
                )
                .await?
            }
            (Order::Asc, None) => {
                self.rows(
                    "SELECT started_millis, pin, audit_id, record FROM modelpin_audits
                     WHERE started_millis >= $1 AND ($2::text IS NULL OR pin = $2)
                     ORDER BY started_millis, pin, audit_id LIMIT $3",
                    &[&from, &pin, &fetch],
                )
                .await?
            }
            (Order::Desc, Some((m, p, id))) => {
                self.rows(
                    "SELECT started_millis, pin, audit_id, record FROM modelpin_audits
                     WHERE (started_millis, pin, audit_id) < ($1, $2, $3)
                       AND started_millis >= $4 AND ($5::text IS NULL OR pin = $5)
                     ORDER BY started_millis DESC, pin DESC, audit_id DESC LIMIT $6",
                    &[m, p, id, &from, &pin, &fetch],
                )
                .await?
            }
            (Order::Desc, None) => {
                self.rows(
                    "SELECT started_millis, pin, audit_id, record FROM modelpin_audits
                     WHERE started_millis >= $1 AND ($2::text IS NULL OR pin = $2)
                     ORDER BY started_millis DESC, pin DESC, audit_id DESC LIMIT $3",
                    &[&from, &pin, &fetch],
                )
                .await?
            }
        };
        let shown = rows.len().min(limit);
        let next = (rows.len() > limit && limit > 0).then(|| {
            let last = &rows[limit - 1];
            cursor_at(last.get(0), last.get(1), last.get(2))
        });
        let records = self.decoded(rows[..shown].iter().map(|r| r.get::<_, &[u8]>(3)));
        Ok(Page { records, next })
    }

    pub async fn last_audit(&self, pin: &str) -> Result<Option<AuditRecord>, StoreError> {
        let rows = self
            .rows(
                "SELECT record FROM modelpin_audits WHERE pin = $1 AND probe
                         ORDER BY started_millis DESC, audit_id DESC LIMIT 10",
                &[&pin],
            )
            .await?;
        let mut undecodable = 0;
        let mut last = None;
        for row in &rows {
            match serde_json::from_slice::<AuditRecord>(row.get(0)) {
                Ok(record) => {
                    last = Some(record);
                    break;
                }
                Err(_) => undecodable += 1,
            }
        }
        self.left_out(undecodable);
        Ok(last)
    }

    pub async fn latest_keys(&self, pins: &[String]) -> Result<Vec<Option<LatestKey>>, StoreError> {
        let rows = self
            .rows(
                "SELECT a.started_millis, a.audit_id
                         FROM unnest($1::text[]) WITH ORDINALITY AS p(pin, n)
                         LEFT JOIN LATERAL (
                             SELECT started_millis, audit_id FROM modelpin_audits
                             WHERE modelpin_audits.pin = p.pin
                             ORDER BY started_millis DESC, audit_id DESC LIMIT 1
                         ) a ON true
                         ORDER BY p.n",
                &[&pins],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|row| {
                let at: Option<i64> = row.get(0);
                at.map(|at| LatestKey {
                    started_millis: at.max(0) as u64,
                    audit_id: row.get(1),
                })
            })
            .collect())
    }

    pub async fn recent(
        &self,
        pins: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<RawRecord>>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .rows(
                "SELECT p.n, a.record
                         FROM unnest($1::text[]) WITH ORDINALITY AS p(pin, n)
                         JOIN LATERAL (
                             SELECT record, started_millis, audit_id FROM modelpin_audits
                             WHERE modelpin_audits.pin = p.pin
                             ORDER BY started_millis DESC, audit_id DESC LIMIT $2
                         ) a ON true
                         ORDER BY p.n, a.started_millis DESC, a.audit_id DESC",
                &[&pins, &limit],
            )
            .await?;
        let mut out = vec![Vec::new(); pins.len()];
        for row in &rows {
            let n: i64 = row.get(0);
            if let Some(slot) = usize::try_from(n - 1).ok().and_then(|i| out.get_mut(i)) {
                slot.push(RawRecord(row.get::<_, Vec<u8>>(1)));
            }
        }
        Ok(out)
    }

    pub async fn prune(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        self.delete_before(
            "DELETE FROM modelpin_audits WHERE started_millis < $1",
            cutoff,
        )
        .await
    }

    /// Runs `delete` (whose `$1` is a time in milliseconds) with `cutoff`, fenced, in a
    /// transaction of its own; returns the rows removed.
    pub(super) async fn delete_before(
        &self,
        delete: &str,
        cutoff: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        let end = millis(cutoff);
        self.write(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            self.fenced(&tx).await?;
            let removed = tx.execute(delete, &[&end]).await?;
            tx.commit().await?;
            Ok(removed as usize)
        })
        .await
    }
}

/// Stores one record (again, the same bytes, when it was stored before).
pub(super) async fn insert_audit(
    tx: &tokio_postgres::Transaction<'_>,
    record: &AuditRecord,
    bytes: &[u8],
) -> Result<(), Refused> {
    tx.execute(
        "INSERT INTO modelpin_audits (pin, started_millis, audit_id, probe, record)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (pin, started_millis, audit_id)
         DO UPDATE SET probe = EXCLUDED.probe, record = EXCLUDED.record",
        &[
            &record.pin.id,
            &millis(record.started_at),
            &record.audit_id,
            &record.source.is_none(),
            &bytes,
        ],
    )
    .await?;
    Ok(())
}
