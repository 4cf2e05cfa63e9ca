//! What more than one test module needs: pins.toml as a typed value, a running daemon read
//! through its API, loopback HTTP, the outside servers the tests talk to, and polling on state.
//!
//! Test modules import from here and never from one another, so a test file can be read, moved
//! or deleted on its own.

pub mod http;
pub mod metrics;
pub mod pins;
pub mod ports;
pub mod tools;
pub mod wait;
