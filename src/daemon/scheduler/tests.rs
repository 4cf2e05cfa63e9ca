//! The loop under a paused clock: what it dispatches, skips and reloads, and that upkeep, however
//! slow, never holds it up. Audits and upkeep chores are stand-ins that only take time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::{Notify, mpsc};
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

use crate::config::tests_support::config_with;
use crate::daemon::Daemon;
use crate::daemon::scheduler::Scheduler;
use crate::daemon::signals::Control;
use crate::daemon::test_support::{daemon_with, metric};
use crate::daemon::upkeep::{self, Chore};
use crate::exit::Exit;

/// One pin, `support-bot`, scheduled once a year: in these tests pins are due when catch-up or
/// the test says so, never by the wall clock.
fn yearly() -> crate::config::Config {
    let pins = crate::config::tests::BASE.replace(
        "version = 1\n",
        "version = 1\n\n[settings]\nschedule = \"0 0 0 1 1 *\"\n",
    );
    config_with(&pins, crate::config::tests::PROBE)
}

/// A stand-in audit that takes `lasts`, noting which pin it ran for and when it started.
#[derive(Clone)]
struct Audits {
    started: Arc<Mutex<Vec<(String, Duration)>>>,
    at: Instant,
    lasts: Duration,
}

impl Audits {
    fn new(lasts: Duration) -> Audits {
        Audits {
            started: Arc::default(),
            at: Instant::now(),
            lasts,
        }
    }

    fn job(&self) -> impl Fn(Arc<Daemon>, String) -> futures::future::BoxFuture<'static, ()> {
        let audits = self.clone();
        move |_, pin| {
            let audits = audits.clone();
            Box::pin(async move {
                let started = audits.at.elapsed();
                audits.started.lock().unwrap().push((pin, started));
                sleep(audits.lasts).await;
            })
        }
    }

    fn pins(&self) -> Vec<String> {
        self.started
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }
}

const SKIPPED: &str = "modelpin_audits_skipped_total{pin=\"support-bot\"}";

#[tokio::test(start_paused = true)]
async fn a_due_pin_is_dispatched_and_one_still_running_is_skipped_and_counted() {
    let t = daemon_with(yearly()).await;
    let audits = Audits::new(Duration::from_secs(30));
    let (control, told) = mpsc::channel(4);
    let scheduler = Scheduler::new(t.daemon.clone(), told, Arc::default(), audits.job());
    let due = scheduler.due();
    let driver = async {
        sleep(Duration::from_secs(1)).await;
        assert_eq!(
            audits.pins(),
            ["support-bot"],
            "never audited: caught up at once"
        );
        due.send("support-bot".into()).unwrap();
        sleep(Duration::from_secs(1)).await;
        assert_eq!(audits.pins().len(), 1, "still running: not overlapped");
        assert_eq!(metric(&t.daemon, SKIPPED), Some(1.0));
        sleep(Duration::from_secs(30)).await;
        due.send("support-bot".into()).unwrap();
        sleep(Duration::from_secs(1)).await;
        assert_eq!(audits.pins().len(), 2, "finished: dispatched again");
        assert_eq!(metric(&t.daemon, SKIPPED), Some(1.0));
        control.send(Control::Stop).await.unwrap();
    };
    let (code, ()) = tokio::join!(scheduler.run(), driver);
    assert_eq!(code, Exit::Ok);
}

#[tokio::test(start_paused = true)]
async fn a_reload_keeps_the_running_config_when_the_new_one_is_invalid() {
    let t = daemon_with(yearly()).await;
    let audits = Audits::new(Duration::from_secs(1));
    let (control, told) = mpsc::channel(4);
    let refresh = Arc::new(Notify::new());
    let scheduler = Scheduler::new(t.daemon.clone(), told, refresh.clone(), audits.job());
    let pins_toml = t.dir.path().join("pins.toml");
    let before = t.daemon.config();
    let driver = async {
        std::fs::write(&pins_toml, "version = 1\nthis is not toml\n").unwrap();
        control.send(Control::Reload).await.unwrap();
        sleep(Duration::from_secs(1)).await;
        assert!(
            Arc::ptr_eq(&before, &t.daemon.config()),
            "the old config runs on"
        );
        // A valid one replaces it, asks upkeep for its feeds, and its new pin is caught up.
        std::fs::write(&pins_toml, RELOADED).unwrap();
        control.send(Control::Reload).await.unwrap();
        tokio::time::timeout(Duration::from_secs(1), refresh.notified())
            .await
            .expect("upkeep asked to load the new config's feeds");
        sleep(Duration::from_secs(2)).await;
        let ids: Vec<String> = t
            .daemon
            .config()
            .pins
            .iter()
            .map(|p| p.id.clone())
            .collect();
        assert_eq!(ids, ["support-bot", "second"]);
        assert!(
            audits.pins().contains(&"second".to_owned()),
            "{:?}",
            audits.pins()
        );
        control.send(Control::Stop).await.unwrap();
    };
    let (code, ()) = tokio::join!(scheduler.run(), driver);
    assert_eq!(code, Exit::Ok);
}

/// A pins.toml that loads without any provider key in the environment.
const RELOADED: &str = r#"version = 1

[settings]
schedule = "0 0 0 1 1 *"

[providers.local]
kind = "openai-compatible"
base_url = "http://127.0.0.1:9/v1"

[[pin]]
id = "support-bot"
provider = "local"
model = "m"

[[pin]]
id = "second"
provider = "local"
model = "m"
"#;

#[tokio::test(start_paused = true)]
async fn a_slow_upkeep_never_stops_dispatch_or_the_heartbeat() {
    let t = daemon_with(yearly()).await;
    let audits = Audits::new(Duration::from_secs(1));
    let (control, told) = mpsc::channel(4);
    let refresh = Arc::new(Notify::new());
    let scheduler = Scheduler::new(t.daemon.clone(), told, refresh.clone(), audits.job());
    let due = scheduler.due();
    let chores: Arc<Mutex<Vec<Chore>>> = Arc::default();
    // Every chore takes two hours: the first feed load is still running throughout.
    let slow = |chore| {
        chores.lock().unwrap().push(chore);
        sleep(Duration::from_secs(7200))
    };
    let stop_upkeep = CancellationToken::new();
    let upkeep = upkeep::run(slow, refresh, stop_upkeep.clone());
    let driver = async {
        for _ in 0..10 {
            sleep(Duration::from_secs(60)).await;
            due.send("support-bot".into()).unwrap();
            sleep(Duration::from_secs(2)).await;
            assert_eq!(t.daemon.health(Utc::now()), Ok(()), "the loop beats");
        }
        assert_eq!(audits.pins().len(), 11, "caught up, then every minute");
        assert_eq!(*chores.lock().unwrap(), [Chore::LoadFacts]);
        control.send(Control::Stop).await.unwrap();
        stop_upkeep.cancel();
    };
    let (code, (), ()) = tokio::join!(scheduler.run(), upkeep, driver);
    assert_eq!(code, Exit::Ok);
}
