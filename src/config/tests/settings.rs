//! Golden messages for `[settings]`.

use super::{BASE, error};

/// `BASE` with a `[settings]` table holding `lines` (after `version`, before the providers).
fn with_settings(lines: &str) -> String {
    BASE.replacen(
        "version = 1\n",
        &format!("version = 1\n\n[settings]\n{lines}\n"),
        1,
    )
}

#[test]
fn invalid_duration() {
    assert_eq!(
        error(&with_settings("timeout = \"10x\"")),
        r#"error: invalid duration `10x` for `timeout`
 --> pins.toml:4:11
  |
4 | timeout = "10x"
  |           ^^^^^
  = help: use whole numbers with units ms, s, m, h or d, largest first, like `90s`, `10m` or `1h30m`"#
    );
}

#[test]
fn zero_duration() {
    assert_eq!(
        error(&with_settings("budget = \"0s\"")),
        r#"error: `budget` must be longer than zero
 --> pins.toml:4:10
  |
4 | budget = "0s"
  |          ^^^^"#
    );
}

#[test]
fn invalid_duration_in_a_list() {
    assert_eq!(
        error(&with_settings("warn_before = [\"90d\", \"1w\"]")),
        r#"error: invalid duration `1w` for `warn_before`
 --> pins.toml:4:23
  |
4 | warn_before = ["90d", "1w"]
  |                       ^^^^
  = help: use whole numbers with units ms, s, m, h or d, largest first, like `90s`, `10m` or `1h30m`"#
    );
}

#[test]
fn alpha_outside_zero_one() {
    for (alpha, column) in [("1.5", 9), ("0.0", 9), ("-0.01", 9), ("1", 9)] {
        let err = error(&with_settings(&format!("alpha = {alpha}")));
        let shown = alpha.parse::<f64>().unwrap();
        assert_eq!(
            err,
            format!(
                "error: `alpha` must be between 0 and 1 (exclusive), found {shown:?}\n --> pins.toml:4:{column}\n  |\n4 | alpha = {alpha}\n  |         {}\n  = help: it is the false-alarm rate per pin per audit; 0.001 is the default",
                "^".repeat(alpha.len())
            )
        );
    }
}

#[test]
fn concurrency_zero() {
    assert_eq!(
        error(&with_settings("concurrency = 0")),
        r"error: `concurrency` must be at least 1
 --> pins.toml:4:15
  |
4 | concurrency = 0
  |               ^"
    );
}

#[test]
fn metrics_address() {
    assert_eq!(
        error(&with_settings("metrics = \"localhost:9464\"")),
        r#"error: invalid `metrics` address `localhost:9464`
 --> pins.toml:4:11
  |
4 | metrics = "localhost:9464"
  |           ^^^^^^^^^^^^^^^^
  = help: use an IP address and port, like `127.0.0.1:9464`"#
    );
}

#[test]
fn schedule_needs_six_fields_or_a_crontab_line() {
    assert_eq!(
        error(&with_settings("schedule = \"0 * * *\"")),
        r#"error: `schedule` needs 6 cron fields (sec min hour dom mon dow) or 5 (a crontab line), found 4
 --> pins.toml:4:12
  |
4 | schedule = "0 * * *"
  |            ^^^^^^^^^
  = help: for example `0 0 * * * *` runs at the top of every hour (UTC)"#
    );
}

#[test]
fn feeds_over_plain_http_or_other_schemes() {
    assert_eq!(
        error(&with_settings(
            "deprecation_feeds = [\"http://feeds.example.com/d.json\", \"ftp://x/y\"]"
        )),
        r#"error: refusing plain `http://` to `feeds.example.com`
 --> pins.toml:4:22
  |
4 | deprecation_feeds = ["http://feeds.example.com/d.json", "ftp://x/y"]
  |                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = note: `http://` is allowed only to loopback hosts (127.0.0.0/8, `localhost`, `[::1]`)
  = help: use `https://`

error: unsupported feed URL `ftp://x/y`
 --> pins.toml:4:57
  |
4 | deprecation_feeds = ["http://feeds.example.com/d.json", "ftp://x/y"]
  |                                                         ^^^^^^^^^^^
  = help: feeds are local paths or `https://` URLs"#
    );
}

#[test]
fn unknown_settings_key() {
    assert_eq!(
        error(&with_settings("timout = \"5s\"")),
        r#"error: unknown key `timout` in [settings]
 --> pins.toml:4:1
  |
4 | timout = "5s"
  | ^^^^^^
  = help: did you mean `timeout`?"#
    );
}

#[test]
fn empty_paths() {
    assert_eq!(
        error(&with_settings("lockfile = \"\"")),
        r#"error: `lockfile` must not be empty
 --> pins.toml:4:12
  |
4 | lockfile = ""
  |            ^^"#
    );
}

#[test]
fn a_postgres_store_with_a_password_in_the_file() {
    assert_eq!(
        error(&with_settings(
            "store = \"postgres://mp:hunter2@db.internal:5432/modelpin\""
        )),
        r#"error: invalid PostgreSQL `store`: the URL holds a password; it must not be in pins.toml (set PGPASSWORD or name a variable in `store_password_env`)
 --> pins.toml:4:9
  |
4 | store = "postgres://mp:hunter2@db.internal:5432/modelpin"
  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: use a libpq URL, like `postgres://modelpin@db.internal:5432/modelpin?sslmode=verify-full`; the password comes from PGPASSWORD or the variable `store_password_env` names"#
    );
}

#[test]
fn a_password_variable_for_a_store_on_disk() {
    assert_eq!(
        error(&with_settings("store_password_env = \"PGPASS\"")),
        r#"error: `store_password_env` applies only to a PostgreSQL `store`
 --> pins.toml:4:22
  |
4 | store_password_env = "PGPASS"
  |                      ^^^^^^^^
  = help: remove it, or set `store` to a `postgres://` URL"#
    );
}

#[test]
fn a_postgres_store_and_its_lease_are_accepted() {
    let config = super::Dir::new()
        .pins(&with_settings(
            "store = \"postgres://mp@db.internal:5432/modelpin?sslmode=require\"\nstore_password_env = \"MP_DB_PASSWORD\"\nlease = \"9s\"",
        ))
        .config();
    let crate::config::location::Location::Postgres(target) = &config.settings.store else {
        panic!("{:?}", config.settings.store);
    };
    assert_eq!(target.ssl, crate::config::location::SslMode::Require);
    assert_eq!(target.password_env.as_deref(), Some("MP_DB_PASSWORD"));
    assert_eq!(config.settings.lease, std::time::Duration::from_secs(9));
}

#[test]
fn breaker_bounds_and_external_url() {
    assert_eq!(
        error(&with_settings("breaker_failures = 0")),
        r"error: `breaker_failures` must be between 1 and 1000, found 0
 --> pins.toml:4:20
  |
4 | breaker_failures = 0
  |                    ^
  = help: failed attempts in a row to one provider before its calls stop; 5 is the default"
    );
    assert_eq!(
        error(&with_settings("breaker_cooldown = \"2d\"")),
        r#"error: `breaker_cooldown` must be between 1s and 24h, found 2d
 --> pins.toml:4:20
  |
4 | breaker_cooldown = "2d"
  |                    ^^^^
  = help: how long an open breaker waits before one call tries the provider again; 5m is the default"#
    );
    assert_eq!(
        error(&with_settings(
            "external_url = \"https://user:pw@modelpin.example.com\""
        )),
        r#"error: `external_url` must be an http(s) URL without user info, query or fragment
 --> pins.toml:4:16
  |
4 | external_url = "https://user:pw@modelpin.example.com"
  |                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: the address people open the status page at, like `https://modelpin.example.com`: alerts link to its pin pages"#
    );
}
