//! modelpin: keeps LLM model IDs honest.
//!
//! A pinned model ID is a lease, not a contract: providers retire IDs and sometimes keep answering
//! them with another model. This library holds the whole pipeline — config, provider adapters,
//! transport, audit, lock, report — and `main.rs` only maps its outcome to an exit code.

mod closed;

pub mod alert;
pub mod app;
pub mod audit;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod daemon;
pub mod exit;
pub mod fault;
pub mod finding;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod lifecycle;
pub mod lock;
pub mod logging;
pub mod provider;
pub mod redact;
pub mod report;
pub mod retry;
pub mod scan;
pub mod sim;
pub mod stats;
pub mod store;
pub mod text;
pub mod traffic;
pub mod transport;
pub mod words;
