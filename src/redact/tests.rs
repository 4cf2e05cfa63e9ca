use std::fmt::Write as _;

use proptest::prelude::*;

use super::{MASK, Redactor};

#[test]
fn masks_each_spelling_of_each_secret() {
    let r = Redactor::new(["sk-marker-123456", "https://hooks.example/T0/B0/x\"y"]);
    for (input, want) in [
        ("key sk-marker-123456 echoed", "key [redacted] echoed"),
        (
            "Bearer sk-marker-123456sk-marker-123456",
            "Bearer [redacted][redacted]",
        ),
        ("url https://hooks.example/T0/B0/x\"y", "url [redacted]"),
        (
            r#"{"u":"https://hooks.example/T0/B0/x\"y"}"#,
            r#"{"u":"[redacted]"}"#,
        ),
        ("nothing here", "nothing here"),
    ] {
        assert_eq!(r.scrub(input), want, "{input}");
        assert_eq!(
            r.scrub_bytes(input.as_bytes().to_vec()),
            want.as_bytes(),
            "{input}"
        );
    }
}

#[test]
fn a_json_escaped_key_is_masked_with_its_escapes() {
    let r = Redactor::new(["sk-AB-CD-0123"]);
    for (input, want) in [
        (
            r#"{"model": "sk-AB\u002dCD-0123"}"#,
            r#"{"model": "[redacted]"}"#,
        ),
        (
            r#"{"message": "Incorrect key \u0073k-AB-CD-0123."}"#,
            r#"{"message": "Incorrect key [redacted]."}"#,
        ),
        (
            r#""\u0073\u006B\u002D\u0041\u0042-CD-0123""#,
            r#""[redacted]""#,
        ),
        (r#""sk\/AB""#, r#""sk\/AB""#),
    ] {
        assert_eq!(r.scrub(input), want, "{input}");
    }
}

#[test]
fn a_key_outside_the_basic_plane_is_masked_through_a_surrogate_pair() {
    let r = Redactor::new(["key-\u{1F511}-0123456"]);
    let escaped = r#""key-\ud83d\udd11-0123456""#;
    assert_eq!(r.scrub(escaped), r#""[redacted]""#);
}

#[test]
fn percent_encoding_in_either_case_is_masked() {
    let r = Redactor::new(["tok/en+0123456"]);
    for input in [
        "q=tok%2Fen%2B0123456",
        "q=tok%2fen%2b0123456",
        "q=%74ok/en+0123456",
        r"q=tok\u00252Fen+0123456",
    ] {
        assert_eq!(r.scrub(input), "q=[redacted]", "{input}");
    }
}

#[test]
fn a_base64_basic_auth_header_does_not_carry_the_password() {
    use base64::Engine as _;
    let secret = "hunter2-password-0123";
    let r = Redactor::new([secret]);
    for user in ["a", "ab", "abc", "smtp-user"] {
        let header = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}"))
        );
        let masked = r.scrub(&header);
        assert!(masked.contains(MASK), "{user}: {masked}");
        let plain = base64::engine::general_purpose::STANDARD.encode(secret);
        assert!(
            !masked.contains(&plain[2..plain.len() - 4]),
            "{user}: {masked}"
        );
    }
}

#[test]
fn a_hex_secret_is_masked_in_any_case_and_others_only_as_written() {
    let r = Redactor::new(["0a1b2c3d4e5f", "Case-Matters-01"]);
    assert_eq!(r.scrub("id 0A1B2C3D4E5F"), "id [redacted]");
    assert_eq!(r.scrub("CASE-MATTERS-01"), "CASE-MATTERS-01");
}

#[test]
fn the_secret_parts_of_a_url_are_masked_on_their_own() {
    let slack = "https://hooks.slack.com/services/T0123/B0456/abcdefghijklmnopqrstuvwx";
    let hook = "https://hooks.example.com/in?token=tok-0123456789&team=ml";
    let r = Redactor::new([slack, hook]);
    for (input, gone) in [
        (
            "500: no route for /services/T0123/B0456/abcdefghijklmnopqrstuvwx",
            "abcdefghijklmnop",
        ),
        (
            "POST services/T0123/B0456/abcdefghijklmnopqrstuvwx",
            "abcdefghijklmnop",
        ),
        ("bad token abcdefghijklmnopqrstuvwx", "abcdefghijklmnop"),
        ("bad query token=tok-0123456789", "tok-0123456789"),
        ("unknown tok-0123456789", "tok-0123456789"),
        (
            "%2Fservices%2FT0123%2FB0456%2Fabcdefghijklmnopqrstuvwx",
            "abcdefghijklmnop",
        ),
    ] {
        let masked = r.scrub(input);
        assert!(
            !masked.contains(gone) && masked.contains(MASK),
            "{input}: {masked}"
        );
    }
    assert_eq!(r.scrub("/services is fine"), "/services is fine");
}

#[test]
fn short_values_are_not_secrets() {
    let r = Redactor::new(["abc", ""]);
    assert_eq!(r.scrub("abc abc"), "abc abc");
}

#[test]
fn longest_secret_wins() {
    let r = Redactor::new(["secret-1", "secret-1-longer"]);
    assert_eq!(r.scrub("secret-1-longer"), MASK);
}

#[test]
fn invalid_utf8_is_searched_as_bytes() {
    let r = Redactor::new(["sk-marker-123456"]);
    let mut body = vec![0xff, 0xfe];
    body.extend_from_slice(b"sk-marker-123456");
    assert_eq!(r.scrub_bytes(body), b"\xff\xfe[redacted]");
    let mut escaped = vec![0xff];
    escaped.extend_from_slice(br"\u0073k-marker-123456");
    assert_eq!(r.scrub_bytes(escaped), b"\xff[redacted]");
}

#[test]
fn a_masked_json_body_still_parses_to_the_same_shape() {
    let r = Redactor::new(["sk-marker-123456"]);
    let body = br#"{"error":{"message":"key \u0073k-marker-123456 \"bad\"","code":1}}"#;
    let masked = r.scrub_bytes(body.to_vec());
    let value: serde_json::Value = serde_json::from_slice(&masked).unwrap();
    assert_eq!(value["error"]["message"], "key [redacted] \"bad\"");
    assert_eq!(value["error"]["code"], 1);
}

/// One character of a secret as it may come back: raw, JSON-escaped (either hex case, or as
/// a surrogate pair outside the basic plane), or percent-encoded (either case).
pub(crate) fn spelled(c: char, how: u8) -> String {
    let mut utf8 = [0u8; 4];
    let bytes = c.encode_utf8(&mut utf8).as_bytes().to_vec();
    match how % 5 {
        0 => c.to_string(),
        1 | 2 => {
            let mut units = [0u16; 2];
            let upper = how % 5 == 2;
            c.encode_utf16(&mut units)
                .iter()
                .map(|u| {
                    if upper {
                        format!("\\u{u:04X}")
                    } else {
                        format!("\\u{u:04x}")
                    }
                })
                .collect()
        }
        3 => bytes.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "%{b:02X}");
            s
        }),
        _ => bytes.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "%{b:02x}");
            s
        }),
    }
}

/// The secret with each character spelled as `hows` says (cycled).
pub(crate) fn encoded(secret: &str, hows: &[u8]) -> String {
    secret
        .chars()
        .enumerate()
        .map(|(i, c)| spelled(c, hows.get(i % hows.len().max(1)).copied().unwrap_or(0)))
        .collect()
}

/// Whether `text`, as written or decoded in any of the ways the redactor decodes, holds `secret`.
pub(crate) fn holds(text: &str, secret: &str) -> bool {
    let found = |bytes: &[u8]| bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
    let mut decoded = false;
    super::decode::each_decoding(text.as_bytes(), &mut |s| decoded |= found(&s.bytes));
    found(text.as_bytes()) || decoded
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_mix_of_escapes_carries_the_secret(
        secret in "[a-zA-Z0-9_.~+/-]{8,40}",
        hows in prop::collection::vec(any::<u8>(), 1..12),
        before in "[ -~]{0,20}",
        after in "[ -~]{0,20}",
    ) {
        let r = Redactor::new([format!("sk-{secret}")]);
        let text = format!("{before}{}{after}", encoded(&format!("sk-{secret}"), &hows));
        let masked = r.scrub(&text);
        prop_assert!(masked.contains(MASK), "{text} -> {masked}");
        prop_assert!(!holds(&masked, &format!("sk-{secret}")), "{text} -> {masked}");
    }
}
