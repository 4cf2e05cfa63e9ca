//! A daemon for unit tests: a config loaded through the real loader, a sled store in a temporary
//! directory, nothing listening and no signals. Build it after `tokio::time::pause` (or in a
//! `start_paused` test): its start is read from the clock.

use std::sync::Arc;

use crate::config::Config;
use crate::daemon::traffic::Traffic;
use crate::daemon::{Daemon, Parts, Selection, Snapshot};
use crate::store::{Holder, Store};

/// The daemon and the directory holding its store and pins.toml (`pins.toml`, not written).
pub(crate) struct TestDaemon {
    pub daemon: Arc<Daemon>,
    pub dir: tempfile::TempDir,
}

pub(crate) async fn daemon_with(config: Config) -> TestDaemon {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store"), Holder::Daemon)
        .await
        .unwrap();
    let traffic = Traffic::new(&config).unwrap();
    let daemon = Daemon::new(Parts {
        config_path: dir.path().join("pins.toml"),
        selection: Selection::new(&[]).unwrap(),
        snapshot: Snapshot::of(config).unwrap(),
        store,
        api_token: None,
        traffic,
    });
    daemon.metrics.declare(&daemon.config());
    TestDaemon {
        daemon: Arc::new(daemon),
        dir,
    }
}

/// One line of the daemon's metrics exposition, `None` when the series does not exist.
pub(crate) fn metric(daemon: &Daemon, series: &str) -> Option<f64> {
    daemon
        .metrics
        .render()
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}
