//! The integration suite: the real `modelpin` binary against real HTTP servers on loopback.

mod harness;
mod schema;
mod world;

mod advice;
mod alerts;
mod behaviour;
mod browser;
mod check;
mod ci;
mod config_errors;
mod daemon;
mod daemon_bounds;
mod dashboard;
mod demo;
mod docs;
mod first_hour;
mod honesty;
mod hostile;
mod hostile_setup;
mod interrupt;
mod lifecycle;
mod litellm;
mod manual;
mod money;
mod outages;
mod pair;
mod receivers;
mod refused;
mod retry;
mod scan;
mod status_layout;
mod status_page;
mod traffic;
mod traffic_daemon;
mod traffic_otel;
