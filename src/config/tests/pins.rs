//! scratch
use super::{BASE, Dir, base_with, error};

#[test]
fn scratch() {
    let cases: Vec<String> = vec![
        error(&base_with("model = ", "acept = [\"x\"]\nmodel = ")),
        error(&base_with("model = ", "colour = 1\nmodel = ")),
        error(&base_with("model = ", "samples = \"ten\"\nmodel = ")),
        error(&base_with("model = ", "samples = -1\nmodel = ")),
        error(&base_with("model = ", "samples = 0\nmodel = ")),
        error(&base_with("model = \"gpt-4o-2024-08-06\"\n", "")),
        error(&base_with("kind = \"openai\"\n", "")),
        error(&base_with("provider = \"openai\"", "provider = \"opnai\"")),
        error(&base_with("kind = \"openai\"", "kind = \"openia\"")),
        error(&format!(
            "{BASE}\n[[pin]]\nid = \"support-bot\"\nprovider = \"openai\"\nmodel = \"x\"\n"
        )),
        error(&base_with("version = 1", "version = 2")),
        error(&base_with("version = 1", "")),
        error(&base_with("version = 1", "version = \"1\"")),
        error(&base_with("model = ", "samples = [1\nmodel = ")),
        error(&format!("{BASE}retires_on = \"2026-10-20\"\n")),
        error(&format!("{BASE}retires_on = 2026-10-20T10:00:00Z\n")),
        error(&format!("{BASE}price = {{ input = -1, output = 2 }}\n")),
        error(&format!("{BASE}price = {{ input = 1, outptu = 2 }}\n")),
        error(&format!("{BASE}accept = []\n")),
        error(&format!("{BASE}alerts = [\"oncal\"]\n")),
        error(&format!(
            "[settings]\ntimeout = \"10x\"\nalpha = 1.5\nconcurrency = 0\nmetrics = \"localhost:9\"\nschedule = \"* * *\"\n{BASE}"
        )),
        Dir::new().without_env().pins(BASE).error(),
    ];
    for c in cases {
        println!("{c}\n-----");
    }
}
