//! Property tests: the loader returns a config or diagnostics for any text — random Unicode,
//! a valid file with one line replaced by something hostile, or keys given values of the wrong
//! type — and never panics, including while rendering its diagnostics.

use proptest::prelude::{Just, Strategy, any, prop, prop_oneof, proptest};
use proptest::test_runner::Config as Runner;

use super::{BASE, PROBE};
use crate::config::load_text;

const KEYS: [&str; 16] = [
    "version",
    "id",
    "model",
    "provider",
    "kind",
    "base_url",
    "api_key_env",
    "accept",
    "probes",
    "samples",
    "schedule",
    "metrics",
    "timeout",
    "secret_env",
    "url",
    "price",
];

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>().prop_map(|s| format!("{s:?}")),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        Just("\"http://evil.example\\\\@127.0.0.1:9/v1\"".to_owned()),
        Just("\"sk-proj-abcdefghijkl\"".to_owned()),
        Just("[\"a\", 1, { x = 2 }]".to_owned()),
        Just("{ input = -1, output = nan }".to_owned()),
        (any::<char>(), 1000usize..70_000)
            .prop_map(|(c, n)| format!("{:?}", c.to_string().repeat(n))),
    ]
}

/// BASE with one line replaced or one line added.
fn mutated() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        (0..KEYS.len(), value()).prop_map(|(k, v)| format!("{} = {v}", KEYS[k])),
        any::<String>(),
        Just("[settings]".to_owned()),
        Just("[[pin]]".to_owned()),
        Just("[alerts.x]".to_owned()),
    ];
    (line, 0usize..12, any::<bool>()).prop_map(|(line, at, replace)| {
        let mut lines: Vec<String> = BASE.lines().map(str::to_owned).collect();
        let at = at.min(lines.len());
        if replace && at < lines.len() {
            lines[at] = line;
        } else {
            lines.insert(at, line);
        }
        lines.join("\n")
    })
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(any::<u8>(), 0..256)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        mutated(),
    ]
}

proptest! {
    #![proptest_config(Runner { cases: 256, ..Runner::default() })]

    #[test]
    fn any_text_loads_or_is_explained_never_a_panic(text in text()) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("probes")).unwrap();
        std::fs::write(dir.path().join("probes/arith.toml"), PROBE).unwrap();
        let env = |_: &str| Some("sk-test-value-from-env".to_owned());
        if let Err(e) = load_text(&dir.path().join("pins.toml"), text, &env) {
            assert!(!e.to_string().is_empty(), "a refusal says why");
        }
    }
}
