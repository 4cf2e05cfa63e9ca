//! Any text as pins.toml (next to one valid probe file): a config or diagnostics, never a panic.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

const PROBE: &str = "id = \"arith\"\nprompt = \"What is 17 * 23?\"\nmax_tokens = 8\ntemperature = 1.0\ncompare = \"choice\"\n";

/// One project directory for the whole run.
fn pins_path() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("probes")).expect("probes dir");
        std::fs::write(dir.path().join("probes/arith.toml"), PROBE).expect("probe");
        let path = dir.path().join("pins.toml");
        (dir, path)
    });
    path
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let env = |_: &str| Some("sk-fuzz-value-0123456789".to_owned());
    if let Err(e) = modelpin::config::load_text(pins_path(), text, &env) {
        assert!(!e.to_string().is_empty());
    }
});
