//! One benchmark row and its markdown rendering.

use std::fmt::Write;

/// What one scenario measured for one detector.
pub struct Row {
    pub scenario: String,
    pub detector: String,
    /// Baseline and current sizes the power/FAR figures refer to.
    pub design: String,
    /// Calls modelpin needs for 95% power at α = 0.01 (`None`: not reached in the searched range).
    pub n_modelpin: Option<String>,
    pub n_oracle: Option<u64>,
    pub power: String,
    pub false_alarms: String,
    pub target: String,
    pub met: Option<bool>,
}

impl Row {
    pub fn efficiency(&self) -> String {
        let modelpin = self
            .n_modelpin
            .as_deref()
            .and_then(|n| n.parse::<f64>().ok());
        match (self.n_oracle, modelpin) {
            (Some(o), Some(m)) if m > 0.0 => format!("{:.2}", o as f64 / m),
            _ => "—".into(),
        }
    }
}

pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| scenario | modelpin test | design (baseline vs current) | modelpin n @95% power, α=0.01 | oracle n | efficiency | power | empirical false-alarm rate | target | met |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let met = match r.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.detector,
            r.design,
            r.n_modelpin.as_deref().unwrap_or("—"),
            r.n_oracle.map_or("—".into(), |n| n.to_string()),
            r.efficiency(),
            r.power,
            r.false_alarms,
            r.target,
            met,
        );
    }
    out
}

/// "0.0093 ± 0.0010 (10000 runs)".
pub fn rate_text(rate: f64, runs: u64) -> String {
    format!(
        "{rate:.4} ± {:.4} ({runs} runs)",
        crate::harness::se(rate, runs)
    )
}
