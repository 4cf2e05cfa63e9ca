use std::collections::BTreeMap;

use serde_json::json;

use super::{MAX_IDS, MAX_ITEMS, MAX_RECORD, MAX_TEXT, OTHERS, Others, cap_counts, cap_record};
use crate::finding::{Code, Finding};
use crate::report::PinReport;
use crate::store::AuditRecord;

/// (map, IDs kept besides `(others)`, what was summed, the `(others)` count after)
type Case = (BTreeMap<String, u64>, usize, Option<Others>, u64);

fn counts(entries: &[(&str, u64)]) -> BTreeMap<String, u64> {
    entries.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
}

fn distinct(n: usize, prefix: &str) -> BTreeMap<String, u64> {
    (0..n).map(|i| (format!("{prefix}-{i:05}"), 1)).collect()
}

#[test]
fn maps_of_ids_keep_the_most_frequent_and_sum_the_rest() {
    let mut many = distinct(40, "m");
    many.insert("accepted".to_owned(), 100);
    let mut already = distinct(MAX_IDS, "m");
    already.insert(OTHERS.to_owned(), 7);
    let mut again = distinct(MAX_IDS + 2, "m");
    again.insert(OTHERS.to_owned(), 7);
    let table: Vec<Case> = vec![
        (BTreeMap::new(), 0, None, 0),
        (counts(&[("a", 3), ("b", 1)]), 2, None, 0),
        (distinct(MAX_IDS, "m"), MAX_IDS, None, 0),
        (
            distinct(MAX_IDS + 1, "m"),
            MAX_IDS,
            Some(Others { ids: 1, count: 1 }),
            1,
        ),
        (
            distinct(1000, "m"),
            MAX_IDS,
            Some(Others {
                ids: 1000 - MAX_IDS as u64,
                count: 1000 - MAX_IDS as u64,
            }),
            1000 - MAX_IDS as u64,
        ),
        (
            many,
            MAX_IDS,
            Some(Others {
                ids: 41 - MAX_IDS as u64,
                count: 41 - MAX_IDS as u64,
            }),
            41 - MAX_IDS as u64,
        ),
        // Capping a capped map changes nothing; one over adds to `(others)`.
        (already, MAX_IDS, None, 7),
        (again, MAX_IDS, Some(Others { ids: 2, count: 2 }), 9),
    ];
    for (i, (mut map, kept, lost, others)) in table.into_iter().enumerate() {
        let total: u64 = map.values().sum();
        let frequent = map.get("accepted").copied();
        assert_eq!(cap_counts(&mut map), lost, "case {i}");
        assert_eq!(
            map.keys().filter(|k| *k != OTHERS).count(),
            kept,
            "case {i}"
        );
        assert_eq!(map.get(OTHERS).copied().unwrap_or(0), others, "case {i}");
        assert_eq!(map.values().sum::<u64>(), total, "case {i}: no count lost");
        if let Some(n) = frequent {
            assert_eq!(
                map.get("accepted"),
                Some(&n),
                "case {i}: most frequent kept"
            );
        }
    }
}

fn record(served: BTreeMap<String, u64>, findings: Vec<Finding>) -> AuditRecord {
    AuditRecord {
        audit_id: "a".into(),
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        config_digest: "sha256:x".into(),
        lock_digest: None,
        pin: PinReport {
            id: "p1".into(),
            provider: "openai".into(),
            model: "m".into(),
            status: crate::finding::PinStatus::Drift,
            served_models: served,
            upstreams: BTreeMap::new(),
            calls: crate::report::Calls::default(),
            tokens: crate::report::Tokens::default(),
            cost_usd: None,
            lifecycle: None,
            behaviour: Vec::new(),
            findings,
            capped: BTreeMap::new(),
            lifetime: None,
        },
        source: Some(crate::store::RecordSource::Traffic),
    }
}

fn mismatch(served: &BTreeMap<String, u64>, message: &str) -> Finding {
    Finding {
        code: Code::ServedModelMismatch,
        severity: Code::ServedModelMismatch.severity(),
        message: message.to_owned(),
        evidence: json!({
            "requested": "m",
            "served": served,
            "unexpected": served,
            "examples": (0..100).map(|i| format!("trace {i}")).collect::<Vec<_>>(),
            "probes": [{"now": (0..100).collect::<Vec<u64>>()}],
        }),
        action: Some("a".repeat(5000)),
    }
}

#[test]
fn a_record_of_a_thousand_served_ids_still_says_drift_and_how_many_were_summed() {
    let served = distinct(1000, "churn");
    let mut r = record(
        served.clone(),
        vec![mismatch(&served, "served `churn-00000`")],
    );
    cap_record(&mut r);
    assert!(
        super::stored_len(&r) <= MAX_RECORD,
        "{}",
        super::stored_len(&r)
    );
    let others = Others {
        ids: 1000 - MAX_IDS as u64,
        count: 1000 - MAX_IDS as u64,
    };
    assert_eq!(r.pin.capped["served_models"], others);
    assert_eq!(r.pin.served_models.len(), MAX_IDS + 1);
    let f = &r.pin.findings[0];
    assert_eq!(f.code, Code::ServedModelMismatch);
    assert_eq!(r.pin.status, crate::finding::PinStatus::Drift);
    let evidence = &f.evidence;
    assert_eq!(evidence["capped"]["unexpected"]["ids"], others.ids);
    assert_eq!(evidence["unexpected"][OTHERS], others.count);
    assert_eq!(
        evidence["examples"].as_array().map(Vec::len),
        Some(MAX_ITEMS)
    );
    assert_eq!(
        evidence["capped"]["examples"]["ids"],
        100 - MAX_ITEMS as u64
    );
    assert_eq!(
        evidence["probes"][0]["now"].as_array().map(Vec::len),
        Some(MAX_ITEMS)
    );
    assert_eq!(f.action.as_ref().map(|a| a.chars().count()), Some(MAX_TEXT));
    let before = r.clone();
    cap_record(&mut r);
    assert_eq!(r, before, "capping a capped record changes nothing");
}

#[test]
fn a_record_over_its_budget_keeps_codes_and_messages_and_says_what_went() {
    // Longest IDs, every code: the evidence alone is over the budget.
    let served: BTreeMap<String, u64> = (0..40)
        .map(|i| (format!("{i:03}{}", "\"x".repeat(200)), 1))
        .collect();
    let findings: Vec<Finding> = Code::ALL
        .iter()
        .map(|c| Finding {
            code: *c,
            ..mismatch(&served, &"é\"".repeat(2000))
        })
        .collect();
    let mut r = record(served, findings);
    cap_record(&mut r);
    assert!(
        super::stored_len(&r) <= MAX_RECORD,
        "{}",
        super::stored_len(&r)
    );
    assert_eq!(r.pin.findings.len(), Code::ALL.len());
    let note = r.pin.findings[0].evidence["capped"].as_str().unwrap();
    assert!(note.contains("over its budget"), "{note}");
    assert_eq!(r.pin.served_models.len(), 5, "four and (others)");
    assert_eq!(r.pin.capped["served_models"].ids, 40 - 4);
}
