//! One commit on sled: the record, the alert state, the rewritten older entries and the new
//! ones, serialised first and then written in one transaction over the five trees.

use sled::Transactional as _;
use sled::transaction::{ConflictableTransactionError, TransactionalTree};

use crate::store::sled::{SledStore, keys, transaction_refused};
use crate::store::{AuditRecord, Commit, DeliveryState, Entry, Replace, StoreError};

impl SledStore {
    /// Writes the commit in one transaction and flushes it. A rewrite of an older entry whose
    /// bytes changed since they were read aborts the whole transaction (`StoreError::Conflict`).
    pub async fn commit(&self, c: &Commit<'_>, superseded: &[Replace]) -> Result<(), StoreError> {
        let rows = Rows::of(c, superseded).map_err(|e| self.write_error(e))?;
        self.write(move |t| {
            let trees = (&t.audits, &t.by_time, &t.alerts, &t.outbox, &t.pending);
            trees
                .transaction(|(audits, by_time, alerts, outbox, pending)| {
                    if let Some(audit) = &rows.audit {
                        audit.insert(audits, by_time)?;
                    }
                    if let Some((key, state)) = &rows.state {
                        alerts.insert(key.as_slice(), state.as_slice())?;
                    }
                    for rewrite in &rows.rewrites {
                        rewrite.apply(outbox, pending)?;
                    }
                    for (key, index, bytes) in &rows.queue {
                        outbox.insert(key.as_slice(), bytes.as_slice())?;
                        pending.insert(index.as_slice(), key.as_slice())?;
                    }
                    Ok(())
                })
                .map_err(transaction_refused)?;
            crate::fault::at(crate::fault::Point::AfterCommitBeforeFlush);
            Ok(())
        })
        .await
    }
}

/// The key, time-index key and bytes of one audit, ready to be written in a transaction.
struct AuditRow {
    key: Vec<u8>,
    index: Vec<u8>,
    value: Vec<u8>,
}

impl AuditRow {
    fn of(record: &AuditRecord) -> serde_json::Result<AuditRow> {
        let millis = keys::millis(record.started_at);
        Ok(AuditRow {
            key: keys::audit_key(&record.pin.id, millis, &record.audit_id),
            index: keys::time_key(millis, &record.pin.id, &record.audit_id),
            value: serde_json::to_vec(record)?,
        })
    }

    fn insert(
        &self,
        audits: &TransactionalTree,
        by_time: &TransactionalTree,
    ) -> Result<(), ConflictableTransactionError<()>> {
        audits.insert(self.key.as_slice(), self.value.as_slice())?;
        by_time.insert(self.index.as_slice(), self.key.as_slice())?;
        Ok(())
    }
}

/// An older entry's new bytes, applied only if it still holds what was read.
struct Rewrite {
    key: Vec<u8>,
    expected: Vec<u8>,
    bytes: Vec<u8>,
    /// Its queue index, when it leaves the queue (nothing left to send).
    done: Option<Vec<u8>>,
}

impl Rewrite {
    fn apply(
        &self,
        outbox: &TransactionalTree,
        pending: &TransactionalTree,
    ) -> Result<(), ConflictableTransactionError<()>> {
        if outbox.get(&self.key)?.as_deref() != Some(self.expected.as_slice()) {
            return Err(ConflictableTransactionError::Abort(()));
        }
        outbox.insert(self.key.as_slice(), self.bytes.as_slice())?;
        if let Some(index) = &self.done {
            pending.remove(index.as_slice())?;
        }
        Ok(())
    }
}

/// A commit serialised, so the transaction on the blocking pool owns what it writes.
struct Rows {
    audit: Option<AuditRow>,
    state: Option<(Vec<u8>, Vec<u8>)>,
    rewrites: Vec<Rewrite>,
    /// (outbox key, queue index, bytes) of each new entry.
    queue: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>,
}

impl Rows {
    fn of(c: &Commit<'_>, superseded: &[Replace]) -> serde_json::Result<Rows> {
        let state = c
            .state
            .map(|s| serde_json::to_vec(s).map(|bytes| (keys::state_key(c.subject), bytes)))
            .transpose()?;
        let rewrites = superseded
            .iter()
            .map(|r| {
                Ok(Rewrite {
                    key: r.queued.token.key.clone(),
                    expected: r.queued.token.bytes.clone(),
                    bytes: serde_json::to_vec(&r.entry)?,
                    done: (r.entry.delivery.state != DeliveryState::Pending)
                        .then(|| keys::queue_key(&r.entry.notification)),
                })
            })
            .collect::<serde_json::Result<_>>()?;
        let queue = c
            .notifications
            .iter()
            .map(|n| {
                let bytes = serde_json::to_vec(&Entry::pending(n))?;
                Ok((keys::outbox_key(n), keys::queue_key(n), bytes))
            })
            .collect::<serde_json::Result<_>>()?;
        Ok(Rows {
            audit: c.audit.map(AuditRow::of).transpose()?,
            state,
            rewrites,
            queue,
        })
    }
}
