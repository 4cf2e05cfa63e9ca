//! modelpin: keeps LLM model IDs honest.
//!
//! A pinned model ID is a lease, not a contract: providers retire IDs and sometimes keep answering
//! them with another model. This library holds the whole pipeline — config, provider adapters,
//! transport, audit, lock, report — and `main.rs` only maps its outcome to an exit code.

mod closed;

pub(crate) mod alert;
pub mod app;
pub(crate) mod audit;
pub(crate) mod breaker;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod daemon;
pub(crate) mod exit;
pub(crate) mod fault;
pub(crate) mod files;
pub(crate) mod finding;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod lifecycle;
pub(crate) mod lock;
pub(crate) mod logging;
pub(crate) mod problem;
pub mod provider;
pub(crate) mod redact;
pub(crate) mod report;
pub(crate) mod retry;
pub(crate) mod scan;
pub mod severity;
pub mod sim;
pub mod stats;
pub mod store;
// Public for the fuzz targets (fuzz/), which call the text bounds and the OTLP decoder.
#[doc(hidden)]
pub mod text;
#[doc(hidden)]
pub mod traffic;
pub(crate) mod transport;
pub(crate) mod words;
