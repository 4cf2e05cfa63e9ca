//! The fleet's lease: one row (`modelpin_lease`) naming the leader, its term and when its lease
//! ends, by the server's clock.
//!
//! A lease row with a fencing term rather than a session advisory lock: an advisory lock lives
//! as long as the server-side session, which after a network cut or a kill -9 behind a NAT can
//! outlive the client by the TCP keepalive timeout (minutes, not a lease interval); it gives no
//! number to fence writes with; and it would pin one pooled connection for the process's life.
//! The row expires by the server's clock alone (no clock of a daemon is trusted), is taken with
//! the next term by a plain `UPDATE` once expired, and every write checks it in its own
//! transaction (`PgStore::fenced`).

use std::time::Duration;

use crate::store::StoreError;
use crate::store::postgres::{Fence, PgStore, Refused};

/// Where this process stands after a lease attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    /// This process holds the lease now.
    pub leader: bool,
    /// The lease's current term (this process's own when it leads).
    pub term: i64,
    /// What the leader runs (its pins.toml and lock digests, as it wrote them with its last
    /// renewal); empty when no leader has written them.
    pub digests: String,
}

impl PgStore {
    /// Renews the lease when this process holds it, takes it (with the next term) when it has
    /// expired, and otherwise says who leads. The outcome is the store's health: a server that
    /// does not answer shows on `/healthz`, and this process leads no more (its writes are
    /// refused from now on; the lease on the server runs out by itself).
    pub async fn lead(
        &self,
        holder: &str,
        lease: Duration,
        digests: &str,
    ) -> Result<Lead, StoreError> {
        let seconds = lease.as_secs_f64();
        let mine = match self.fence() {
            Fence::Leader { term, .. } => Some(term),
            _ => None,
        };
        // An answer later than a third of the lease counts as none: a leader then stands down
        // while its lease, counted from before the question, still runs on the server, so it
        // never believes itself leader past its lease.
        let patience = (lease / 3).min(super::DEADLINE);
        let ask = self.read(async {
                let client = self.client().await?;
                if let Some(term) = mine {
                    let renewed = client
                        .query_opt(
                            "UPDATE modelpin_lease SET expires_at = now() + make_interval(secs => $3), digests = $4
                             WHERE name = 'leader' AND holder = $1 AND term = $2 AND expires_at > now()
                             RETURNING term",
                            &[&holder, &term, &seconds, &digests],
                        )
                        .await?;
                    if renewed.is_some() {
                        return Ok(Lead {
                            leader: true,
                            term,
                            digests: digests.to_owned(),
                        });
                    }
                }
                let taken = client
                    .query_opt(
                        "UPDATE modelpin_lease
                         SET holder = $1, term = term + 1, expires_at = now() + make_interval(secs => $2), digests = $3
                         WHERE name = 'leader' AND expires_at <= now()
                         RETURNING term",
                        &[&holder, &seconds, &digests],
                    )
                    .await?;
                if let Some(row) = taken {
                    return Ok(Lead {
                        leader: true,
                        term: row.get(0),
                        digests: digests.to_owned(),
                    });
                }
                let row = client
                    .query_one(
                        "SELECT term, digests FROM modelpin_lease WHERE name = 'leader'",
                        &[],
                    )
                    .await?;
                Ok::<_, Refused>(Lead {
                    leader: false,
                    term: row.get(0),
                    digests: row.get(1),
                })
            });
        let outcome = match tokio::time::timeout(patience, ask).await {
            Ok(outcome) => outcome,
            Err(_) => Err(self.error(format!(
                "no answer about the lease within {}ms",
                patience.as_millis()
            ))),
        };
        match &outcome {
            Ok(lead) => {
                self.note_lease(Ok(lead.leader));
                self.set_fence(if lead.leader {
                    Fence::Leader {
                        holder: holder.to_owned(),
                        term: lead.term,
                    }
                } else {
                    Fence::Standby
                });
            }
            Err(e) => {
                self.note_lease(Err(e));
                self.step_down();
            }
        }
        outcome
    }

    /// Writes no more until the lease is taken again (a renewal did not reach the server in
    /// time: the lease may have run out there).
    pub fn step_down(&self) {
        if matches!(self.fence(), Fence::Leader { .. }) {
            self.set_fence(Fence::Standby);
        }
    }

    /// Gives the lease up at once (on stop), so a standby takes over without waiting for it to
    /// run out; best effort.
    pub(crate) async fn release(&self) {
        let Fence::Leader { holder, term } = self.fence() else {
            return;
        };
        self.set_fence(Fence::Standby);
        let released = self
            .read(async {
                let client = self.client().await?;
                client
                    .execute(
                        "UPDATE modelpin_lease SET expires_at = now()
                         WHERE name = 'leader' AND holder = $1 AND term = $2",
                        &[&holder, &term],
                    )
                    .await?;
                Ok(())
            })
            .await;
        if let Err(e) = released {
            tracing::warn!(error = %e, "the lease was not given up; a standby takes over when it runs out");
        }
    }
}
