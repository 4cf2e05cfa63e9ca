//! The integration suite: the real `modelpin` binary against real HTTP servers on loopback.

mod harness;
mod schema;
mod world;

mod check;
mod config_errors;
mod daemon;
mod docs;
mod lifecycle;
mod retry;
