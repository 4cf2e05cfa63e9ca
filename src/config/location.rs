//! Where the store is (`[settings] store`): a sled directory, or a PostgreSQL database.
//!
//! A PostgreSQL store is a libpq URL (`postgres://USER@HOST:PORT/DB?sslmode=…`) as
//! `[settings] store` gives it, and the password from the environment, never from the file.
//!
//! tokio-postgres parses the URL itself but knows only `sslmode` `disable`, `prefer` and
//! `require`; libpq's `verify-ca` and `verify-full` and `sslrootcert` are taken out here and
//! applied by the TLS connector (`tls`), with libpq's meanings
//! (postgresql.org/docs/15/libpq-ssl.html, table 34.1): `require` encrypts without checking the
//! certificate, `verify-ca` checks it against the root certificates, `verify-full` also checks
//! that it names the host.

use std::path::PathBuf;
use std::time::Duration;

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A PostgreSQL store's address, parsed and checked, without its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given, which holds no password: what messages and logs show.
    pub url: String,
    /// The URL without the parameters applied here (`sslmode`, `sslrootcert`).
    pub(crate) connect: String,
    pub ssl: SslMode,
    /// `sslrootcert`: a PEM file, or `system` for the bundled web roots; libpq's default
    /// (`~/.postgresql/root.crt`) otherwise.
    pub root_cert: Option<String>,
    /// The variable holding the password (`store_password_env`); `PGPASSWORD` otherwise.
    pub password_env: Option<String>,
    /// How long the server keeps a session idle inside a transaction or waiting for a lock,
    /// and how long the socket tolerates silence: a third of the fleet's lease (at least a
    /// second). A leader frozen (SIGSTOP) or cut off inside a write's transaction then holds
    /// the lease row's lock that long, not until TCP keepalive ends its session (two hours by
    /// default), so a standby takes over within two leases whatever the old leader does.
    pub session_timeout: Duration,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

fn session_timeout(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_secs(1))
}

/// Whether `[settings] store` names a PostgreSQL store rather than a directory.
#[must_use]
pub fn is_postgres(store: &str) -> bool {
    store.starts_with("postgres://") || store.starts_with("postgresql://")
}

impl Target {
    /// Parses a `postgres://` URL; the error says what is wrong with it, for the config's
    /// diagnostic.
    pub fn parse(text: &str, password_env: Option<String>) -> Result<Target, String> {
        let url = url::Url::parse(text).map_err(|e| format!("not a valid URL: {e}"))?;
        if url.password().is_some() {
            return Err(
                "the URL holds a password; it must not be in pins.toml (set PGPASSWORD or name a variable in `store_password_env`)"
                    .to_owned(),
            );
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("the URL names no host".to_owned());
        }
        if url.path().trim_start_matches('/').is_empty() {
            return Err("the URL names no database (postgres://USER@HOST:PORT/DB)".to_owned());
        }
        let mut ssl = SslMode::Prefer;
        let mut root_cert = None;
        let mut kept: Vec<(String, String)> = Vec::new();
        for (key, value) in url.query_pairs() {
            match key.as_ref() {
                "sslmode" => {
                    ssl = match value.as_ref() {
                        "disable" => SslMode::Disable,
                        "allow" | "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-ca" => SslMode::VerifyCa,
                        "verify-full" => SslMode::VerifyFull,
                        other => {
                            return Err(format!(
                                "unknown sslmode `{other}` (one of disable, allow, prefer, require, verify-ca, verify-full)"
                            ));
                        }
                    };
                }
                "sslrootcert" => root_cert = Some(value.into_owned()),
                "password" => {
                    return Err("the URL holds a password; it must not be in pins.toml (set PGPASSWORD or name a variable in `store_password_env`)".to_owned());
                }
                _ => kept.push((key.into_owned(), value.into_owned())),
            }
        }
        let mut connect = url.clone();
        connect.set_query(None);
        if !kept.is_empty() {
            connect.query_pairs_mut().extend_pairs(kept);
        }
        connect
            .as_str()
            .parse::<tokio_postgres::Config>()
            .map_err(|e| format!("not a PostgreSQL URL: {e}"))?;
        Ok(Target {
            url: text.to_owned(),
            connect: connect.into(),
            ssl,
            root_cert,
            password_env,
            session_timeout: session_timeout(crate::config::DEFAULT_LEASE),
        })
    }

    /// The session timeouts for a fleet whose lease is `lease`.
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> Target {
        self.session_timeout = session_timeout(lease);
        self
    }

    /// The root certificates file for `verify-ca`/`verify-full`: `sslrootcert`, else libpq's
    /// default `~/.postgresql/root.crt`.
    pub(crate) fn root_cert_file(&self) -> Option<PathBuf> {
        match self.root_cert.as_deref() {
            Some("system") => None,
            Some(path) => Some(PathBuf::from(path)),
            None => std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".postgresql").join("root.crt")),
        }
    }
}

/// Where the store is (`[settings] store`): a directory for the embedded sled store, or a
/// PostgreSQL database that a fleet of daemons shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sled(PathBuf),
    Postgres(Target),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sled(path) => write!(f, "{}", path.display()),
            Location::Postgres(target) => write!(f, "{target}"),
        }
    }
}

impl Location {
    /// Whether a store is there already (a PostgreSQL database is taken to be).
    #[must_use]
    pub fn exists(&self) -> bool {
        match self {
            Location::Sled(path) => path.exists(),
            Location::Postgres(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{SslMode, Target};

    #[test]
    fn a_url_keeps_its_own_parameters_and_gives_up_the_ones_applied_here() {
        let t = Target::parse(
            "postgres://mp@db.example:5433/fleet?sslmode=verify-full&sslrootcert=/ca.pem&connect_timeout=3",
            None,
        )
        .unwrap();
        assert_eq!(t.ssl, SslMode::VerifyFull);
        assert_eq!(t.root_cert.as_deref(), Some("/ca.pem"));
        assert_eq!(
            t.connect,
            "postgres://mp@db.example:5433/fleet?connect_timeout=3"
        );
        assert_eq!(
            Target::parse("postgres://mp@h/db", None).unwrap().ssl,
            SslMode::Prefer
        );
    }

    #[test]
    fn a_password_in_the_file_a_missing_database_and_an_unknown_sslmode_are_refused() {
        for (url, says) in [
            ("postgres://mp:secret@h/db", "holds a password"),
            ("postgres://mp@h/db?password=x", "holds a password"),
            ("postgres://mp@h/", "no database"),
            (
                "postgres://mp@h/db?sslmode=sometimes",
                "unknown sslmode `sometimes`",
            ),
        ] {
            let err = Target::parse(url, None).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }
}
