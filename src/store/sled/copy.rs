//! A sled store's contents read out whole and written in whole (`modelpin store copy`).

use crate::store::copy::Contents;
use crate::store::sled::{Refused, SledStore, keys};
use crate::store::{DeliveryState, StoreError};

impl SledStore {
    pub async fn export(&self) -> Result<Contents, StoreError> {
        let left_out = self.undecodable();
        let audits = self.history(None, None).await?;
        let mut contents = self
            .read(|t| {
                let mut contents = Contents::default();
                for item in &t.alerts {
                    let (key, bytes) = item?;
                    let Some(subject) = key.strip_prefix(b"pin\0") else {
                        continue;
                    };
                    if let Some(state) = contents.decoded(serde_json::from_slice(&bytes)) {
                        let subject = String::from_utf8_lossy(subject).into_owned();
                        contents.states.push((subject, state));
                    }
                }
                Ok(contents)
            })
            .await?;
        let (outbox, unreadable) = self.outbox_counted().await?;
        contents.audits = audits;
        contents.outbox = outbox;
        contents.unreadable += unreadable + self.undecodable().saturating_sub(left_out);
        Ok(contents)
    }

    pub async fn import(&self, contents: &Contents) -> Result<(), StoreError> {
        let mut rows = Vec::new();
        for a in &contents.audits {
            let millis = keys::millis(a.started_at);
            let key = keys::audit_key(&a.pin.id, millis, &a.audit_id);
            let index = keys::time_key(millis, &a.pin.id, &a.audit_id);
            let bytes = serde_json::to_vec(a).map_err(|e| self.write_error(e))?;
            rows.push((key, index, bytes));
        }
        let mut states = Vec::new();
        for (subject, state) in &contents.states {
            let bytes = serde_json::to_vec(state).map_err(|e| self.write_error(e))?;
            states.push((keys::state_key(subject), bytes));
        }
        let mut entries = Vec::new();
        for e in &contents.outbox {
            let bytes = serde_json::to_vec(e).map_err(|e| self.write_error(e))?;
            let pending = (e.delivery.state == DeliveryState::Pending)
                .then(|| keys::queue_key(&e.notification));
            entries.push((keys::outbox_key(&e.notification), pending, bytes));
        }
        self.write(move |t| {
            let failed = |e: sled::Error| Refused::Failed(e.to_string());
            for (key, index, bytes) in rows {
                t.audits.insert(&key, bytes).map_err(failed)?;
                t.by_time.insert(index, key).map_err(failed)?;
            }
            for (key, bytes) in states {
                t.alerts.insert(key, bytes).map_err(failed)?;
            }
            for (key, pending, bytes) in entries {
                t.outbox.insert(&key, bytes).map_err(failed)?;
                if let Some(index) = pending {
                    t.pending.insert(index, key).map_err(failed)?;
                }
            }
            Ok(())
        })
        .await
    }
}
