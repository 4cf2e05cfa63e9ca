//! The samples of a version 3 `modelpin.lock` as JSON values: a blob (standard base64 of raw
//! DEFLATE of compact JSON, `src/lock/disk.rs`) decoded to the value it holds, and a value
//! encoded back, so a test reads or tampers with the raw samples as it did when they were inline.

use std::io::{Read as _, Write as _};

use base64::Engine as _;
use serde_json::Value;

/// The value a sample blob holds: a probe's `{"outputs", "completion_tokens"}`, a first-token
/// input's `{"tokens", "top"}`.
pub fn unpack(blob: &Value) -> Value {
    let blob = blob
        .as_str()
        .unwrap_or_else(|| panic!("a sample blob is a string, not {blob}"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .expect("a sample blob is base64");
    let mut json = Vec::new();
    flate2::read::DeflateDecoder::new(bytes.as_slice())
        .read_to_end(&mut json)
        .expect("a sample blob is raw DEFLATE");
    serde_json::from_slice(&json).expect("a sample blob holds JSON")
}

/// The blob holding `value`, as modelpin writes one.
pub fn pack(value: &Value) -> Value {
    pack_bytes(&serde_json::to_vec(value).unwrap())
}

/// A blob whose DEFLATE stream expands to `bytes`, JSON or not.
pub fn pack_bytes(bytes: &[u8]) -> Value {
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    deflate.write_all(bytes).unwrap();
    let compressed = deflate.finish().unwrap();
    Value::String(base64::engine::general_purpose::STANDARD.encode(compressed))
}
