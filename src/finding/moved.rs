//! What moved, in words a person reads: one line per behaviour test, from the test's effect.
//!
//! `behavior_drift`'s message and its evidence's `what_moved` say, for each test that rejected,
//! what changed (`arith: pass rate 90 % → 10 %`), then the few tests that did not reject but
//! moved the most (`not significant: …`). Answers and tokens are provider text: each is escaped
//! for a terminal (`text::terminal`), its quote mark escaped too, and cut to a bound with a hash
//! of the whole (`text::bounded`), so a line has no raw control or bidirectional character, no
//! newline, and a bounded length whatever the provider sent.

use crate::stats::drift::{DriftTest, DriftVerdict};
use crate::stats::{AnswerShare, Effect, TestKind};
use crate::text::{bounded, terminal};

/// The evidence key of `behavior_drift` holding `lines`: what moved, a line each.
pub const WHAT_MOVED: &str = "what_moved";

/// Longest answer or token quoted, in characters (after escaping).
pub const QUOTED_CHARS: usize = 32;
/// Longest prompt of a first-token input shown, in characters (after escaping).
pub const PROMPT_CHARS: usize = 40;
/// Tests that did not reject listed, at most.
pub const NOT_SIGNIFICANT: usize = 3;
/// A move smaller than this (half a percentage point, as shares go) is no move worth a line.
const NOTICEABLE: f64 = 0.005;
/// What a line that did not reject begins with.
pub const NOT_SIGNIFICANT_PREFIX: &str = "not significant: ";

/// One line per rejected test (in test order), then up to `NOT_SIGNIFICANT` tests that did not
/// reject, those that moved most first, each prefixed `not significant: `.
#[must_use]
pub fn lines(verdict: &DriftVerdict) -> Vec<String> {
    let mut out: Vec<String> = verdict
        .tests
        .iter()
        .filter(|t| t.rejected)
        .map(|t| line(t).unwrap_or_else(|| fallback(t)))
        .collect();
    let mut quiet: Vec<(f64, String)> = verdict
        .tests
        .iter()
        .filter(|t| !t.rejected)
        .filter_map(|t| {
            let size = magnitude(&t.result.effect);
            (size >= NOTICEABLE).then_some((size, line(t)?))
        })
        .collect();
    // Largest move first; equal moves in test order (the sort is stable).
    quiet.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.extend(
        quiet
            .into_iter()
            .take(NOT_SIGNIFICANT)
            .map(|(_, l)| format!("{NOT_SIGNIFICANT_PREFIX}{l}")),
    );
    out
}

/// What one test saw move; `None` when its effect holds nothing to say (an empty side).
#[must_use]
pub fn line(test: &DriftTest) -> Option<String> {
    let probe = || test.probes.first().map_or("", String::as_str);
    match &test.result.effect {
        Effect::PassRate { baseline, current } => Some(format!(
            "{}: pass rate {} → {}",
            probe(),
            percent(baseline.rate?),
            percent(current.rate?)
        )),
        Effect::Answers { shifted, .. } => {
            let moves: Vec<String> = shifted.iter().filter_map(answer_move).collect();
            (!moves.is_empty())
                .then(|| format!("{}: answers changed: {}", probe(), moves.join(", ")))
        }
        Effect::Length {
            baseline_median,
            current_median,
            ..
        } => Some(format!(
            "{}: median completion length {} → {} tokens",
            probe(),
            number((*baseline_median)?),
            number((*current_median)?)
        )),
        Effect::Text { strata, .. } => {
            let (stratum, within, across) = strata
                .iter()
                .flat_map(|s| {
                    s.similarity.iter().filter_map(move |sim| {
                        Some((s.id.as_str(), sim.within_baseline?, sim.across?))
                    })
                })
                .max_by(|a, b| (a.1 - a.2).total_cmp(&(b.1 - b.2)))?;
            Some(format!(
                "{stratum}: answer texts {} alike to the baseline's, which are {} alike among themselves",
                percent(across),
                percent(within)
            ))
        }
        Effect::FirstTokens { moved, .. } => {
            let input = moved.first()?;
            Some(format!(
                "{}: first token {} {} → {}",
                prompt(&input.input),
                single_quoted(&input.moved_token),
                percent(input.moved_baseline_share),
                percent(input.moved_current_share)
            ))
        }
        Effect::Logprobs { moved, .. } => {
            let shift = moved.first()?;
            Some(format!(
                "{}: reported logprob of {} {} → {} (probability {} → {})",
                prompt(&shift.prompt),
                single_quoted(&shift.token),
                number(shift.baseline_mean),
                number(shift.current_mean),
                percent(shift.baseline_mean.exp()),
                percent(shift.current_mean.exp())
            ))
        }
        Effect::Sampling(summary) => Some(format!(
            "sampling: the most probable token drawn in {} → {} of calls (the reported probabilities say {} → {}; like temperature {:.2} → {:.2})",
            percent(summary.baseline.top_sampled),
            percent(summary.current.top_sampled),
            percent(summary.baseline.top_expected),
            percent(summary.current.top_expected),
            summary.baseline.implied_temperature,
            summary.current.implied_temperature
        )),
    }
}

/// How far a test's effect moved, on a scale of shares in [0, 1]: pass-rate points, the total
/// variation distance of answers or first tokens, how far from even the chance that a current
/// length is longer, the similarity the answers lost, the reported probability's move, the
/// sampled share's move. It only orders the tests that did not reject.
#[must_use]
pub fn magnitude(effect: &Effect) -> f64 {
    let size = match effect {
        Effect::PassRate { baseline, current } => match (baseline.rate, current.rate) {
            (Some(b), Some(c)) => (b - c).abs(),
            _ => 0.0,
        },
        Effect::Answers { distance, .. } => *distance,
        Effect::Length { current_longer, .. } => 2.0 * (current_longer - 0.5).abs(),
        Effect::Text { strata, .. } => strata
            .iter()
            .flat_map(|s| &s.similarity)
            .filter_map(|sim| Some(sim.within_baseline? - sim.across?))
            .fold(0.0, f64::max),
        Effect::FirstTokens { moved, .. } => moved.first().map_or(0.0, |m| m.distance),
        Effect::Logprobs { moved, .. } => moved.first().map_or(0.0, |m| {
            (m.baseline_mean.exp() - m.current_mean.exp()).abs()
        }),
        Effect::Sampling(s) => (s.baseline.top_sampled - s.current.top_sampled)
            .abs()
            .max((s.baseline.outside - s.current.outside).abs()),
    };
    if size.is_finite() { size.max(0.0) } else { 0.0 }
}

/// What a rejected test with nothing to show says: the test and the probes it read (a tier
/// test reads inputs, which are counted, never listed by their ids).
pub(crate) fn fallback(test: &DriftTest) -> String {
    let what = match test.result.test {
        TestKind::PassRate => "pass rate dropped",
        TestKind::Answers => "answers changed",
        TestKind::Length => "completion lengths shifted",
        TestKind::Mmd => "answer texts differ",
        TestKind::FirstTokens => "first tokens shifted",
        TestKind::Logprobs => "reported logprobs moved",
        TestKind::Sampling => "sampling changed",
    };
    format!("{}: {what}", probes_named(test))
}

/// The probes a test read, as a message names them: `arith`, or `3 border inputs` for the tier.
#[must_use]
pub fn probes_named(test: &DriftTest) -> String {
    if TestKind::TIER.contains(&test.result.test) {
        crate::words::count(test.probes.len() as u64, "border input")
    } else {
        test.probes.join(", ")
    }
}

/// `"Sydney" 60 % → 10 %`; `None` when a side had no answers.
fn answer_move(share: &AnswerShare) -> Option<String> {
    Some(format!(
        "{} {} → {}",
        quoted(&share.answer, '"'),
        percent(share.baseline_share?),
        percent(share.current_share?)
    ))
}

/// A share as a whole percentage: `90 %`.
fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// A number with at most two decimals, as the evidence rounds it (`12`, `-0.89`).
fn number(x: f64) -> String {
    let rounded = (x * 100.0).round() / 100.0;
    if rounded == 0.0 {
        "0".to_owned()
    } else {
        format!("{rounded}")
    }
}

/// Provider text between `mark`s: `\` and `mark` escaped first (`\\`, `\"`), so the quote
/// cannot be closed or an escape faked from inside, then escaped for a terminal (whose own
/// `\u{…}` escapes are then the only unpaired backslashes), cut to `QUOTED_CHARS` with a hash
/// of the whole.
fn quoted(text: &str, mark: char) -> String {
    let paired: String = text
        .chars()
        .flat_map(|c| {
            let escape = c == mark || c == '\\';
            escape.then_some('\\').into_iter().chain([c])
        })
        .collect();
    let escaped = terminal(&paired);
    format!("{mark}{}{mark}", bounded(&escaped, QUOTED_CHARS))
}

fn single_quoted(token: &str) -> String {
    quoted(token, '\'')
}

/// A first-token input's prompt, escaped and cut to `PROMPT_CHARS` with `…`: a reader's cue,
/// not an identifier (never the input's hash).
fn prompt(text: &str) -> String {
    let escaped = terminal(text);
    let escaped = escaped.trim();
    if escaped.chars().count() <= PROMPT_CHARS {
        return escaped.to_owned();
    }
    let cut: String = escaped.chars().take(PROMPT_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
#[path = "moved_tests.rs"]
mod tests;
