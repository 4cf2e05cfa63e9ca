//! The two string kernels and their Gram matrices over one probe's answers.
//!
//! Hamming compares characters position by position over a fixed length L, padding counted as a
//! match (Gao et al.'s convention, so length differences show); the k-spectrum kernel compares
//! L2-normalised counts of all character n-grams of length 1..=K, wherever they sit.

use std::collections::HashMap;

use super::stratum::Sums;
use super::{Kernel, Stratum};

/// A symmetric Gram matrix over one probe's answers, baseline first.
pub(super) struct Gram {
    pub(super) n: usize,
    values: Vec<f64>,
}

/// The base kernels' Gram matrices of one prompt, by kernel name.
pub(super) fn base_grams(stratum: &Stratum<'_>, kernel: Kernel) -> Vec<(&'static str, Gram)> {
    let items: Vec<&str> = stratum
        .baseline
        .iter()
        .chain(stratum.current)
        .map(String::as_str)
        .collect();
    let (hamming, spectrum, length) = kernel.parts();
    let mut grams = Vec::new();
    if let Some(length) = hamming {
        let chars: Vec<Vec<char>> = items
            .iter()
            .map(|s| s.chars().take(length).collect())
            .collect();
        grams.push((
            "hamming",
            Gram::new(chars.len(), |i, j| {
                hamming_kernel(&chars[i], &chars[j], length)
            }),
        ));
    }
    if let Some(max_n) = spectrum {
        let features = spectrum_features(&items, max_n, length);
        grams.push((
            "spectrum",
            Gram::new(features.len(), |i, j| dot(&features[i], &features[j])),
        ));
    }
    grams
}

/// (1/L)·#{positions i < L where both agree}, with positions past an answer's end holding a pad
/// symbol that matches only another pad (Gao et al.'s convention: length differences count).
pub(super) fn hamming_kernel(u: &[char], v: &[char], length: usize) -> f64 {
    let same = u.iter().zip(v).filter(|(a, b)| a == b).count();
    let pads = length - u.len().max(v.len());
    (same + pads) as f64 / length as f64
}

/// Each answer's sparse, L2-normalised n-gram count vector (n = 1..=max_n), sorted by n-gram id.
/// The empty answer gets one feature of its own, so two empty answers are identical.
pub(super) fn spectrum_features(
    items: &[&str],
    max_n: usize,
    length: usize,
) -> Vec<Vec<(u32, f64)>> {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    items
        .iter()
        .map(|text| {
            let bounds: Vec<usize> = text
                .char_indices()
                .map(|(i, _)| i)
                .chain(std::iter::once(text.len()))
                .take(length + 1)
                .collect();
            let mut grams: Vec<u32> = (1..=max_n)
                .flat_map(|n| bounds.windows(n + 1).map(move |w| (w[0], w[n])))
                .map(|(a, b)| &text[a..b])
                .chain(text.is_empty().then_some(""))
                .map(|g| {
                    let next = ids.len() as u32;
                    *ids.entry(g).or_insert(next)
                })
                .collect();
            grams.sort_unstable();
            normalised_counts(&grams)
        })
        .collect()
}

fn normalised_counts(sorted: &[u32]) -> Vec<(u32, f64)> {
    let mut counts: Vec<(u32, f64)> = Vec::new();
    for &g in sorted {
        match counts.last_mut() {
            Some((last, c)) if *last == g => *c += 1.0,
            _ => counts.push((g, 1.0)),
        }
    }
    let norm = counts.iter().map(|(_, c)| c * c).sum::<f64>().sqrt();
    for (_, c) in &mut counts {
        *c /= norm;
    }
    counts
}

pub(super) fn dot(a: &[(u32, f64)], b: &[(u32, f64)]) -> f64 {
    let (mut i, mut j, mut sum) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += a[i].1 * b[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

impl Gram {
    pub(super) fn new(n: usize, kernel: impl Fn(usize, usize) -> f64) -> Gram {
        let mut values = vec![0.0; n * n];
        for i in 0..n {
            for j in i..n {
                let k = kernel(i, j);
                values[i * n + j] = k;
                values[j * n + i] = k;
            }
        }
        Gram { n, values }
    }

    pub(super) fn at(&self, i: usize, j: usize) -> f64 {
        self.values[i * self.n + j]
    }

    /// Sums of the labeling where items `0..baseline_n` are the baseline.
    pub(super) fn observed(&self, baseline_n: usize) -> Sums {
        let mut sums = Sums::default();
        for i in 0..self.n {
            for j in (i + 1)..self.n {
                let k = self.at(i, j);
                match (i < baseline_n, j < baseline_n) {
                    (true, true) => sums.baseline += k,
                    (false, false) => sums.current += k,
                    _ => sums.across += k,
                }
            }
        }
        sums
    }
}
