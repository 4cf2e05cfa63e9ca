//! A real PostgreSQL server for a test: its own cluster (`initdb`) in a temporary directory,
//! listening on a loopback port only, stopped when dropped. The server refuses to run as root,
//! so as root it runs as the `postgres` user (Debian's package creates it), on a directory that
//! user owns. Used by the CLI tests and, through `#[path]`, by the store's contract tests.
//!
//! The port: picked by the system and held bound (not listening, `SO_REUSEADDR`, as the server
//! binds its own) until the server listens on it, so no other test can take it in between; a
//! start that fails anyway is tried again on another port.
//!
//! Without the server's binaries the test is skipped with a notice, or fails when `CI` is set.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The user the cluster is made for; trusted on loopback (no password).
pub const USER: &str = "modelpin";

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// This process is root: the server's binaries run as the `postgres` user.
    as_root: bool,
    pub port: u16,
}

impl Postgres {
    /// A new cluster, started; `None` (said on stderr) when PostgreSQL is not installed and
    /// `CI` is not set.
    pub fn start() -> Option<Postgres> {
        let Some(bin) = binaries() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "PostgreSQL's server binaries (initdb, pg_ctl) are not installed; .ci/run installs Debian's `postgresql`"
            );
            eprintln!(
                "notice: PostgreSQL is not installed (no initdb); skipping this test. Install Debian's `postgresql` to run it."
            );
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("modelpin-pg")
            .tempdir()
            .expect("a temporary directory");
        let as_root = is_root();
        if as_root {
            run(Command::new("chown").arg("postgres").arg(dir.path()));
        }
        let mut pg = Postgres {
            dir,
            bin,
            as_root,
            port: 0,
        };
        let data = pg.data();
        pg.server("initdb")
            .args([
                "-D",
                &data,
                "-U",
                USER,
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
            ])
            .args(["--locale=C"])
            .output()
            .map(|o| check("initdb", &o))
            .expect("running initdb");
        pg.start_on_a_free_port();
        Some(pg)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").to_string_lossy().into_owned()
    }

    /// A server binary, as the `postgres` user when this process is root.
    fn server(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        if self.as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn start_on_a_free_port(&mut self) {
        for _ in 0..5 {
            let held = hold_port();
            self.port = held.local_addr().expect("bound").port();
            if self.pg_ctl_start().status.success() {
                return;
            }
        }
        panic!(
            "PostgreSQL did not start on five ports; its log:\n{}",
            self.log()
        );
    }

    fn pg_ctl_start(&self) -> Output {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off -c max_connections=60",
            self.port,
            self.dir.path().display()
        );
        self.server("pg_ctl")
            .args(["-D", &self.data(), "-l"])
            .arg(self.dir.path().join("log"))
            .args(["-w", "-t", "60", "-o", &options, "start"])
            .output()
            .expect("running pg_ctl")
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// Stops the server (fast shutdown: sessions are cut, as in a restart).
    pub fn stop(&self) {
        let out = self
            .server("pg_ctl")
            .args(["-D", &self.data(), "-m", "fast", "-w", "stop"])
            .output()
            .expect("running pg_ctl stop");
        check("pg_ctl stop", &out);
    }

    /// Starts it again on the same port, after `stop`.
    pub fn start_again(&self) {
        let out = self.pg_ctl_start();
        check("pg_ctl start", &out);
    }

    /// A libpq URL of database `db` on this server (created with `create_database`).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{USER}@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }

    /// Creates database `name`.
    pub fn create_database(&self, name: &str) {
        let out = Command::new(self.bin.join("createdb"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                name,
            ])
            .output()
            .expect("running createdb");
        check("createdb", &out);
    }

    /// One statement through `psql`, its rows unaligned (`|` between fields).
    pub fn sql(&self, db: &str, statement: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", USER])
            .args(["-d", db, "-At", "-v", "ON_ERROR_STOP=1", "-c", statement])
            .output()
            .expect("running psql");
        check("psql", &out);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .server("pg_ctl")
            .args(["-D", &self.data(), "-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// The directory of `initdb`, `pg_ctl` and `postgres`: `MODELPIN_PG_BIN`, else the newest of
/// Debian's `/usr/lib/postgresql/<major>/bin`, else `initdb` on PATH.
fn binaries() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MODELPIN_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let debian = Path::new("/usr/lib/postgresql");
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir(debian)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((major, bin))
        })
        .collect();
    majors.sort();
    if let Some((_, bin)) = majors.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A loopback port bound without listening, with `SO_REUSEADDR` like the server's own socket.
fn hold_port() -> tokio::net::TcpSocket {
    let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("binding a loopback port");
    socket
}

fn run(command: &mut Command) {
    let out = command.output().expect("running a command");
    check(&format!("{command:?}"), &out);
}

fn check(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What [`Postgres::enable_tls`] made: the CA that signed the server's certificate (which names
/// 127.0.0.1 and nothing else) and another CA that did not.
pub struct Tls {
    pub ca: PathBuf,
    pub other_ca: PathBuf,
}

/// `openssl req` making a new P-256 key without a passphrase.
const EC_KEY: [&str; 6] = [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
];

impl Postgres {
    /// Turns TLS on (a certificate for 127.0.0.1 only, not for `localhost`, signed by a CA of
    /// the test's own) and makes role `user` with `password`, who may connect over TLS with
    /// SCRAM-SHA-256 only; every other role keeps trusted plain connections. Reloaded, not
    /// restarted.
    pub fn enable_tls(&self, user: &str, password: &str) -> Tls {
        let dir = self.dir.path();
        let openssl = |args: &[&str]| {
            run(Command::new("openssl").current_dir(dir).args(args));
        };
        for ca in ["ca", "other-ca"] {
            let key = format!("{ca}.key");
            let pem = format!("{ca}.pem");
            let subject = format!("/CN=modelpin test {ca}");
            let mut args = EC_KEY.to_vec();
            args.extend([
                "-x509", "-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subject,
            ]);
            args.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
            args.extend(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
            openssl(&args);
        }
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write server.ext");
        let mut args = EC_KEY.to_vec();
        args.extend([
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]);
        openssl(&args);
        openssl(
            &"x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext"
                .split(' ')
                .collect::<Vec<_>>(),
        );
        // The server reads its key only when the key is its own and private.
        let key = dir.join("server.key");
        run(Command::new("chmod").arg("600").arg(&key));
        if self.as_root {
            run(Command::new("chown")
                .arg("postgres")
                .arg(&key)
                .arg(dir.join("server.pem")));
        }
        let hba = format!(
            "hostssl all {user} 127.0.0.1/32 scram-sha-256\nhost all {user} 127.0.0.1/32 reject\nhost all all 127.0.0.1/32 trust\nlocal all all trust\n"
        );
        std::fs::write(Path::new(&self.data()).join("pg_hba.conf"), hba)
            .expect("write pg_hba.conf");
        for statement in [
            format!("CREATE ROLE {user} LOGIN PASSWORD '{password}'"),
            format!(
                "ALTER SYSTEM SET ssl_cert_file = '{}'",
                dir.join("server.pem").display()
            ),
            format!("ALTER SYSTEM SET ssl_key_file = '{}'", key.display()),
            "ALTER SYSTEM SET ssl = on".to_owned(),
            "SELECT pg_reload_conf()".to_owned(),
        ] {
            self.sql("postgres", &statement);
        }
        // The reload is signalled, not awaited: wait until a new session sees TLS on.
        let on = (0..100).any(|_| {
            let ssl = self.sql("postgres", "SHOW ssl");
            ssl == "on" || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                false
            }
        });
        assert!(
            on,
            "the server did not turn TLS on; its log:\n{}",
            self.log()
        );
        Tls {
            ca: dir.join("ca.pem"),
            other_ca: dir.join("other-ca.pem"),
        }
    }
}
