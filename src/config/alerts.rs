//! `[alerts.NAME]`: notification channels. pins.toml holds only the names of secret-holding
//! variables; their values are read here, once, and kept in the validated channel (a webhook
//! secret already decoded into its key), so delivery never reads the environment. Commands that
//! send (the daemon, `alerts test`, `check --notify`) require every named variable to be set, so
//! a channel fails closed at load — exit 2, naming the variable — instead of sending unsigned or
//! not at all; commands that only audit check them only when set, so `check` in CI needs no SMTP
//! password. Set values are checked for their shape (a webhook secret that can sign, a Slack URL
//! the client accepts), because a wrong secret fails silently at the receiver. Values are never
//! echoed.

use std::ops::Range;
use std::time::Duration;

use super::check::{Check, Reported};
use super::diagnostic::backticked;
use super::raw::{Named, RawAlert, Str};
use super::url::{UrlProblem, parse};
use super::{AlertChannel, AlertKind, Severity, webhook_key};
use crate::provider::Secret;

pub(crate) const DEFAULT_REPEAT: Duration = Duration::from_secs(4 * 3600);
pub(crate) const DEFAULT_MIN_SEVERITY: Severity = Severity::Warning;

const KINDS: [&str; 4] = ["email", "webhook", "slack", "alertmanager"];
const SEVERITIES: [&str; 3] = ["info", "warning", "error"];

/// Where channel secrets are read from, and whether they must be set.
pub(crate) struct Secrets<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub required: bool,
}

/// Valid channels in file order, and every channel name (valid or not) for pins to refer to.
pub(crate) fn alerts(
    check: &mut Check,
    raw: Named<RawAlert>,
    env: &Secrets<'_>,
) -> (Vec<AlertChannel>, Vec<String>) {
    let mut entries: Vec<_> = raw.into_iter().collect();
    entries.sort_by_key(|(name, _)| name.span().start);
    let mut channels = Vec::new();
    let mut names = Vec::new();
    for (name, table) in entries {
        names.push(name.get_ref().clone());
        if check
            .identifier(&name, "alert channel name", "alert channel")
            .is_none()
        {
            continue;
        }
        let span = table.span();
        channels.extend(channel(check, name.get_ref(), span, table.get_ref(), env));
    }
    (channels, names)
}

fn channel(
    check: &mut Check,
    name: &str,
    span: Range<usize>,
    raw: &RawAlert,
    env: &Secrets<'_>,
) -> Option<AlertChannel> {
    let kind = check.choice(&raw.kind, "alert kind", &KINDS)?;
    let table = Table {
        name,
        kind,
        span,
        raw,
    };
    table.reject_foreign_keys(check);
    let channel_kind = match kind {
        "email" => table.email(check, env),
        "webhook" => table.webhook(check, env),
        "slack" => table.slack(check, env),
        _ => table.alertmanager(check),
    };
    let repeat = match &raw.repeat {
        Some(r) => check.duration(r, "repeat"),
        None => Some(DEFAULT_REPEAT),
    };
    let min_severity = match &raw.min_severity {
        Some(s) => check.choice(s, "severity", &SEVERITIES).map(severity),
        None => Some(DEFAULT_MIN_SEVERITY),
    };
    Some(AlertChannel {
        name: name.to_string(),
        kind: channel_kind?,
        send_resolved: raw.send_resolved.unwrap_or(true),
        repeat: repeat?,
        min_severity: min_severity?,
    })
}

fn severity(s: &str) -> Severity {
    match s {
        "info" => Severity::Info,
        "warning" => Severity::Warning,
        _ => Severity::Error,
    }
}

struct Table<'a> {
    name: &'a str,
    kind: &'static str,
    span: Range<usize>,
    raw: &'a RawAlert,
}

impl Table<'_> {
    /// The kind-specific keys that are present, with their spans.
    fn present(&self) -> Vec<(&'static str, Range<usize>)> {
        let r = self.raw;
        let strings = [
            ("smtp", &r.smtp),
            ("from", &r.from),
            ("username_env", &r.username_env),
            ("password_env", &r.password_env),
            ("url", &r.url),
            ("secret_env", &r.secret_env),
            ("url_env", &r.url_env),
        ];
        let mut out: Vec<_> = strings
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v.span())))
            .collect();
        out.extend(r.to.as_ref().map(|to| ("to", to.span())));
        out
    }

    fn reject_foreign_keys(&self, check: &mut Check) {
        let allowed = keys_of(self.kind);
        for (key, span) in self.present() {
            if !allowed.contains(&key) {
                check
                    .error(
                        span,
                        format!("`{key}` does not apply to kind `{}`", self.kind),
                    )
                    .note(format!(
                        "kind `{}` takes {}",
                        self.kind,
                        backticked(allowed.iter().copied())
                    ));
            }
        }
    }

    fn required<'v>(
        &self,
        check: &mut Check,
        key: &str,
        value: Option<&'v Str>,
    ) -> Option<&'v Str> {
        if value.is_none() {
            let all = backticked(required_of(self.kind).iter().copied());
            check
                .error(
                    self.span.clone(),
                    format!("missing key `{key}` in [alerts.{}]", self.name),
                )
                .help(format!("kind `{}` needs {all}", self.kind));
        }
        value
    }

    fn optional_env(check: &mut Check, value: Option<&Str>) -> Result<Option<String>, Reported> {
        match value {
            Some(v) => check.env_name(v).map(Some).ok_or(Reported),
            None => Ok(None),
        }
    }

    /// The variable `var` (named at `span`) holding this channel's `what`: its value when set;
    /// an error when it must be set and is not.
    fn secret(
        &self,
        check: &mut Check,
        env: &Secrets<'_>,
        (var, span): (&str, Range<usize>),
        what: &str,
    ) -> Result<Option<String>, Reported> {
        match (env.env)(var) {
            Some(value) if !value.is_empty() => Ok(Some(value)),
            found if env.required => {
                let state = if found.is_some() {
                    "is empty"
                } else {
                    "is not set"
                };
                check
                    .error(span, format!("environment variable `{var}` {state}"))
                    .help(format!(
                        "set it to the {what} of [alerts.{}]; a channel with a missing secret sends nothing",
                        self.name
                    ));
                Err(Reported)
            }
            _ => Ok(None),
        }
    }

    fn email(&self, check: &mut Check, env: &Secrets<'_>) -> Option<AlertKind> {
        let smtp = self
            .required(check, "smtp", self.raw.smtp.as_ref())
            .and_then(|s| smtp_url(check, s));
        let from = self
            .required(check, "from", self.raw.from.as_ref())
            .and_then(|f| check.non_empty(f, "from"));
        let to = self.recipients(check);
        let username_env = Self::optional_env(check, self.raw.username_env.as_ref());
        let password_env = Self::optional_env(check, self.raw.password_env.as_ref());
        let username = self.named_secret(
            check,
            env,
            (&username_env, self.raw.username_env.as_ref()),
            "SMTP user name",
        );
        let password = self.named_secret(
            check,
            env,
            (&password_env, self.raw.password_env.as_ref()),
            "SMTP password",
        );
        Some(AlertKind::Email {
            smtp: smtp?,
            from: from?,
            to: to?,
            username_env: username_env.ok()?,
            password_env: password_env.ok()?,
            username: username.ok()?,
            password: password.ok()?,
        })
    }

    /// The value of an optional credential variable (`name` as checked, written at `raw`), when
    /// one is named and set.
    fn named_secret(
        &self,
        check: &mut Check,
        env: &Secrets<'_>,
        (name, raw): (&Result<Option<String>, Reported>, Option<&Str>),
        what: &str,
    ) -> Result<Option<Secret>, Reported> {
        match (name, raw) {
            (Ok(Some(var)), Some(raw)) => self
                .secret(check, env, (var, raw.span()), what)
                .map(|value| value.map(Secret::new)),
            _ => Ok(None),
        }
    }

    fn recipients(&self, check: &mut Check) -> Option<Vec<String>> {
        let Some(to) = &self.raw.to else {
            let all = backticked(required_of(self.kind).iter().copied());
            check
                .error(
                    self.span.clone(),
                    format!("missing key `to` in [alerts.{}]", self.name),
                )
                .help(format!("kind `email` needs {all}"));
            return None;
        };
        if to.get_ref().is_empty() {
            check.error(to.span(), "`to` needs at least one address");
            return None;
        }
        let addresses: Vec<_> = to
            .get_ref()
            .iter()
            .map(|a| check.non_empty(a, "to"))
            .collect();
        addresses.into_iter().collect()
    }

    fn webhook(&self, check: &mut Check, env: &Secrets<'_>) -> Option<AlertKind> {
        let url = self
            .required(check, "url", self.raw.url.as_ref())
            .and_then(|u| check.http_url(u, "url"));
        let secret_env = Self::optional_env(check, self.raw.secret_env.as_ref()).ok()?;
        let mut signing_key = None;
        if let (Some(name), Some(var)) = (&secret_env, &self.raw.secret_env) {
            let secret = self
                .secret(check, env, (name, var.span()), "webhook signing secret")
                .ok()?;
            match secret.map(|s| webhook_key::decode(&s)) {
                Some(Err(why)) => {
                    check
                        .error(
                            var.span(),
                            format!("environment variable `{name}` does not hold a webhook signing secret: {why}"),
                        )
                        .help("Standard Webhooks secrets are `whsec_` followed by base64");
                    return None;
                }
                Some(Ok(key)) => signing_key = Some(key),
                None => {}
            }
        }
        Some(AlertKind::Webhook {
            url: url?,
            secret_env,
            signing_key,
        })
    }

    fn slack(&self, check: &mut Check, env: &Secrets<'_>) -> Option<AlertKind> {
        let raw = self.required(check, "url_env", self.raw.url_env.as_ref())?;
        let url_env = check.env_name(raw)?;
        let url = self
            .secret(check, env, (&url_env, raw.span()), "Slack webhook URL")
            .ok()?;
        // The URL is a secret: say what is wrong with it, never what it is.
        if let Some(problem) = url
            .as_ref()
            .and_then(|u| super::url::check_http_url(u).err())
        {
            check
                .error(
                    raw.span(),
                    format!(
                        "environment variable `{url_env}` does not hold a usable Slack webhook URL"
                    ),
                )
                .note(super::url::describe(&problem));
            return None;
        }
        Some(AlertKind::Slack {
            url_env,
            url: url.map(Secret::new),
        })
    }

    fn alertmanager(&self, check: &mut Check) -> Option<AlertKind> {
        let url = self
            .required(check, "url", self.raw.url.as_ref())
            .and_then(|u| check.http_url(u, "url"))?;
        Some(AlertKind::Alertmanager {
            url: url.trim_end_matches('/').to_string(),
        })
    }
}

fn keys_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "email" => &["smtp", "from", "to", "username_env", "password_env"],
        "webhook" => &["url", "secret_env"],
        "slack" => &["url_env"],
        _ => &["url"],
    }
}

fn required_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "email" => &["smtp", "from", "to"],
        "webhook" | "alertmanager" => &["url"],
        _ => &["url_env"],
    }
}

/// `smtp://host[:port]` (STARTTLS, required by the sender) or `smtps://host[:port]`, read by the
/// same parser the sender uses; user info is refused (`username_env` / `password_env` hold it).
fn smtp_url(check: &mut Check, value: &Str) -> Option<String> {
    let url = value.get_ref();
    match parse(url, &["smtp", "smtps"]) {
        Ok(_) => Some(url.clone()),
        Err(UrlProblem::NoHost) => {
            check.error(value.span(), "`smtp` has no host");
            None
        }
        Err(UrlProblem::UserInfo) => {
            check
                .error(
                    value.span(),
                    "`smtp` must not contain user info (`user:password@`)",
                )
                .help("name the variables that hold them with `username_env` and `password_env`");
            None
        }
        Err(UrlProblem::Invalid(why)) => {
            check.error(value.span(), format!("`smtp` is not a valid URL: {why}"));
            None
        }
        Err(UrlProblem::Scheme | UrlProblem::PlainHttp(_)) => {
            check
                .error(
                    value.span(),
                    "`smtp` must be an `smtp://` or `smtps://` URL",
                )
                .help("`smtp://host:587` uses STARTTLS; `smtps://host:465` is TLS from the start");
            None
        }
    }
}
