//! The validation pass: collects every problem in one file instead of stopping at the first.
//!
//! Each check reports into `Check` and returns `None` for a value it rejected, so later checks
//! can go on (and stay quiet about consequences of an error already reported).

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::diagnostic::{Diagnostic, backticked, suggest};
use super::duration::{DURATION_HELP, parse_duration};
use super::ident::{self, Named, Place};
use super::schedule::{self, Schedule};
use super::source::Source;
use super::url::{UrlProblem, check_http_url, is_env_name};

/// A value was rejected and the problem is already in `Check::errors`; used where `None` means
/// "absent, and that is fine".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reported;

pub(crate) struct Check<'s> {
    pub src: &'s Source,
    pub errors: Vec<Diagnostic>,
    /// Every id accepted so far, for the look-alike warnings.
    pub names: Vec<Named>,
}

impl<'s> Check<'s> {
    pub fn new(src: &'s Source) -> Check<'s> {
        Check {
            src,
            errors: Vec::new(),
            names: Vec::new(),
        }
    }

    /// An id the user names (`kind`: `pin id`, `probe id`, `provider`, `alert channel`), by the
    /// one rule `ident::problem` states; remembered for the look-alike warnings.
    pub fn identifier(
        &mut self,
        value: &Spanned<String>,
        what: &str,
        kind: &'static str,
    ) -> Option<String> {
        if let Some(problem) = ident::problem(value.get_ref(), what, ident::MAX_ID_CHARS) {
            self.error(value.span(), problem).help(
                "ids label reports, metrics, alerts and the lock: use letters, digits and punctuation that read as they are",
            );
            return None;
        }
        self.names.push(Named {
            kind,
            id: value.get_ref().clone(),
            place: Place::Span(value.span()),
        });
        Some(value.get_ref().clone())
    }

    /// Records an error at `span`; add notes through the returned reference.
    pub fn error(&mut self, span: Range<usize>, message: impl Into<String>) -> &mut Diagnostic {
        self.errors.push(self.src.error(span, message));
        self.errors.last_mut().expect("just pushed")
    }

    /// A duration; `what` names the key in the message.
    pub fn duration(&mut self, value: &Spanned<String>, what: &str) -> Option<Duration> {
        match parse_duration(value.get_ref()) {
            Ok(d) if d.is_zero() => {
                self.error(value.span(), format!("`{what}` must be longer than zero"));
                None
            }
            Ok(d) => Some(d),
            Err(_) => {
                self.error(
                    value.span(),
                    format!("invalid duration `{}` for `{what}`", value.get_ref()),
                )
                .help(DURATION_HELP);
                None
            }
        }
    }

    /// One of `valid`, with a suggestion for a near miss.
    pub fn choice<'v>(
        &mut self,
        value: &Spanned<String>,
        what: &str,
        valid: &[&'v str],
    ) -> Option<&'v str> {
        let v = value.get_ref();
        if let Some(found) = valid.iter().find(|c| **c == v) {
            return Some(found);
        }
        let d = self.error(value.span(), format!("unknown {what} `{v}`"));
        let plural = match what.strip_suffix('y') {
            Some(stem) => format!("{stem}ies"),
            None => format!("{what}s"),
        };
        d.note(format!(
            "valid {plural}: {}",
            backticked(valid.iter().copied())
        ));
        if let Some(near) = suggest(v, valid.iter().copied()) {
            d.help(format!("did you mean `{near}`?"));
        }
        None
    }

    /// The name of an environment variable (not its value, which is never in the file).
    pub fn env_name(&mut self, value: &Spanned<String>) -> Option<String> {
        if is_env_name(value.get_ref()) {
            return Some(value.get_ref().clone());
        }
        self.error(
            value.span(),
            format!("`{}` is not an environment variable name", value.get_ref()),
        )
        .help("name the variable that holds the value, like `OPENAI_API_KEY`");
        None
    }

    /// An `https://` URL, or `http://` to loopback.
    pub fn http_url(&mut self, value: &Spanned<String>, what: &str) -> Option<String> {
        let url = value.get_ref();
        let problem = match check_http_url(url) {
            Ok(()) => return Some(url.clone()),
            Err(problem) => problem,
        };
        let span = value.span();
        match problem {
            UrlProblem::Invalid(why) => {
                self.error(span, format!("`{what}` is not a valid URL: {why}"));
            }
            UrlProblem::Scheme => {
                self.error(span, format!("`{what}` must be an `https://` URL"));
            }
            UrlProblem::NoHost => {
                self.error(span, format!("`{what}` has no host"));
            }
            UrlProblem::UserInfo => {
                self.error(
                    span,
                    format!("`{what}` must not contain user info (`user:password@`)"),
                )
                .help(
                    "credentials come from the environment: name the variable with an `*_env` key",
                );
            }
            UrlProblem::PlainHttp(host) => {
                self.error(span, format!("refusing plain `http://` to `{host}`"))
                    .note("`http://` is allowed only to loopback hosts (127.0.0.0/8, `localhost`, `[::1]`)")
                    .help("use `https://`");
            }
        }
        None
    }

    /// A cron expression: 6 fields (sec min hour dom mon dow), or a 5-field crontab line with
    /// seconds 0; the caret points at the field that is wrong.
    pub fn schedule(&mut self, value: &Spanned<String>) -> Option<Schedule> {
        let text = value.get_ref();
        let fields = text.split_whitespace().count();
        if !(5..=6).contains(&fields) {
            self.error(
                value.span(),
                format!("`schedule` needs 6 cron fields (sec min hour dom mon dow) or 5 (a crontab line), found {fields}"),
            )
            .help("for example `0 0 * * * *` runs at the top of every hour (UTC)");
            return None;
        }
        match schedule::parse_located(text) {
            Ok(schedule) => Some(schedule),
            Err(e) => {
                let span = value.span();
                // The value's span includes its opening quote; a cron line has no escapes.
                let at = e.field.map_or(span.clone(), |f| {
                    span.start + 1 + f.start..span.start + 1 + f.end
                });
                self.error(at, e.message).help(
                    "fields: seconds 0-59, minutes 0-59, hours 0-23, day of month 1-31, month 1-12, day of week 0-6 (UTC)",
                );
                None
            }
        }
    }

    /// A finite number that is not negative.
    pub fn non_negative(&mut self, value: &Spanned<f64>, what: &str) -> Option<f64> {
        let v = *value.get_ref();
        if v.is_finite() && v >= 0.0 {
            return Some(v);
        }
        self.error(
            value.span(),
            format!("`{what}` must be zero or more, found {v:?}"),
        );
        None
    }

    /// A count that must be at least 1.
    pub fn at_least_one<T: Copy + PartialEq + Default + std::fmt::Display>(
        &mut self,
        value: &Spanned<T>,
        what: &str,
    ) -> Option<T> {
        let v = *value.get_ref();
        if v != T::default() {
            return Some(v);
        }
        self.error(value.span(), format!("`{what}` must be at least 1"));
        None
    }

    /// A string that is not blank.
    pub fn non_empty(&mut self, value: &Spanned<String>, what: &str) -> Option<String> {
        if value.get_ref().trim().is_empty() {
            self.error(value.span(), format!("`{what}` must not be empty"));
            return None;
        }
        Some(value.get_ref().clone())
    }

    /// A name that labels output everywhere (a pin id, a model ID): not empty, at most `max`
    /// characters, and no control characters, so every report, metric and alert can show it.
    pub fn label(&mut self, value: &Spanned<String>, what: &str, max: usize) -> Option<String> {
        let text = self.non_empty(value, what)?;
        let chars = text.chars().count();
        if chars > max {
            self.error(
                value.span(),
                format!("`{what}` is {chars} characters long; at most {max} are allowed"),
            );
            return None;
        }
        if let Some(c) = text.chars().find(|c| ident::hides_text(*c)) {
            self.error(
                value.span(),
                format!(
                    "`{what}` must not contain control or invisible characters (found U+{:04X})",
                    u32::from(c)
                ),
            );
            return None;
        }
        Some(text)
    }

    pub fn finish(self) -> Vec<Diagnostic> {
        self.errors
    }
}
