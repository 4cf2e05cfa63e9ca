//! A PostgreSQL store's contents read out whole and written in one transaction (`modelpin store
//! copy`).

use crate::store::copy::Contents;
use crate::store::postgres::{PgStore, history, outbox};
use crate::store::{DeliveryState, StoreError};

impl PgStore {
    pub async fn export(&self) -> Result<Contents, StoreError> {
        let left_out = self.undecodable();
        let mut contents = Contents {
            audits: self.history(None, None).await?,
            ..Contents::default()
        };
        let states = self
            .rows(
                "SELECT subject, state FROM modelpin_alert_state ORDER BY subject",
                &[],
            )
            .await?;
        for row in &states {
            if let Some(state) = contents.decoded(serde_json::from_slice(row.get::<_, &[u8]>(1))) {
                let subject: Vec<u8> = row.get(0);
                contents
                    .states
                    .push((String::from_utf8_lossy(&subject).into_owned(), state));
            }
        }
        let (outbox, unreadable) = self.outbox_counted().await?;
        contents.outbox = outbox;
        contents.unreadable += unreadable + self.undecodable().saturating_sub(left_out);
        Ok(contents)
    }

    pub async fn import(&self, contents: &Contents) -> Result<(), StoreError> {
        let encode = |r: serde_json::Result<Vec<u8>>| r.map_err(|e| self.error(e));
        let audits = contents
            .audits
            .iter()
            .map(|a| Ok((a, encode(serde_json::to_vec(a))?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let states = contents
            .states
            .iter()
            .map(|(s, state)| Ok((s.as_bytes(), encode(serde_json::to_vec(state))?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let entries = contents
            .outbox
            .iter()
            .map(|e| Ok((e, encode(serde_json::to_vec(e))?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        // A large history takes longer than one statement's deadline: the whole copy gets one
        // per thousand rows.
        let rows = audits.len() + states.len() + entries.len();
        let deadline = super::DEADLINE * u32::try_from(1 + rows / 1000).unwrap_or(u32::MAX);
        let work = async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            self.fenced(&tx).await?;
            for (record, bytes) in &audits {
                history::insert_audit(&tx, record, bytes).await?;
            }
            for (subject, bytes) in &states {
                tx.execute(
                    "INSERT INTO modelpin_alert_state (subject, state) VALUES ($1, $2)
                     ON CONFLICT (subject) DO UPDATE SET state = EXCLUDED.state",
                    &[subject, bytes],
                )
                .await?;
            }
            for (entry, bytes) in &entries {
                outbox::insert(&tx, &entry.notification, bytes).await?;
                if entry.delivery.state != DeliveryState::Pending {
                    let n = &entry.notification;
                    tx.execute(
                        "UPDATE modelpin_outbox SET pending = false WHERE created_millis = $1 AND id = $2",
                        &[&n.created_at.timestamp_millis().max(0), &n.id],
                    )
                    .await?;
                }
            }
            tx.commit().await?;
            Ok(())
        };
        match tokio::time::timeout(deadline, work).await {
            Ok(done) => done.map_err(|e| self.refusal(e)),
            Err(_) => Err(self.error(format!(
                "the copy was not committed within {}s",
                deadline.as_secs()
            ))),
        }
    }
}
