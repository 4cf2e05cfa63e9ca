use super::kernel::{Gram, dot, hamming_kernel, spectrum_features};
use super::stratum::{Prepared, for_each_subset};
use super::{Kernel, Stratum, text_mmd};
use crate::stats::permutation::PermutationBudget;
use crate::stats::rng::Rng;
use crate::stats::{Calibration, Effect};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn chars(s: &str) -> Vec<char> {
    s.chars().collect()
}

#[test]
fn hamming_kernel_table() {
    // Hand-computed: (u, v, L, k).
    let cases = [
        ("abc", "abd", 4, 0.75), // a, b match; position 4 is pad = pad
        ("ab", "abcd", 4, 0.5),  // c, d against pads: mismatches
        ("", "", 4, 1.0),        // all pads
        ("xyz", "abc", 3, 0.0),
        ("héllo", "hello", 5, 0.8), // Unicode scalar values, not bytes
    ];
    for (u, v, length, want) in cases {
        let got = hamming_kernel(&chars(u), &chars(v), length);
        assert!((got - want).abs() < 1e-12, "{u:?} {v:?}: {got}");
    }
}

#[test]
fn spectrum_kernel_table() {
    // Hand-computed with n-grams of length 1..=2, each vector L2-normalised:
    // "ab" = {a, b, ab}, "ba" = {b, a, ba}: 2 shared of 3 → 2/3.
    // "aa" = {a:2, aa:1}, "a" = {a:1}: 2/√5.
    // "" shares nothing with "a" and everything with "".
    let cases = [
        ("ab", "ba", 2.0 / 3.0),
        ("aa", "a", 2.0 / 5f64.sqrt()),
        ("ab", "ab", 1.0),
        ("", "a", 0.0),
        ("", "", 1.0),
    ];
    for (u, v, want) in cases {
        let f = spectrum_features(&[u, v], 2, 100);
        let got = dot(&f[0], &f[1]);
        assert!((got - want).abs() < 1e-12, "{u:?} {v:?}: {got}");
    }
}

#[test]
fn fast_sums_equal_the_direct_formula() {
    // The O(m²) update must agree with summing the Gram matrix over a relabeled sample.
    let mut rng = Rng::new(11);
    let items = 9;
    let gram = Gram::new(items, |i, j| {
        ((i * 7 + j * 7) % 5) as f64 + if i == j { 3.0 } else { 0.0 }
    });
    let mut prepared = Prepared::new(gram, 6, 3, 1);
    for _ in 0..50 {
        rng.choose_front(&mut prepared.index, 3);
        let fast = prepared.sums(&prepared.index[..3]);
        let current: Vec<usize> = prepared.index[..3].to_vec();
        let (mut within_baseline, mut within_current, mut across) = (0.0, 0.0, 0.0);
        for i in 0..items {
            for j in (i + 1)..items {
                let k = prepared.gram.at(i, j);
                match (current.contains(&i), current.contains(&j)) {
                    (false, false) => within_baseline += k,
                    (true, true) => within_current += k,
                    _ => across += k,
                }
            }
        }
        assert!((fast.baseline - within_baseline).abs() < 1e-9);
        assert!((fast.current - within_current).abs() < 1e-9);
        assert!((fast.across - across).abs() < 1e-9);
    }
}

#[test]
fn separated_samples_have_the_hand_computed_statistics_and_p() {
    // Hamming with L = 1, so k = 1 for equal letters and 0 otherwise.
    // 2 vs 2 (novelty, fewer than 5 a side): baseline {a, a}, current {b, b}: within-baseline
    // mean 1, cross mean 0, novelty = 1 − 2·0 = 1. Of the C(4, 2) = 6 labelings, 2 separate
    // the letters (novelty 1) and 4 mix them (0 − 2·2/4 = −1): p = 2/6; null mean −1/3,
    // variance 1 − 1/9 = 8/9, so the standardised statistic is (4/3)/(2√2/3) = √2.
    // 5 vs 5 (MMD²): 1 + 1 − 0 = 2; p = 2/C(10, 5) = 2/252.
    let budget = PermutationBudget {
        max_permutations: 20_000,
        stop_after: u64::MAX,
    };
    let cases: [(usize, f64, Option<f64>, f64); 2] = [
        (2, 1.0, Some(2f64.sqrt()), 2.0 / 6.0),
        (5, 2.0, None, 2.0 / 252.0),
    ];
    for (n, statistic, standardized, p) in cases {
        let (baseline, current) = (vec!["a".to_owned(); n], vec!["b".to_owned(); n]);
        let strata = [Stratum {
            id: "p",
            baseline: &baseline,
            current: &current,
        }];
        let r = text_mmd(&strata, Kernel::Hamming { length: 1 }, budget, 3);
        let Effect::Text { strata, .. } = &r.effect else {
            panic!()
        };
        assert!((strata[0].statistic - statistic).abs() < 1e-12, "{n}");
        if let Some(z) = standardized {
            assert!((r.statistic - z).abs() < 1e-12, "{}", r.statistic);
        }
        let se = (p * (1.0 - p) / 20_000.0).sqrt();
        assert!((r.p_value - p).abs() < 4.0 * se, "{n}: {}", r.p_value);
    }
}

#[test]
fn a_different_model_is_found_and_the_seed_is_recorded() {
    let baseline: Vec<String> = (0..30).map(|i| format!("Leaves fall {i} softly")).collect();
    let current: Vec<String> = (0..10).map(|i| format!("AUTUMN!!! {i} ???")).collect();
    let strata = [Stratum {
        id: "haiku",
        baseline: &baseline,
        current: &current,
    }];
    for kernel in [
        Kernel::Hamming { length: 1000 },
        Kernel::Spectrum {
            max_n: 3,
            length: 1000,
        },
        Kernel::DEFAULT,
    ] {
        let r = text_mmd(&strata, kernel, PermutationBudget::resolving(1e-4), 42);
        assert!(r.p_value < 1e-4, "{kernel:?}: {}", r.p_value);
        let Calibration::Permutation { seed, .. } = r.calibration else {
            panic!("{:?}", r.calibration)
        };
        assert_eq!(seed, 42);
        let Effect::Text { strata, .. } = r.effect else {
            panic!()
        };
        let s = &strata[0].similarity[0];
        assert!(s.within_baseline > s.across, "{s:?}");
    }
}

#[test]
fn degenerate_inputs_do_not_reject() {
    let none: Vec<String> = vec![];
    let same = strings(&["same"; 10]);
    let one = strings(&["x"]);
    let other = strings(&["y"]);
    let cases: [(&[String], &[String]); 5] = [
        (&none, &none),
        (&same, &none),
        (&none, &same),
        (&same, &same[..3]),
        (&one, &other),
    ];
    for (baseline, current) in cases {
        let strata = [Stratum {
            id: "p",
            baseline,
            current,
        }];
        let r = text_mmd(&strata, Kernel::DEFAULT, PermutationBudget::CLASSIC, 1);
        assert!(r.p_value > 0.4, "{baseline:?} {current:?}: {}", r.p_value);
    }
    assert_eq!(
        text_mmd(&[], Kernel::DEFAULT, PermutationBudget::CLASSIC, 1).calibration,
        Calibration::NoEvidence
    );
}

#[test]
fn labels_are_only_permuted_within_a_prompt() {
    // Two prompts whose answers differ completely between prompts but not between samples:
    // a pooled (unstratified) permutation would see a huge MMD; the stratified null sees none.
    let (b1, c1) = (strings(&["alpha"; 6]), strings(&["alpha"; 3]));
    let (b2, c2) = (strings(&["zzzzzz"; 6]), strings(&["zzzzzz"; 3]));
    let strata = [
        Stratum {
            id: "1",
            baseline: &b1,
            current: &c1,
        },
        Stratum {
            id: "2",
            baseline: &b2,
            current: &c2,
        },
    ];
    let r = text_mmd(&strata, Kernel::DEFAULT, PermutationBudget::CLASSIC, 9);
    assert!((r.p_value - 1.0).abs() < 1e-12, "{}", r.p_value);
}

#[test]
fn subsets_are_enumerated_once_each_in_order() {
    let cases = [(5, 2, 10), (4, 0, 1), (3, 3, 1), (6, 3, 20)];
    for (n, m, count) in cases {
        let mut seen: Vec<Vec<usize>> = Vec::new();
        for_each_subset(n, m, |g| seen.push(g.to_vec()));
        assert_eq!(seen.len(), count, "C({n}, {m})");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    }
}

#[test]
fn a_noisy_probe_does_not_drown_a_clear_one() {
    // Probe "clear": every new answer is unlike anything in the baseline. Probe "noisy": two
    // very different answers in equal shares on both sides, unchanged. Standardising each
    // probe's MMD² keeps the clear signal visible in the sum.
    let clear_then: Vec<String> = (0..30).map(|i| format!("leaves fall {}", i % 3)).collect();
    let clear_now = strings(&["ZZZZ QQQQ XXXX", "ZZZZ QQQQ YYYY", "ZZZZ QQQQ WWWW"]);
    let noisy_then: Vec<String> = (0..30)
        .map(|i| {
            if i % 2 == 0 {
                "{}"
            } else {
                "a long answer with many words"
            }
            .to_owned()
        })
        .collect();
    let noisy_now = strings(&["{}", "a long answer with many words", "{}"]);
    let strata = [
        Stratum {
            id: "clear",
            baseline: &clear_then,
            current: &clear_now,
        },
        Stratum {
            id: "noisy",
            baseline: &noisy_then,
            current: &noisy_now,
        },
    ];
    let r = text_mmd(
        &strata,
        Kernel::DEFAULT,
        PermutationBudget::resolving(1e-3),
        4,
    );
    // The clear probe alone is at its most extreme labeling: p about 1/C(33, 3) = 1/5456.
    assert!(r.p_value < 2e-3, "{}", r.p_value);
}
