//! Everything a store holds, read out whole and written into another (`modelpin store copy`):
//! history, alert state and the outbox with where each delivery stands.

use crate::store::alerts::PinAlerts;
use crate::store::{AuditRecord, Entry};

/// A store's contents.
#[derive(Debug, Default, PartialEq)]
pub struct Contents {
    /// Oldest first.
    pub audits: Vec<AuditRecord>,
    /// By subject (`AuditRecord::alert_subject`).
    pub states: Vec<(String, PinAlerts)>,
    /// Oldest first.
    pub outbox: Vec<Entry>,
    /// Audits, alert states and outbox entries whose bytes do not decode: left out of the
    /// above, so a copy of these contents would lose them.
    pub unreadable: u64,
}

/// How much a store holds: what a copy is verified by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub audits: usize,
    pub states: usize,
    pub outbox: usize,
    /// Outbox entries still to be sent.
    pub pending: usize,
}

impl Contents {
    #[must_use]
    pub fn counts(&self) -> Counts {
        Counts {
            audits: self.audits.len(),
            states: self.states.len(),
            outbox: self.outbox.len(),
            pending: self
                .outbox
                .iter()
                .filter(|e| e.delivery.state == crate::store::DeliveryState::Pending)
                .count(),
        }
    }

    /// Counts `row` as unreadable when it does not decode.
    pub(crate) fn decoded<T>(&mut self, row: serde_json::Result<T>) -> Option<T> {
        self.unreadable += u64::from(row.is_err());
        row.ok()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.audits.is_empty() && self.states.is_empty() && self.outbox.is_empty()
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} audits, {} alert states, {} outbox entries ({} pending)",
            self.audits, self.states, self.outbox, self.pending
        )
    }
}
