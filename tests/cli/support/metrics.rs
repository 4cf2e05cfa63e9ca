//! The daemon's `/metrics` decoded, strictly: every line is a `# HELP`, a `# TYPE` or a sample of
//! a family whose type was declared before it, so a malformed exposition fails the test that
//! reads it. Tests wait on these values instead of on log lines.

use std::collections::BTreeMap;

/// One sample line: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// One scrape, in exposition order.
#[derive(Debug, Clone)]
pub struct Scrape {
    pub samples: Vec<Sample>,
}

impl Scrape {
    /// Decodes an exposition; panics on a line that is none of the three kinds.
    pub fn parse(text: &str) -> Scrape {
        let mut typed: BTreeMap<String, String> = BTreeMap::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest
                    .split_once(' ')
                    .unwrap_or_else(|| panic!("a TYPE line without a type: {line}"));
                assert!(
                    ["counter", "gauge"].contains(&kind),
                    "unknown metric type: {line}"
                );
                typed.insert(name.to_owned(), kind.to_owned());
            } else if line.starts_with("# HELP ") || line.is_empty() {
            } else {
                let sample = sample(line);
                assert!(
                    typed.contains_key(&sample.name),
                    "a sample of a family without TYPE: {line}"
                );
                samples.push(sample);
            }
        }
        Scrape { samples }
    }

    /// The value of the one sample of `name` whose labels are exactly `labels`.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels == want)
            .map(|s| s.value)
    }

    /// [`Scrape::sum`] of a counter, as the whole number it counts.
    pub fn count(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.sum(name, labels).round() as u64
    }

    /// The sum of every sample of `name` carrying all of `labels` (and maybe others).
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).is_some_and(|have| have == v))
            })
            .map(|s| s.value)
            .sum()
    }
}

fn sample(line: &str) -> Sample {
    let fail = || -> ! { panic!("not a metric sample: {line}") };
    let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| fail());
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().unwrap_or_else(|_| fail()),
    };
    let Some((name, labels)) = series.split_once('{') else {
        return Sample {
            name: series.to_owned(),
            labels: BTreeMap::new(),
            value,
        };
    };
    let labels = labels.strip_suffix('}').unwrap_or_else(|| fail());
    Sample {
        name: name.to_owned(),
        labels: label_pairs(labels).unwrap_or_else(|| fail()),
        value,
    }
}

/// `a="x",b="y \"quoted\""` as pairs, with the exposition's escapes undone.
fn label_pairs(mut rest: &str) -> Option<BTreeMap<String, String>> {
    let mut labels = BTreeMap::new();
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.to_owned(), value);
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    Some(labels)
}
