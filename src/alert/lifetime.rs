//! When a daemon audit's behaviour verdict wakes someone.
//!
//! `alpha` is a false-alarm rate per audit: a daemon auditing hourly at 0.001 would raise about
//! 8.8 false `behavior_drift` alarms per pin a year, in runs when the lock happened to be
//! unusual. So in the daemon an audit's rejection at `alpha` alarms only when it passes its own
//! look, a level set by when it ran after the lock; and the audits since the pin's lock feed
//! one detector (`stats::sequential`: conformal p-values, calibrated to e-values, in a
//! Shiryaev–Roberts statistic) whose mean time to a false alarm is at least its threshold `A`
//! audits, given the lock, however unusual. `false_alarms_per_year` is split between the two
//! (`stats::sequential::LOOK_SHARE`). `behavior_drift` is raised when
//!
//! - one of the first `EARLY_AUDITS` (72) audits weighed after a lock rejects on its own: the
//!   first at `alpha`, the rest at `alpha / 8` (`stats::sequential::own_look`). The detector
//!   cannot see a change already there when the daemon began (every later audit would be
//!   equally strange) and sees one soon after the lock slowly (changed audits join its ranks);
//!   about 9.9 × `alpha` false alarms per lock, on average over locks;
//! - a later audit's smallest adjusted p-value is at or under half the yearly rate spread over
//!   the year's behaviour audits (`later_level`: 1.4·10⁻⁵ at the defaults): a large change is
//!   then seen by the first behaviour audit after it, where the detector's bounded e-values
//!   would take several. The daemon asks the audit's tests to resolve p-values that small
//!   (`next_look`); or
//! - the statistic reaches `A = audits a year / (false_alarms_per_year / 2)`.
//!
//! The alarm then stands, on every later audit's record, until the pin is locked again (another
//! lock entry, another `basis`): the evidence starts afresh. An audit that rejected on its own
//! without an alarm says so (`held_back`) in its record's `lifetime`, which the status page plots.
//! The state lives with the pin's alert state, so it is stored in the audit's transaction and
//! survives restarts, failover and `store copy` with it.

use crate::finding::evidence::DriftAccumulated;
use crate::finding::{Code, Evidence, Finding, PinStatus};
use crate::report::{Alarm, AlarmCause, BehaviourTest, LifetimeEvidence};
use crate::stats::sequential::{Detector, Look, later_level, threshold, tie_break};
use crate::store::AuditRecord;
use crate::store::alerts::{Accumulated, LastAudit};

/// What the accumulated evidence of one pin is weighed with.
#[derive(Debug, Clone, PartialEq)]
pub struct Lifetime {
    /// The level of the first audit's own look.
    pub alpha: f64,
    pub false_alarms_per_year: f64,
    /// Behaviour audits a year at the pin's schedule and budget (`daemon::budget::Rhythm`).
    pub audits_per_year: f64,
    /// Digest of the pin's lock entry.
    pub basis: String,
    /// `None`: the audit is a behaviour audit, and the budget counts the next from its start.
    /// Some: it checked identity only, and the budget buys the next behaviour audit then.
    pub next_behaviour: Option<chrono::DateTime<chrono::Utc>>,
}

impl Lifetime {
    fn threshold(&self) -> f64 {
        threshold(self.audits_per_year, self.false_alarms_per_year)
    }

    /// The level of a late audit's own look.
    #[must_use]
    pub fn later_level(&self) -> f64 {
        later_level(self.audits_per_year, self.false_alarms_per_year, self.alpha)
    }

    /// Mean years to a false alarm once the early audits are past: the detector's share and the
    /// later looks' together.
    fn years_to_false_alarm(&self) -> f64 {
        1.0 / self.false_alarms_per_year
    }
}

/// The own look of the pin's next weighed audit against its evidence `before`: how small an
/// adjusted p-value its behaviour tests must resolve. `None` when an alarm stands already
/// (nothing more to decide until the pin is locked again).
#[must_use]
pub fn next_look(before: Option<&Accumulated>, lifetime: &Lifetime) -> Option<f64> {
    let acc = before.filter(|a| a.basis == lifetime.basis);
    if acc.is_some_and(|a| a.alarm.is_some()) {
        return None;
    }
    let look = next_stage(acc);
    Some(look.level(lifetime.alpha, lifetime.later_level()))
}

/// Which look the next audit weighed into `acc` (the evidence against the current lock) gets:
/// its place is one past the audits the detector counts so far.
fn next_stage(acc: Option<&Accumulated>) -> Look {
    let weighed = acc
        .filter(|a| !a.family.is_empty())
        .map_or(0, detector_audits);
    Look::at(weighed + 1)
}

/// The record as the daemon stores it, and the pin's evidence after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Weighed {
    pub record: AuditRecord,
    pub accumulated: Option<Accumulated>,
}

/// Weighs one probe audit's behaviour tests into the pin's evidence `before` and decides what the
/// record says: its own `behavior_drift` held back, kept (with the accumulated evidence), or
/// raised by the evidence alone; the pin's status follows.
///
/// Only audits that ran the same tests as the first one weighed step the detector (a probe that
/// failed this time changes what the smallest p-value is the smallest of); three such audits in
/// a row mean the plan changed, and the ranks start again on the new tests. An audit weighed
/// already (a write that landed but was reported failed, then retried) gets its stored result,
/// never a second step.
#[must_use]
pub fn weigh(before: Option<&Accumulated>, record: &AuditRecord, lifetime: &Lifetime) -> Weighed {
    let same_basis = before.filter(|a| a.basis == lifetime.basis);
    let mut acc = same_basis.cloned().unwrap_or_else(|| Accumulated {
        basis: lifetime.basis.clone(),
        ..Accumulated::default()
    });
    if let Some(last) = acc.last.as_ref().filter(|l| l.audit_id == record.audit_id) {
        let summary = last.evidence.clone();
        return decide(record, acc, summary);
    }
    let smallest = smallest_p(&record.pin.behaviour);
    let tests = family(&record.pin.behaviour);
    let look = next_stage(Some(&acc));
    let mut detector = Detector {
        seen: std::mem::take(&mut acc.seen),
        statistic: acc.statistic,
    };
    detector.bound();
    let step = smallest.and_then(|p| step(&mut acc, &mut detector, p, tests, &record.audit_id));
    if lifetime.next_behaviour.is_none() {
        acc.behaviour_at = Some(record.started_at);
    }
    if acc.family.is_empty() && acc.alarm.is_none() {
        // Nothing weighed against this lock yet, nor now: the record stands as judged, and
        // only a behaviour audit is worth keeping (the budget counts from it).
        let kept = acc.behaviour_at.is_some().then(|| Accumulated {
            basis: acc.basis.clone(),
            behaviour_at: acc.behaviour_at,
            ..Accumulated::default()
        });
        return Weighed {
            record: record.clone(),
            accumulated: kept,
        };
    }
    let audits = detector.audits();
    acc.seen = detector.seen;
    acc.statistic = detector.statistic;
    acc.since = if acc.statistic >= 1.0 {
        acc.since.or(Some(record.started_at))
    } else {
        None
    };
    let threshold = lifetime.threshold();
    let own = record
        .pin
        .findings
        .iter()
        .any(|f| f.code == Code::BehaviorDrift);
    let level = step.map(|_| look.level(lifetime.alpha, lifetime.later_level()));
    if acc.alarm.is_none() && step.is_some() {
        let looked = own && smallest.zip(level).is_some_and(|(p, level)| p <= level);
        let cause = if looked {
            Some(match look {
                Look::First => AlarmCause::FirstAudit,
                Look::Early => AlarmCause::EarlyAudit,
                Look::Later => AlarmCause::LaterAudit,
            })
        } else if acc.statistic >= threshold {
            Some(AlarmCause::Accumulated)
        } else {
            None
        };
        acc.alarm = cause.map(|cause| Alarm {
            at: record.finished_at,
            cause,
            audit_id: record.audit_id.clone(),
            audits,
            look: level.filter(|_| cause != AlarmCause::Accumulated),
        });
    }
    let summary = LifetimeEvidence {
        audits,
        smallest_p: step.and(smallest),
        look: level,
        conformal_p: step.map(|s| s.conformal_p),
        e_value: step.map(|s| s.e_value),
        statistic: acc.statistic,
        threshold,
        since: acc.since,
        years_to_false_alarm: lifetime.years_to_false_alarm(),
        held_back: own && acc.alarm.is_none(),
        alarm: acc.alarm.clone(),
        next_behaviour: lifetime.next_behaviour,
    };
    acc.last = Some(LastAudit {
        audit_id: record.audit_id.clone(),
        evidence: summary.clone(),
    });
    decide(record, acc, summary)
}

/// Steps `detector` with the audit `audit_id`, smallest p-value `p`, when it ran the tests
/// `tests` the detector counts, or the third in a row of other tests (the plan changed: the
/// detector starts again on them); `None` when it is not weighed.
fn step(
    acc: &mut Accumulated,
    detector: &mut Detector,
    p: f64,
    tests: String,
    audit_id: &str,
) -> Option<crate::stats::sequential::Step> {
    if acc.family.is_empty() || tests == acc.family {
        acc.family = tests;
        acc.unlike = 0;
        return Some(detector.step(p, tie_break(audit_id)));
    }
    acc.unlike += 1;
    if acc.unlike < PLAN_CHANGED {
        return None;
    }
    *detector = Detector::default();
    acc.since = None;
    acc.family = tests;
    acc.unlike = 0;
    Some(detector.step(p, tie_break(audit_id)))
}

/// Audits weighed into `acc` so far.
fn detector_audits(acc: &Accumulated) -> u64 {
    acc.seen.values().fold(0, |a, n| a.saturating_add(*n))
}

/// Audits in a row whose tests differ from the detector's before it starts again on theirs.
const PLAN_CHANGED: u32 = 3;

/// The record as the evidence `acc` and this audit's `summary` say: its own `behavior_drift`
/// removed (no alarm) or carrying the accumulated evidence, one made when the alarm stands and
/// the audit did not reject; the status follows.
fn decide(record: &AuditRecord, acc: Accumulated, summary: LifetimeEvidence) -> Weighed {
    let mut record = record.clone();
    let pin = &mut record.pin;
    match &acc.alarm {
        None => pin.findings.retain(|f| f.code != Code::BehaviorDrift),
        Some(alarm) => {
            let evidence = accumulated(alarm, &summary);
            let json = serde_json::to_value(&evidence).unwrap_or_default();
            if let Some(finding) = pin
                .findings
                .iter_mut()
                .find(|f| f.code == Code::BehaviorDrift)
            {
                finding.message.push_str(&evidence.clause());
                if let Some(object) = finding.evidence.as_object_mut() {
                    object.insert("accumulated".to_owned(), json);
                }
            } else {
                let at = pin
                    .findings
                    .iter()
                    .position(|f| f.code.is_unmeasured())
                    .unwrap_or(pin.findings.len());
                let finding = Finding::new(&Evidence::DriftAccumulated(evidence), &pin.id);
                pin.findings.insert(at, finding);
            }
        }
    }
    pin.status = PinStatus::of(&pin.findings);
    pin.lifetime = Some(summary);
    Weighed {
        record,
        accumulated: Some(acc),
    }
}

/// Which tests of the family ran, as `test:probes` lines in order: what the smallest p-value is
/// the smallest of.
fn family(tests: &[BehaviourTest]) -> String {
    let mut lines: Vec<String> = tests
        .iter()
        .filter(|t| t.adjusted_p.is_some())
        .map(|t| format!("{}:{}", t.test.as_str(), t.probes.join(",")))
        .collect();
    lines.sort();
    lines.join("\n")
}

/// The smallest Holm-adjusted p-value of the tests in the family; `None` without one.
fn smallest_p(tests: &[BehaviourTest]) -> Option<f64> {
    tests
        .iter()
        .filter_map(|t| t.adjusted_p)
        .filter(|p| !p.is_nan())
        .min_by(f64::total_cmp)
}

fn accumulated(alarm: &Alarm, summary: &LifetimeEvidence) -> DriftAccumulated {
    DriftAccumulated {
        cause: match alarm.cause {
            AlarmCause::FirstAudit => "first_audit",
            AlarmCause::EarlyAudit => "early_audit",
            AlarmCause::LaterAudit => "later_audit",
            AlarmCause::Accumulated => "accumulated",
            AlarmCause::Other => "other",
        },
        audits_at_alarm: alarm.audits,
        audits: summary.audits,
        alarm_at: alarm.at,
        statistic: summary.statistic,
        threshold: summary.threshold,
        since: summary.since,
        years_to_false_alarm: summary.years_to_false_alarm,
        look: alarm.look,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Severity;
    use crate::stats::TestKind;
    use chrono::{DateTime, Utc};

    fn lifetime(basis: &str) -> Lifetime {
        Lifetime {
            alpha: 0.001,
            false_alarms_per_year: 0.01,
            audits_per_year: 8_760.0,
            basis: basis.into(),
            next_behaviour: None,
        }
    }

    /// A tick between behaviour audits: identity only, the next behaviour audit later.
    fn identity_tick(basis: &str) -> Lifetime {
        Lifetime {
            next_behaviour: Some(DateTime::<Utc>::MAX_UTC),
            ..lifetime(basis)
        }
    }

    /// An audit whose one behaviour test has adjusted p `p`, rejecting (with its own
    /// `behavior_drift`) when `p ≤ 0.001`.
    fn audit(n: i64, p: Option<f64>) -> AuditRecord {
        let mut r = crate::store::tests::record("bot", 1_000_000 + n * 3600, &format!("a{n}"));
        if let Some(p) = p {
            r.pin.behaviour.push(BehaviourTest {
                test: TestKind::Answers,
                probes: vec!["capital".into()],
                p_value: p,
                adjusted_p: Some(p),
                rejected: p <= 0.001,
            });
            if p <= 0.001 {
                r.pin.findings.push(Finding {
                    code: Code::BehaviorDrift,
                    severity: Some(Severity::Error),
                    message: "the answers changed".into(),
                    evidence: serde_json::json!({"tests": []}),
                    action: None,
                });
                r.pin.status = PinStatus::Drift;
            }
        }
        r
    }

    fn run(
        mut state: Option<Accumulated>,
        from: i64,
        ps: &[Option<f64>],
        life: &Lifetime,
    ) -> (Option<Accumulated>, Vec<AuditRecord>) {
        let mut records = Vec::new();
        for (i, p) in ps.iter().enumerate() {
            let w = weigh(
                state.as_ref(),
                &audit(from + i64::try_from(i).unwrap(), *p),
                life,
            );
            state = w.accumulated;
            records.push(w.record);
        }
        (state, records)
    }

    fn quiet(n: usize) -> Vec<Option<f64>> {
        // Ordinary audits: adjusted p spread over (0.02, 1].
        (0..n)
            .map(|i| Some(0.02 + 0.98 * ((i * 37 % 101) as f64 / 100.0)))
            .collect()
    }

    #[test]
    fn a_later_audit_rejecting_on_its_own_is_held_back_not_an_alarm() {
        let life = lifetime("sha256:a");
        let (state, _) = run(None, 0, &quiet(30), &life);
        let w = weigh(state.as_ref(), &audit(30, Some(0.0005)), &life);
        assert!(w.record.pin.findings.is_empty());
        assert_eq!(w.record.pin.status, PinStatus::Ok);
        let summary = w.record.pin.lifetime.unwrap();
        assert!(summary.held_back);
        assert_eq!(summary.audits, 31);
        assert!(summary.alarm.is_none());
        assert!(summary.statistic < summary.threshold);
        assert!((summary.threshold - 1_752_000.0).abs() < 1e-6);
        assert_eq!(summary.look, Some(0.000_125));
        assert!((summary.years_to_false_alarm - 100.0).abs() < 1e-9);
    }

    #[test]
    fn the_first_audit_after_a_lock_alarms_on_its_own_and_the_alarm_stands_until_a_new_lock() {
        let life = lifetime("sha256:a");
        let (state, records) = run(None, 0, &[Some(0.0002), Some(0.6), None], &life);
        for r in &records {
            assert_eq!(r.pin.status, PinStatus::Drift, "{:?}", r.pin.findings);
            let f = &r.pin.findings[0];
            assert_eq!(f.code, Code::BehaviorDrift);
            assert_eq!(f.evidence["accumulated"]["cause"], "first_audit");
        }
        for r in &records {
            let message = &r.pin.findings[0].message;
            assert!(
                message.contains("first audit after the lock")
                    || message.contains("alarmed since audit 1 after the lock"),
                "{message}"
            );
        }
        let alarm = state.as_ref().unwrap().alarm.clone().unwrap();
        assert_eq!(
            (alarm.cause, alarm.audit_id.as_str()),
            (AlarmCause::FirstAudit, "a0")
        );
        // Locked again: afresh, and the next audit's own look decides.
        let (state, records) = run(state, 3, &[Some(0.5)], &lifetime("sha256:b"));
        assert_eq!(records[0].pin.status, PinStatus::Ok);
        let state = state.unwrap();
        assert_eq!((state.basis.as_str(), state.alarm), ("sha256:b", None));
        assert_eq!(state.seen.values().sum::<u64>(), 1);
    }

    #[test]
    fn every_audit_looks_on_its_own_at_a_level_set_by_how_many_came_before() {
        let life = lifetime("sha256:a");
        let later = life.later_level();
        // Half of 0.01 a year spread over 8,760 audits.
        assert!((later - 0.005 / 8_760.0).abs() < 1e-15);
        for (quiet_before, p, cause) in [
            (0, 0.0009, Some(AlarmCause::FirstAudit)),
            (30, 0.0001, Some(AlarmCause::EarlyAudit)),
            (30, 0.0005, None),
            (71, 0.0001, Some(AlarmCause::EarlyAudit)),
            (72, 0.0001, None),
            (72, 5e-7, Some(AlarmCause::LaterAudit)),
            (300, 5e-7, Some(AlarmCause::LaterAudit)),
            (300, 6e-7, None),
        ] {
            let (state, _) = run(None, 0, &quiet(quiet_before), &life);
            let want = crate::stats::sequential::own_look(quiet_before as u64 + 1, 0.001, later);
            assert_eq!(next_look(state.as_ref(), &life), Some(want));
            let w = weigh(state.as_ref(), &audit(1000, Some(p)), &life);
            let summary = w.record.pin.lifetime.unwrap();
            assert_eq!(summary.look, Some(want));
            assert_eq!(
                summary.alarm.as_ref().map(|a| a.cause),
                cause,
                "audit {} at p = {p}",
                quiet_before + 1
            );
            assert_eq!(summary.held_back, cause.is_none());
            if cause == Some(AlarmCause::LaterAudit) {
                let f = &w.record.pin.findings[0];
                assert_eq!(f.evidence["accumulated"]["cause"], "later_audit");
                assert_eq!(f.evidence["accumulated"]["look"], want);
                assert!(f.message.contains("alarmed since audit"), "{}", f.message);
                // Nothing left to decide until a new lock: no deep look asked for.
                assert_eq!(next_look(w.accumulated.as_ref(), &life), None);
                let relocked = lifetime("sha256:b");
                assert_eq!(next_look(w.accumulated.as_ref(), &relocked), Some(0.001));
            }
        }
    }

    #[test]
    fn a_change_after_quiet_audits_builds_to_an_alarm_the_audit_alone_would_not_raise() {
        let life = lifetime("sha256:a");
        let (state, _) = run(None, 0, &quiet(300), &life);
        // Changed: every audit stranger than any before, yet none below alpha on its own.
        let changed = vec![Some(0.004); 40];
        let (state, records) = run(state, 300, &changed, &life);
        let raised = records
            .iter()
            .position(|r| r.pin.status == PinStatus::Drift)
            .expect("an alarm within 40 audits");
        assert!(raised >= 3, "not on the first changed audit: {raised}");
        let f = &records[raised].pin.findings[0];
        assert_eq!(f.evidence["accumulated"]["cause"], "accumulated");
        assert!(f.message.contains("changed gradually"), "{}", f.message);
        assert!(f.evidence["accumulated"]["statistic"].as_f64().unwrap() >= 1_752_000.0);
        let since = records[raised]
            .pin
            .lifetime
            .as_ref()
            .unwrap()
            .since
            .unwrap();
        assert!(since <= records[raised].started_at);
        assert!(
            records[raised..]
                .iter()
                .all(|r| r.pin.status == PinStatus::Drift)
        );
        assert_eq!(state.unwrap().alarm.unwrap().cause, AlarmCause::Accumulated);
    }

    #[test]
    fn an_audit_without_behaviour_tests_leaves_the_evidence_as_it_was() {
        let life = lifetime("sha256:a");
        let tick = identity_tick("sha256:a");
        let w = weigh(None, &audit(0, None), &tick);
        assert_eq!((w.accumulated, w.record.pin.lifetime), (None, None));
        let (state, _) = run(None, 0, &quiet(5), &life);
        let w = weigh(state.as_ref(), &audit(5, None), &tick);
        let after = w.accumulated.unwrap();
        let before = state.unwrap();
        assert_eq!(
            (after.seen, after.statistic),
            (before.seen, before.statistic)
        );
        assert_eq!(w.record.pin.lifetime.unwrap().conformal_p, None);
    }

    #[test]
    fn weighing_the_same_audit_again_gives_the_same_answer_and_never_a_second_step() {
        let life = lifetime("sha256:a");
        let (state, _) = run(None, 0, &quiet(20), &life);
        let a = weigh(state.as_ref(), &audit(20, Some(0.01)), &life);
        let b = weigh(state.as_ref(), &audit(20, Some(0.01)), &life);
        assert_eq!(a, b);
        // The write landed but was reported failed: the retry reads the state it wrote.
        let again = weigh(a.accumulated.as_ref(), &audit(20, Some(0.01)), &life);
        assert_eq!(again, a);
        assert_eq!(again.accumulated.unwrap().seen.values().sum::<u64>(), 21);
    }

    #[test]
    fn only_audits_running_the_same_tests_step_and_a_lasting_change_of_plan_starts_afresh() {
        let life = lifetime("sha256:a");
        let (state, _) = run(None, 0, &quiet(10), &life);
        let other = |n: i64| {
            let mut r = audit(n, Some(0.3));
            r.pin.behaviour[0].test = TestKind::Length;
            r
        };
        let w = weigh(state.as_ref(), &other(10), &life);
        let acc = w.accumulated.clone().unwrap();
        assert_eq!(acc.seen.values().sum::<u64>(), 10, "not weighed");
        assert_eq!(acc.unlike, 1);
        let summary = w.record.pin.lifetime.unwrap();
        assert_eq!((summary.audits, summary.conformal_p), (10, None));
        // Back to the usual tests: weighed again, and the count of others reset.
        let w = weigh(Some(&acc), &audit(11, Some(0.3)), &life);
        let acc = w.accumulated.unwrap();
        assert_eq!((acc.seen.values().sum::<u64>(), acc.unlike), (11, 0));
        // Three in a row: the plan changed, and the ranks start on the new tests.
        let mut state = Some(acc);
        for n in 12..15 {
            state = weigh(state.as_ref(), &other(n), &life).accumulated;
        }
        let acc = state.unwrap();
        assert_eq!(acc.seen.values().sum::<u64>(), 1);
        assert_eq!(acc.family, "length:capital");
        assert!(
            acc.alarm.is_none(),
            "no first look again: the lock is the same"
        );
    }

    #[test]
    fn a_new_lock_with_nothing_to_weigh_drops_the_old_lock_s_evidence_and_alarm() {
        let (state, _) = run(None, 0, &[Some(0.0002)], &lifetime("sha256:a"));
        assert!(state.as_ref().unwrap().alarm.is_some());
        let w = weigh(state.as_ref(), &audit(1, None), &identity_tick("sha256:b"));
        assert_eq!(w.accumulated, None);
        assert_eq!(w.record.pin.status, PinStatus::Ok);
        // A behaviour audit that measured nothing keeps only when it ran, for the budget.
        let w = weigh(state.as_ref(), &audit(1, None), &lifetime("sha256:b"));
        let kept = w.accumulated.unwrap();
        assert_eq!(
            (kept.basis.as_str(), kept.alarm, kept.statistic),
            ("sha256:b", None, 0.0)
        );
        assert_eq!(kept.behaviour_at, Some(audit(1, None).started_at));
        assert_eq!(w.record.pin.status, PinStatus::Ok);
    }

    #[test]
    fn the_budget_counts_from_the_last_behaviour_audit_against_the_lock() {
        // (lock entry, behaviour audit?, p, when the last behaviour audit started after it)
        type Step = (&'static str, bool, Option<f64>, Option<DateTime<Utc>>);
        let at = |n: i64| Some(audit(n, None).started_at);
        let steps: [Step; 7] = [
            ("sha256:a", false, None, None),
            ("sha256:a", true, Some(0.4), at(1)),
            ("sha256:a", false, None, at(1)),
            ("sha256:a", false, None, at(1)),
            // Measured nothing (the provider failed), but the calls were spent.
            ("sha256:a", true, None, at(4)),
            ("sha256:a", false, None, at(4)),
            // A new lock: its first tick is not a behaviour audit, so nothing is known.
            ("sha256:b", false, None, None),
        ];
        let mut state = None;
        for (n, (basis, behaviour, p, want)) in (0..).zip(steps) {
            let life = if behaviour {
                lifetime(basis)
            } else {
                identity_tick(basis)
            };
            let w = weigh(state.as_ref(), &audit(n, p), &life);
            state = w.accumulated;
            let got = state.as_ref().and_then(|a| a.behaviour_at);
            assert_eq!(got, want, "audit {n}");
            if let Some(summary) = &w.record.pin.lifetime {
                assert_eq!(summary.next_behaviour, life.next_behaviour, "audit {n}");
            }
        }
    }

    #[test]
    fn the_threshold_is_audits_a_year_over_the_detector_s_half_of_the_rate() {
        for (audits, rate, threshold) in [
            (8_760.0, 0.01, 1_752_000.0),
            (365.0, 0.01, 73_000.0),
            (24.0, 12.0, 4.0),
            (1.0, 12.0, 1.0),
        ] {
            assert!((super::threshold(audits, rate) - threshold).abs() < 1e-9);
        }
    }
}
