//! OTLP/HTTP trace request bodies in and responses out, as pure functions over bytes: the
//! daemon's receiver only adds sockets, limits and tokens around them.
//!
//! A request is `application/x-protobuf` or `application/json`, optionally gzip-compressed
//! (OTLP/HTTP 1.x). A body is held to `MAX_BODY` bytes as sent and again once decompressed
//! (decompression stops there, so a small gzip bomb is refused instead of filling memory). Its
//! size alone does not bound what decoding it takes, so both encodings are held to `MAX_SPANS`,
//! counted before or while reading: protobuf is measured on the wire first (`wire`: every
//! repeated entry counted, and the decoded structs held to `MAX_DECODED` bytes), JSON is read as
//! it is parsed without building the document (`json`). Both carry nesting limits (the wire walk
//! and prost: 100 levels, serde_json: 128), so deep `AnyValue` nesting is an error, not a stack
//! overflow. Responses use the request's encoding: a success with `partial_success`
//! naming the spans that could not be read, or a `google.rpc.Status` with the reason.

use std::io::Read as _;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message as _;

use super::spans::{Extracted, bounded};
use super::wire::{Limits, WireError};

/// Largest request body accepted, as sent and once decompressed.
pub const MAX_BODY: usize = 4 << 20;

/// Most spans read from one request, in either encoding (OTLP exporters send a few hundred to a
/// few thousand: the SDKs' batch processors default to 512).
pub const MAX_SPANS: usize = 50_000;

/// Most bytes the structs of one decoded protobuf request may take, summed on the wire before
/// decoding (`wire::Tally::decoded`). The densest real bodies (many short attributes) take about
/// eight times their size, so a full 4 MiB body of real spans fits; 4 MiB of empty entries
/// (two bytes each, a whole struct decoded) does not.
pub const MAX_DECODED: usize = 32 << 20;

/// The two OTLP/HTTP encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` names (parameters such as `charset` are ignored).
    #[must_use]
    pub fn from_content_type(value: &str) -> Option<Encoding> {
        let media = value.split(';').next().unwrap_or_default().trim();
        if media.eq_ignore_ascii_case("application/x-protobuf") {
            Some(Encoding::Protobuf)
        } else if media.eq_ignore_ascii_case("application/json") {
            Some(Encoding::Json)
        } else {
            None
        }
    }

    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// Why a request body was refused; each maps to one HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum Rejected {
    #[error("unsupported content type `{0}`: send application/x-protobuf or application/json")]
    ContentType(String),
    #[error("unsupported content encoding `{0}`: send gzip or an uncompressed body")]
    ContentEncoding(String),
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the request body did not arrive in full")]
    Incomplete,
    #[error(
        "the request body did not arrive within {0} s or came slower than {1} bytes per second: send it faster or in smaller batches"
    )]
    TooSlow(u64, usize),
    #[error("the request holds more than {0} spans: send smaller batches")]
    TooManySpans(usize),
    #[error(
        "the request would take more than {} MiB once decoded ({entries} entries of repeated fields counted before the limit: spans, attributes, events, links, values): send smaller batches",
        limit >> 20
    )]
    TooManyEntries { limit: usize, entries: usize },
    #[error("the body is not valid gzip: {0}")]
    Gzip(String),
    #[error("the body is not an OTLP ExportTraceServiceRequest in protobuf: {0}")]
    Protobuf(String),
    #[error("the body is not an OTLP ExportTraceServiceRequest in JSON: {0}")]
    Json(String),
}

impl Rejected {
    /// The HTTP status for this refusal.
    #[must_use]
    pub fn status(&self) -> u16 {
        match self {
            Rejected::ContentType(_) | Rejected::ContentEncoding(_) => 415,
            Rejected::TooLarge(_) | Rejected::TooManySpans(_) | Rejected::TooManyEntries { .. } => {
                413
            }
            Rejected::TooSlow(..) => 408,
            Rejected::Incomplete
            | Rejected::Gzip(_)
            | Rejected::Protobuf(_)
            | Rejected::Json(_) => 400,
        }
    }
}

/// Whether a `Content-Encoding` header asks for gzip; absent or `identity` is plain.
pub fn gzipped(content_encoding: Option<&str>) -> Result<bool, Rejected> {
    match content_encoding.map(str::trim) {
        None | Some("") => Ok(false),
        Some(e) if e.eq_ignore_ascii_case("identity") => Ok(false),
        Some(e) if e.eq_ignore_ascii_case("gzip") => Ok(true),
        Some(other) => Err(Rejected::ContentEncoding(bounded(other))),
    }
}

/// The GenAI spans of one request body.
pub fn decode(encoding: Encoding, gzip: bool, body: &[u8]) -> Result<Extracted, Rejected> {
    let plain;
    let bytes = if gzip {
        plain = gunzip(body, MAX_BODY)?;
        plain.as_slice()
    } else {
        body
    };
    match encoding {
        Encoding::Protobuf => {
            measure(bytes)?;
            ExportTraceServiceRequest::decode(bytes)
                .map(|request| super::proto::extract(&request))
                .map_err(|e| Rejected::Protobuf(e.to_string()))
        }
        Encoding::Json => super::json::extract(bytes, MAX_SPANS).map_err(|e| match e {
            super::json::JsonError::TooManySpans(n) => Rejected::TooManySpans(n),
            super::json::JsonError::Syntax(e) => Rejected::Json(e.to_string()),
        }),
    }
}

/// A protobuf request measured on the wire against `MAX_SPANS` and `MAX_DECODED`.
fn measure(bytes: &[u8]) -> Result<super::wire::Tally, Rejected> {
    let limits = Limits {
        spans: MAX_SPANS,
        decoded: MAX_DECODED,
    };
    super::wire::measure(bytes, limits).map_err(|e| match e {
        WireError::TooManySpans(n) => Rejected::TooManySpans(n),
        WireError::TooLarge { limit, entries } => Rejected::TooManyEntries { limit, entries },
        malformed @ WireError::Malformed(..) => Rejected::Protobuf(malformed.to_string()),
    })
}

fn gunzip(body: &[u8], max: usize) -> Result<Vec<u8>, Rejected> {
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(max));
    flate2::read::GzDecoder::new(body)
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Rejected::Gzip(e.to_string()))?;
    if out.len() > max {
        return Err(Rejected::TooLarge(max));
    }
    Ok(out)
}

/// A success response; `rejected` spans could not be read and `message` says why.
#[must_use]
pub fn accepted(encoding: Encoding, rejected: u64, message: &str) -> Vec<u8> {
    let rejected_spans = i64::try_from(rejected).unwrap_or(i64::MAX);
    match encoding {
        Encoding::Protobuf => ExportTraceServiceResponse {
            partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
                rejected_spans,
                error_message: message.to_owned(),
            }),
        }
        .encode_to_vec(),
        Encoding::Json if rejected == 0 => b"{}".to_vec(),
        Encoding::Json => serde_json::json!({"partialSuccess": {
            "rejectedSpans": rejected_spans.to_string(),
            "errorMessage": message,
        }})
        .to_string()
        .into_bytes(),
    }
}

/// `google.rpc.Status`, the body OTLP/HTTP gives a refused request.
#[derive(Clone, PartialEq, prost::Message)]
struct Status {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// gRPC's `INVALID_ARGUMENT` and `RESOURCE_EXHAUSTED`, the codes the Status carries.
#[must_use]
pub fn refused(encoding: Encoding, status: u16, message: &str) -> Vec<u8> {
    let code = if status == 429 { 8 } else { 3 };
    match encoding {
        Encoding::Protobuf => Status {
            code,
            message: message.to_owned(),
        }
        .encode_to_vec(),
        Encoding::Json => serde_json::json!({"code": code, "message": message})
            .to_string()
            .into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use prost::Message as _;

    use super::{Encoding, MAX_BODY, Rejected, accepted, decode, gzipped};
    use crate::traffic::proto::tests::{request, text};

    fn wrap(tag: u8, inner: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        prost::encoding::encode_varint(inner.len() as u64, &mut out);
        out.extend_from_slice(inner);
        out
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn content_types_and_encodings() {
        let ct = Encoding::from_content_type;
        assert_eq!(ct("application/x-protobuf"), Some(Encoding::Protobuf));
        assert_eq!(ct("Application/JSON; charset=utf-8"), Some(Encoding::Json));
        assert_eq!(ct("text/plain"), None);
        assert!(gzipped(Some("gzip")).unwrap());
        assert!(!gzipped(None).unwrap());
        assert_eq!(gzipped(Some("br")).unwrap_err().status(), 415);
    }

    #[test]
    fn gzip_protobuf_decodes() {
        let body = request(vec![text("gen_ai.request.model", "gpt-4o")]).encode_to_vec();
        let got = decode(Encoding::Protobuf, true, &gzip(&body)).unwrap();
        assert_eq!((got.seen, got.spans.len()), (2, 1));
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_cap() {
        let bomb = gzip(&vec![0u8; MAX_BODY + 1024]);
        assert!(bomb.len() < 64 * 1024);
        let err = decode(Encoding::Protobuf, true, &bomb).unwrap_err();
        assert!(matches!(err, Rejected::TooLarge(_)), "{err}");
    }

    /// A request of one resource and one scope holding `spans` empty spans (two bytes each).
    fn empty_spans(spans: usize) -> Vec<u8> {
        let scope = [0x12, 0x00].repeat(spans);
        wrap(0x0a, &wrap(0x12, &scope))
    }

    #[test]
    fn spans_are_counted_on_the_wire_before_decoding() {
        let many = empty_spans(super::MAX_SPANS + 1);
        assert!(many.len() < 128 * 1024);
        for gzip_it in [false, true] {
            let body = if gzip_it { gzip(&many) } else { many.clone() };
            let err = decode(Encoding::Protobuf, gzip_it, &body).unwrap_err();
            assert!(matches!(err, Rejected::TooManySpans(_)), "{err}");
            assert_eq!(err.status(), 413);
        }
        let fine = decode(Encoding::Protobuf, false, &empty_spans(super::MAX_SPANS)).unwrap();
        assert_eq!(fine.seen, super::MAX_SPANS as u64);
    }

    /// Regression: 4 MiB of empty `resource_spans` (two bytes each, no span at all) decoded to
    /// a quarter of a gigabyte.
    #[test]
    fn empty_entries_of_any_repeated_field_are_refused_before_decoding() {
        let resources = [0x0a, 0x00].repeat(2 << 20);
        let attributes = wrap(
            0x0a,
            &wrap(0x12, &wrap(0x12, &[0x4a, 0x00].repeat(1 << 20))),
        );
        for body in [resources, attributes] {
            let err = decode(Encoding::Protobuf, false, &body).unwrap_err();
            assert!(matches!(err, Rejected::TooManyEntries { .. }), "{err}");
            assert_eq!(err.status(), 413);
            assert!(err.to_string().contains("32 MiB once decoded"), "{err}");
        }
    }

    #[test]
    fn json_is_held_to_the_same_span_limit() {
        let spans = vec!["{}"; super::MAX_SPANS + 1].join(",");
        let body = format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{spans}]}}]}}]}}"#);
        let err = decode(Encoding::Json, false, body.as_bytes()).unwrap_err();
        assert!(
            matches!(err, Rejected::TooManySpans(super::MAX_SPANS)),
            "{err}"
        );
        assert_eq!(err.status(), 413);
    }

    #[test]
    fn gzipped_protobuf_is_held_to_the_uncompressed_cap() {
        // One span with a 5 MiB name: small gzipped, within the span count, over the cap.
        let mut name = vec![0x2a];
        prost::encoding::encode_varint(5 << 20, &mut name);
        name.extend(std::iter::repeat_n(b'a', 5 << 20));
        let body = gzip(&wrap(0x0a, &wrap(0x12, &wrap(0x12, &name))));
        let err = decode(Encoding::Protobuf, true, &body).unwrap_err();
        assert!(matches!(err, Rejected::TooLarge(_)), "{err}");
    }

    #[test]
    fn gzipped_json_is_held_to_the_uncompressed_cap() {
        let document = format!("[{}0]", "0,".repeat(3 << 20));
        let err = decode(Encoding::Json, true, &gzip(document.as_bytes())).unwrap_err();
        assert!(matches!(err, Rejected::TooLarge(_)), "{err}");
    }

    #[test]
    fn garbage_and_deep_nesting_are_400_not_a_crash() {
        let deep_json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            decode(Encoding::Json, false, deep_json.as_bytes())
                .unwrap_err()
                .status(),
            400
        );
        // An attribute whose AnyValue nests key-value lists 2,000 deep, far past prost's
        // recursion limit, built as bytes (a struct that deep would overflow while encoding).
        let mut deep = vec![0x0a, 1, b'x']; // AnyValue { string_value: "x" }
        for tag in std::iter::repeat_n([0x12u8, 0x0a, 0x32], 2_000).flatten() {
            deep = wrap(tag, &deep); // KeyValue.value, KeyValueList.values, AnyValue.kvlist
        }
        for tag in [0x12, 0x4a, 0x12, 0x12, 0x0a] {
            deep = wrap(tag, &deep); // .. Span.attributes, ScopeSpans, ResourceSpans, request
        }
        assert!(decode(Encoding::Protobuf, false, &deep).is_err());
        assert_eq!(
            decode(Encoding::Protobuf, false, b"\xff\xff\xff")
                .unwrap_err()
                .status(),
            400
        );
        assert_eq!(
            decode(Encoding::Protobuf, true, b"not gzip")
                .unwrap_err()
                .status(),
            400
        );
    }

    proptest::proptest! {
        /// A valid request with bytes overwritten, in either encoding, decodes or is refused;
        /// it never panics.
        #[test]
        fn damaged_requests_never_panic(
            edits in proptest::collection::vec((0usize..4096, proptest::num::u8::ANY), 0..16),
            json in proptest::bool::ANY,
        ) {
            let valid = request(vec![
                text("gen_ai.request.model", "gpt-4o"),
                text("gen_ai.response.model", "gpt-4o-mini"),
            ]);
            let (encoding, mut bytes) = if json {
                let document = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
                    {"traceId": "ab", "attributes": [
                        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}}
                    ]}]}]}]});
                (Encoding::Json, document.to_string().into_bytes())
            } else {
                (Encoding::Protobuf, valid.encode_to_vec())
            };
            for (at, byte) in edits {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            let _ = decode(encoding, false, &bytes);
            let _ = decode(encoding, true, &gzip(&bytes));
        }
    }

    #[test]
    fn partial_success_in_the_request_encoding() {
        assert_eq!(accepted(Encoding::Json, 0, ""), b"{}");
        let json: serde_json::Value =
            serde_json::from_slice(&accepted(Encoding::Json, 2, "2 spans unreadable")).unwrap();
        assert_eq!(json["partialSuccess"]["rejectedSpans"], "2");
        let proto = accepted(Encoding::Protobuf, 2, "x");
        let decoded =
            opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse::decode(
                proto.as_slice(),
            )
            .unwrap();
        assert_eq!(decoded.partial_success.unwrap().rejected_spans, 2);
    }
}
