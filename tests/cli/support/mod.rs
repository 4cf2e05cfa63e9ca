//! What more than one test module needs: pins.toml as a typed value, a running daemon read
//! through its API, loopback HTTP, the outside servers the tests talk to, polling on state, the
//! lock's compressed samples as JSON, and the documents' links and example commands.
//!
//! Test modules import from here and never from one another, so a test file can be read, moved
//! or deleted on its own.

pub mod daemon;
pub mod drift;
pub mod http;
pub mod litellm;
pub mod lockfile;
pub mod markdown;
pub mod metrics;
pub mod oci;
pub mod pins;
pub mod ports;
pub mod postgres;
pub mod real_model;
pub mod receivers;
pub mod relay;
pub mod status;
pub mod tools;
pub mod traffic;
pub mod wait;
