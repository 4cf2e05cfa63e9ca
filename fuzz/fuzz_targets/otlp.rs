//! Any OTLP/HTTP request body, as the daemon's `/v1/traces` receives it: the first byte picks
//! the encoding (protobuf or JSON) and whether the rest is read as gzip. Decoded or refused,
//! never a panic, and every string kept from a span is bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelpin::traffic::otlp::{Encoding, decode};
use modelpin::traffic::spans::MAX_VALUE;

fuzz_target!(|data: &[u8]| {
    let Some((&how, body)) = data.split_first() else {
        return;
    };
    let encoding = if how & 1 == 0 {
        Encoding::Protobuf
    } else {
        Encoding::Json
    };
    let Ok(extracted) = decode(encoding, how & 2 != 0, body) else {
        return;
    };
    assert!(extracted.spans.len() as u64 <= extracted.seen);
    for span in &extracted.spans {
        let texts = [
            &span.service,
            &span.provider,
            &span.requested,
            &span.served,
            &span.server_address,
        ];
        for text in texts.into_iter().flatten() {
            assert!(text.chars().count() <= MAX_VALUE);
        }
        // Ids are hex of at most 32 bytes (protobuf) or bounded text (JSON).
        assert!(span.trace_id.chars().count() <= MAX_VALUE);
        assert!(span.span_id.chars().count() <= MAX_VALUE);
    }
});
