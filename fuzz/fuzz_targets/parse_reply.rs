//! Any body, with a status and provider kind derived from its bytes, parsed: never a panic, and
//! every kept string bounded. The input is the body itself, so the recorded replies under
//! `tests/fixtures/real/` seed the corpus as they are.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelpin::provider::{Parsed, ProviderKind, RawResponse, parse_reply};
use modelpin::text::{MAX_ANSWER_CHARS, MAX_ID_CHARS, MAX_MESSAGE_CHARS};

const STATUSES: [u16; 8] = [200, 400, 401, 403, 404, 410, 429, 500];

fuzz_target!(|data: &[u8]| {
    let sum = data.iter().fold(0usize, |acc, b| acc.wrapping_add(usize::from(*b)));
    let status = STATUSES[sum % STATUSES.len()];
    let kind = ProviderKind::ALL[(sum / STATUSES.len()) % ProviderKind::ALL.len()];
    let response = RawResponse {
        status,
        headers: Vec::new(),
        body: data.to_vec(),
    };
    match parse_reply(kind, &response) {
        Parsed::Reply(r) => {
            let ids = [&r.served_model, &r.upstream, &r.fallback_model, &r.system_fingerprint];
            for id in ids.into_iter().flatten() {
                assert!(id.chars().count() <= MAX_ID_CHARS);
            }
            assert!(r.text.chars().count() <= MAX_ANSWER_CHARS);
        }
        Parsed::Rejected(r) => assert!(r.message.chars().count() <= MAX_MESSAGE_CHARS),
        Parsed::Unparseable { reason, .. } => {
            assert!(reason.chars().count() <= MAX_MESSAGE_CHARS);
        }
    }
});
