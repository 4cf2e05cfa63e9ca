//! Defensive reads from provider JSON.
//!
//! Provider bodies are untrusted input: any field can be missing, `null`, of the wrong type,
//! negative, or larger than any real count. These readers turn all of that into `None`, so the
//! adapters state where a value lives and never decide case by case what a malformed one means.

use serde_json::Value;

use super::{ImplausibleCount, MAX_TOKEN_COUNT};

/// The value at a path of object keys.
pub(crate) fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(value, |v, key| v.as_object()?.get(*key))
}

/// A non-empty string at `path`.
pub(crate) fn text<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path)?.as_str().filter(|s| !s.is_empty())
}

/// An owned non-empty string at `path`.
pub(crate) fn owned_text(value: &Value, path: &[&str]) -> Option<String> {
    text(value, path).map(str::to_owned)
}

/// A token count at `path`: a non-negative integer. Negative, fractional or out-of-range
/// numbers are absent, not clamped, because a wrong count would poison the tokenizer check;
/// one past `MAX_TOKEN_COUNT` is also reported by `implausible`, so it is never read as 0.
pub(crate) fn count(value: &Value, path: &[&str]) -> Option<u64> {
    at(value, path)?.as_u64().filter(|n| *n <= MAX_TOKEN_COUNT)
}

/// The first of `fields` (name, path under `value`) holding a number larger than any call can
/// count: the usage block is broken or hostile, and the call's tokens and cost are unmeasured.
pub(crate) fn implausible(
    value: &Value,
    fields: &[(&'static str, &[&str])],
) -> Option<ImplausibleCount> {
    fields.iter().find_map(|(field, path)| {
        let n = at(value, path)?.as_f64()?;
        (n > MAX_TOKEN_COUNT as f64).then_some(ImplausibleCount { field, value: n })
    })
}

/// An array at `path`, empty when absent or of another type.
pub(crate) fn items<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    at(value, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A provider error code, which some send as a string (`"1500"`, `"429"`) and others as an
/// integer (OpenRouter, Google): kept as the provider's own spelling either way.
pub(crate) fn code(value: &Value, path: &[&str]) -> Option<String> {
    match at(value, path)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An in-band HTTP status (OpenRouter's integer `error.code`), when it is a plausible error status.
pub(crate) fn error_status(value: &Value, path: &[&str]) -> Option<u16> {
    let n = at(value, path)?.as_u64()?;
    u16::try_from(n).ok().filter(|s| (400..=599).contains(s))
}

/// The concatenated `text` of every part for which `keep` holds.
pub(crate) fn joined_text(parts: &[Value], keep: impl Fn(&Value) -> bool) -> String {
    parts
        .iter()
        .filter(|part| keep(part))
        .filter_map(|part| part.get("text")?.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{code, count, error_status, text};

    #[test]
    fn counts_reject_negative_fractional_and_huge_numbers() {
        let v = json!({"a": -3, "b": 2.5, "c": 1e300, "d": "12", "e": 7, "f": null,
                       "g": u64::MAX, "h": 100_000_001_u64});
        for key in ["a", "b", "c", "d", "f", "g", "h", "missing"] {
            assert_eq!(count(&v, &[key]), None, "{key}");
        }
        assert_eq!(count(&v, &["e"]), Some(7));
        assert_eq!(count(&v, &["e", "deeper"]), None);
        let fields: [(&'static str, &[&str]); 3] = [("e", &["e"]), ("c", &["c"]), ("h", &["h"])];
        let found = super::implausible(&v, &fields).unwrap();
        assert_eq!((found.field, found.value), ("c", 1e300));
        assert!(super::implausible(&v, &fields[..1]).is_none());
    }

    #[test]
    fn codes_keep_the_providers_spelling() {
        let v = json!({"s": "1500", "n": 400, "b": true, "empty": ""});
        assert_eq!(code(&v, &["s"]).as_deref(), Some("1500"));
        assert_eq!(code(&v, &["n"]).as_deref(), Some("400"));
        assert_eq!(code(&v, &["b"]), None);
        assert_eq!(code(&v, &["empty"]), None);
    }

    #[test]
    fn in_band_status_must_look_like_an_error_status() {
        let v = json!({"ok": 429, "low": 200, "big": 70000, "neg": -400});
        assert_eq!(error_status(&v, &["ok"]), Some(429));
        for key in ["low", "big", "neg"] {
            assert_eq!(error_status(&v, &[key]), None, "{key}");
        }
    }

    #[test]
    fn text_skips_empty_and_non_strings() {
        let v = json!({"a": "", "b": 3, "c": {"d": "x"}});
        assert_eq!(text(&v, &["a"]), None);
        assert_eq!(text(&v, &["b"]), None);
        assert_eq!(text(&v, &["c", "d"]), Some("x"));
    }
}
