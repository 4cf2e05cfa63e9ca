//! The PostgreSQL backend: a store that several daemons share (`store = "postgres://…"`).
//!
//! Every operation takes a connection from a bounded pool for as long as it runs and no longer
//! (never across a provider call), and every await on the server has a deadline (`DEADLINE`):
//! a server that stops answering fails the operation, shows on `/healthz`, and the pool
//! replaces the dead connections when it answers again, so the daemon recovers without a
//! restart. A commit is one transaction, as on sled; once the server acknowledged it, it is on
//! the server's disk.
//!
//! Writes are fenced (`Fence`): a daemon in a fleet writes only while it holds the lease
//! (`lease`), and each write transaction first reads the lease row `FOR SHARE`, checking the
//! holder, the term and the expiry against the server's clock. A leader deposed while it worked
//! (its lease expired, another took it with the next term) has its write refused inside the very
//! transaction that would have written, and a takeover cannot commit while such a write is open.

mod copy;
mod history;
pub mod inbox;
mod lease;
mod outbox;
pub(crate) mod schema;
mod tls;

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;

use crate::store::{Failing, Holder, StoreError};

pub use crate::config::location::{SslMode, Target, is_postgres};
pub use lease::Lead;

/// The longest any one await on the server may take: connecting, a query, a commit.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// Connections per process: one commit per audit at a time is far below this, and pages
/// waiting on a slow server cannot take more.
const POOL: usize = 8;

/// Who may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fence {
    /// Not in a fleet (`check --notify`, `store copy`): writes are not checked.
    Off,
    /// In a fleet without the lease: every write is refused.
    Standby,
    /// Holding the lease as `holder` with `term`: writes are checked against the lease row.
    Leader { holder: String, term: i64 },
}

/// The store on PostgreSQL; clones share the pool.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    target: Target,
    pool: deadpool_postgres::Pool,
    /// Writes the server refused (an audit's commit, an outbox update), until one is taken.
    failing: Mutex<Option<Failing>>,
    /// Lease questions the server did not answer, until one is: kept apart from `failing`, so a
    /// renewal that gets through does not hide audits that cannot be written (a full disk).
    lease_failing: Mutex<Option<Failing>>,
    undecodable: AtomicU64,
    fence: Mutex<Fence>,
    closed: AtomicBool,
    #[cfg(test)]
    refuse: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.inner.target.url)
            .finish_non_exhaustive()
    }
}

/// Why an operation did not happen.
#[derive(Debug)]
pub(crate) enum Refused {
    /// An entry to rewrite changed since it was read.
    Conflict,
    /// This process does not hold the lease (any more).
    Deposed,
    Failed(Failure),
}

/// What went wrong, and what to do about it when the kind of failure says so.
#[derive(Debug)]
pub(crate) struct Failure {
    message: String,
    hint: Option<Hint>,
    /// A client error that carries neither a SQLSTATE nor an I/O or TLS cause: a protocol or
    /// configuration refusal (tokio-postgres's "password missing" is one).
    unexplained: bool,
}

impl Failure {
    fn new(message: String) -> Failure {
        Failure {
            message,
            hint: None,
            unexplained: false,
        }
    }

    /// The message, and what to do when the hint says.
    fn explained(self) -> (String, Option<String>) {
        (self.message, self.hint.map(|h| h.text().to_owned()))
    }
}

/// What to do about a store that cannot be opened, chosen by the kind of failure: the server's
/// SQLSTATE, or the I/O or TLS error under the client's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hint {
    /// The server's certificate was refused.
    Certificate,
    /// Password authentication failed (28P01).
    Password,
    /// No password was given, and the client could not say what went wrong: the server may
    /// want one (tokio-postgres's "password missing" carries no kind of its own).
    NoPassword,
    /// The server refuses this user here (28000): pg_hba.conf, or a role that does not exist or
    /// may not log in.
    Refused,
    /// No such database (3D000).
    Database,
    /// Nothing answered at the address, or not in time.
    Unreachable,
}

impl Hint {
    fn text(self) -> &'static str {
        match self {
            Hint::Certificate => {
                "check that `sslrootcert` names the CA that signed the server's certificate and, with sslmode=verify-full, that the URL's host is a name the certificate holds"
            }
            Hint::Password => {
                "set the password in PGPASSWORD, or in the variable `store_password_env` names"
            }
            Hint::NoPassword => {
                "no password was given: if the server asks for one, set it in PGPASSWORD or in the variable `store_password_env` names"
            }
            Hint::Refused => {
                "check that the role exists and may log in, and that the server's pg_hba.conf admits this user, database and encryption (ask its administrator); set sslmode=require when it wants TLS"
            }
            Hint::Database => "create the database first (createdb -O USER DB)",
            Hint::Unreachable => "check that PostgreSQL listens at the URL's host and port",
        }
    }

    /// The hint for a client error: by SQLSTATE when the server answered, else by the I/O or
    /// TLS error it carries; `Err` when it carries neither.
    fn of(e: &tokio_postgres::Error) -> Result<Option<Hint>, ()> {
        use tokio_postgres::error::SqlState;
        if let Some(code) = e.code() {
            return Ok(match code {
                c if *c == SqlState::INVALID_PASSWORD => Some(Hint::Password),
                c if *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => Some(Hint::Refused),
                c if *c == SqlState::INVALID_CATALOG_NAME => Some(Hint::Database),
                _ => None,
            });
        }
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            let tls = s.downcast_ref::<rustls::Error>().or_else(|| {
                s.downcast_ref::<std::io::Error>()
                    .and_then(std::io::Error::get_ref)
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            });
            if let Some(tls) = tls {
                return Ok(matches!(
                    tls,
                    rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
                )
                .then_some(Hint::Certificate));
            }
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind;
                return Ok(matches!(
                    io.kind(),
                    ErrorKind::ConnectionRefused
                        | ErrorKind::TimedOut
                        | ErrorKind::HostUnreachable
                        | ErrorKind::NetworkUnreachable
                        | ErrorKind::AddrNotAvailable
                )
                .then_some(Hint::Unreachable));
            }
            source = s.source();
        }
        Err(())
    }
}

impl From<tokio_postgres::Error> for Refused {
    fn from(e: tokio_postgres::Error) -> Refused {
        let hint = Hint::of(&e);
        Refused::Failed(Failure {
            message: db_error(&e),
            unexplained: hint.is_err(),
            hint: hint.unwrap_or(None),
        })
    }
}

impl From<deadpool_postgres::PoolError> for Refused {
    fn from(e: deadpool_postgres::PoolError) -> Refused {
        match e {
            deadpool_postgres::PoolError::Backend(e) => Refused::from(e),
            deadpool_postgres::PoolError::Timeout(_) => Refused::Failed(Failure {
                message: format!("no connection to the server within {}s", DEADLINE.as_secs()),
                hint: Some(Hint::Unreachable),
                unexplained: false,
            }),
            other => Refused::Failed(Failure::new(other.to_string())),
        }
    }
}

impl From<serde_json::Error> for Refused {
    fn from(e: serde_json::Error) -> Refused {
        Refused::Failed(Failure::new(e.to_string()))
    }
}

/// The server's own message when it sent one (tokio-postgres's `Display` says only "db error").
fn db_error(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl PgStore {
    /// Connects to `target` and brings its schema up to date (refusing a newer one). Writes are
    /// not fenced until the process joins the fleet (`join_fleet`).
    pub async fn open(target: &Target, holder: Holder) -> Result<PgStore, StoreError> {
        let explained = |(message, help): (String, Option<String>)| StoreError::Io {
            path: PathBuf::from(&target.url),
            message,
            help,
        };
        let opening = |message: String| explained((message, None));
        let config = connect_config(target).map_err(opening)?;
        // Without a password, a refusal the client cannot explain may be the server asking for
        // one ("password missing"): the hint says so conditionally.
        let has_password = config.get_password().is_some();
        let failed = |refused: Refused| match refused {
            Refused::Failed(mut failure) => {
                if failure.hint.is_none() && failure.unexplained && !has_password {
                    failure.hint = Some(Hint::NoPassword);
                }
                failure.explained()
            }
            other => (format!("{other:?}"), None),
        };
        let tls = tls::MakeRustls::for_target(target).map_err(opening)?;
        let manager = deadpool_postgres::Manager::from_config(
            config,
            tls,
            deadpool_postgres::ManagerConfig {
                recycling_method: deadpool_postgres::RecyclingMethod::Fast,
            },
        );
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(POOL)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(DEADLINE))
            .create_timeout(Some(DEADLINE))
            .recycle_timeout(Some(DEADLINE))
            .build()
            .map_err(|e| opening(e.to_string()))?;
        let store = PgStore {
            inner: Arc::new(Inner {
                target: target.clone(),
                pool,
                failing: Mutex::default(),
                lease_failing: Mutex::default(),
                undecodable: AtomicU64::new(0),
                fence: Mutex::new(Fence::Off),
                closed: AtomicBool::new(false),
                #[cfg(test)]
                refuse: std::sync::atomic::AtomicU32::new(0),
            }),
        };
        // `history` only reads: it writes no schema, so a read-only role can run it.
        let reads_only = holder == Holder::History;
        let migrated = within(async {
            let mut client = store.client().await?;
            if reads_only {
                Ok(schema::version(&client).await)
            } else {
                Ok(schema::migrate(&mut client).await)
            }
        })
        .await;
        match migrated {
            Ok(Ok(found)) if reads_only && found < schema::VERSION => Err(opening(if found == 0 {
                "no modelpin store in this database yet: `modelpin daemon` creates it".to_owned()
            } else {
                format!(
                    "the store's schema is at version {found}; `modelpin daemon` brings it to {} (`history` only reads)",
                    schema::VERSION
                )
            })),
            Ok(Ok(_)) => Ok(store),
            Ok(Err(schema::Refused::Newer(found))) => Err(StoreError::NewerSchema {
                at: target.url.clone(),
                found,
                known: schema::VERSION,
            }),
            Ok(Err(schema::Refused::Failed(e))) => Err(explained(failed(Refused::from(e)))),
            Err(refused) => Err(explained(failed(refused))),
        }
    }

    /// From now on this process writes only while it holds the fleet's lease (`lead`).
    pub fn join_fleet(&self) {
        self.set_fence(Fence::Standby);
    }

    /// The store's address as configured (it holds no password).
    #[must_use]
    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    /// Every later operation fails; a lease held is given up first.
    pub async fn close(&self) -> Result<(), StoreError> {
        self.release().await;
        self.inner.closed.store(true, Ordering::Release);
        self.inner.pool.close();
        Ok(())
    }

    #[must_use]
    pub fn undecodable(&self) -> u64 {
        self.inner.undecodable.load(Ordering::Acquire)
    }

    fn left_out(&self, records: usize) {
        if records > 0 {
            self.inner
                .undecodable
                .fetch_add(records as u64, Ordering::AcqRel);
            tracing::error!(store = %self.inner.target, records, "records in the store do not decode and were left out of what was read");
        }
    }

    /// Why the store is unhealthy: writes refused, or the lease unanswered (the older first).
    #[must_use]
    pub fn failing(&self) -> Option<Failing> {
        let writes = self.inner.failing.lock().expect("failing lock").clone();
        let lease = self
            .inner
            .lease_failing
            .lock()
            .expect("failing lock")
            .clone();
        match (writes, lease) {
            (Some(w), Some(l)) => Some(if l.since < w.since { l } else { w }),
            (w, l) => w.or(l),
        }
    }

    /// Notes whether the server took a write: the health check.
    fn note(&self, outcome: Result<(), &StoreError>) {
        Failing::note(&self.inner.failing, outcome);
    }

    /// Notes whether the server answered the lease. A standby writes nothing, so what its
    /// writes did while it led says nothing about the store now.
    fn note_lease(&self, outcome: Result<bool, &StoreError>) {
        Failing::note(&self.inner.lease_failing, outcome.map(|_| ()));
        if matches!(outcome, Ok(false)) {
            *self.inner.failing.lock().expect("failing lock") = None;
        }
    }

    /// The pool reconnects by itself: there is nothing to reopen.
    #[must_use]
    pub fn generation(&self) -> u64 {
        0
    }

    #[allow(clippy::unused_async)] // the interface's, async for sled
    pub async fn recover(&self, _failed: u64) -> Result<(), StoreError> {
        Ok(())
    }

    /// A commit is durable once acknowledged: nothing is left to flush.
    #[allow(clippy::unused_async)] // the interface's, async for sled
    pub async fn flush(&self) -> Result<(), StoreError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(self.error("the store is closed"));
        }
        Ok(())
    }

    pub(crate) fn fence(&self) -> Fence {
        self.inner.fence.lock().expect("fence lock").clone()
    }

    fn set_fence(&self, fence: Fence) {
        *self.inner.fence.lock().expect("fence lock") = fence;
    }

    fn error(&self, message: impl std::fmt::Display) -> StoreError {
        StoreError::Write {
            path: PathBuf::from(&self.inner.target.url),
            message: message.to_string(),
        }
    }

    /// A connection from the pool, for one operation.
    async fn client(&self) -> Result<deadpool_postgres::Object, Refused> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Refused::Failed(Failure::new(
                "the store is closed".to_owned(),
            )));
        }
        Ok(self.inner.pool.get().await?)
    }

    /// A read, within its deadline.
    async fn read<T>(
        &self,
        read: impl Future<Output = Result<T, Refused>>,
    ) -> Result<T, StoreError> {
        within(read).await.map_err(|e| self.refusal(e))
    }

    /// One read statement's rows, within the deadline.
    async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        self.read(async { Ok(self.client().await?.query(sql, params).await?) })
            .await
    }

    /// One read statement's row, if any, within the deadline.
    async fn row(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<tokio_postgres::Row>, StoreError> {
        self.read(async { Ok(self.client().await?.query_opt(sql, params).await?) })
            .await
    }

    /// A write, within its deadline, its outcome noted for the health check (a conflict and a
    /// fenced refusal say nothing about the server's health).
    async fn write<T>(
        &self,
        write: impl Future<Output = Result<T, Refused>>,
    ) -> Result<T, StoreError> {
        #[cfg(test)]
        if self.refused_by_test() {
            let e = self.error("refused by the test");
            self.note(Err(&e));
            return Err(e);
        }
        let outcome = within(write).await.map_err(|e| self.refusal(e));
        match &outcome {
            Err(StoreError::Conflict { .. } | StoreError::Deposed { .. }) => {}
            Err(e) => self.note(Err(e)),
            Ok(_) => self.note(Ok(())),
        }
        outcome
    }

    fn refusal(&self, refused: Refused) -> StoreError {
        let at = PathBuf::from(&self.inner.target.url);
        match refused {
            Refused::Conflict => StoreError::Conflict { path: at },
            Refused::Deposed => StoreError::Deposed {
                at: self.inner.target.url.clone(),
            },
            Refused::Failed(failure) => StoreError::Write {
                path: at,
                message: failure.message,
            },
        }
    }

    /// Checks, inside the write's transaction, that this process may write: the lease row read
    /// `FOR SHARE` (a takeover waits for this transaction) must still name this holder and term
    /// and not have expired by the server's clock.
    async fn fenced(&self, tx: &tokio_postgres::Transaction<'_>) -> Result<(), Refused> {
        match self.fence() {
            Fence::Off => Ok(()),
            Fence::Standby => Err(Refused::Deposed),
            Fence::Leader { holder, term } => {
                let row = tx
                    .query_opt(
                        "SELECT 1 FROM modelpin_lease
                         WHERE name = 'leader' AND holder = $1 AND term = $2 AND expires_at > now()
                         FOR SHARE",
                        &[&holder, &term],
                    )
                    .await?;
                row.map(|_| ()).ok_or(Refused::Deposed)
            }
        }
    }

    #[cfg(test)]
    fn refused_by_test(&self) -> bool {
        self.inner
            .refuse
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    #[cfg(test)]
    pub(crate) fn refuse_writes(&self, writes: u32) {
        self.inner.refuse.store(writes, Ordering::Release);
    }
}

/// `work` unless it takes longer than `DEADLINE`.
async fn within<T>(work: impl Future<Output = Result<T, Refused>>) -> Result<T, Refused> {
    match tokio::time::timeout(DEADLINE, work).await {
        Ok(done) => done,
        Err(_) => Err(Refused::Failed(Failure {
            message: format!("no answer from the server within {}s", DEADLINE.as_secs()),
            hint: Some(Hint::Unreachable),
            unexplained: false,
        })),
    }
}

/// Milliseconds since the epoch, as the store keeps times (before the epoch counts as 0).
fn millis(at: chrono::DateTime<Utc>) -> i64 {
    at.timestamp_millis().max(0)
}

/// `target`'s connection settings with the password from the environment (`store_password_env`,
/// else `PGPASSWORD`), when set.
pub(crate) fn connect_config(target: &Target) -> Result<tokio_postgres::Config, String> {
    let mut config: tokio_postgres::Config = target
        .connect
        .parse()
        .map_err(|e: tokio_postgres::Error| e.to_string())?;
    let var = target.password_env.as_deref().unwrap_or("PGPASSWORD");
    match std::env::var(var) {
        Ok(password) => {
            config.password(password);
        }
        Err(_) if target.password_env.is_some() => {
            return Err(format!(
                "environment variable `{var}` (settings.store_password_env, the store's password) is not set"
            ));
        }
        Err(_) => {}
    }
    config.ssl_mode(match target.ssl {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            tokio_postgres::config::SslMode::Require
        }
    });
    config.connect_timeout(DEADLINE);
    config.application_name("modelpin");
    let ms = target.session_timeout.as_millis();
    let timeouts = format!("-c idle_in_transaction_session_timeout={ms} -c lock_timeout={ms}");
    let options = match config.get_options() {
        Some(given) if !given.is_empty() => format!("{given} {timeouts}"),
        _ => timeouts,
    };
    config.options(options);
    config.keepalives(true);
    config.keepalives_idle(target.session_timeout);
    config.keepalives_interval(target.session_timeout);
    config.keepalives_retries(3);
    config.tcp_user_timeout(DEADLINE);
    Ok(config)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod hint_tests {
    use super::{Failure, Hint, Refused};

    /// The hints by SQLSTATE and certificate are measured against a real server (tests/cli
    /// fleet.rs); here, the error under the client's when nothing listens, and the help line.
    #[tokio::test]
    async fn nothing_listening_is_told_to_check_the_address_and_the_help_is_its_own_line() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let url = format!("postgres://u@127.0.0.1:{port}/db?connect_timeout=5");
        let e = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .err()
            .expect("nothing listens");
        assert_eq!(Hint::of(&e), Ok(Some(Hint::Unreachable)), "{e}");
        let Refused::Failed(failure) = Refused::from(e) else {
            panic!("a failure")
        };
        let (_, help) = failure.explained();
        assert_eq!(
            help.as_deref(),
            Some("check that PostgreSQL listens at the URL's host and port")
        );
        assert_eq!(
            Failure::new("as said".to_owned()).explained(),
            ("as said".to_owned(), None)
        );
    }
}
