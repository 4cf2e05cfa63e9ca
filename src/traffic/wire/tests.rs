use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, span};
use prost::Message as _;

use super::{Limits, MAX_DEPTH, Message, Tally, WireError, measure};

const WIDE: Limits = Limits {
    spans: usize::MAX,
    decoded: usize::MAX,
};

/// A length-delimited field: `key` byte, length, payload.
fn wrap(key: u8, inner: &[u8]) -> Vec<u8> {
    let mut out = vec![key];
    prost::encoding::encode_varint(inner.len() as u64, &mut out);
    out.extend_from_slice(inner);
    out
}

/// `resource_spans { scope_spans { spans { <span> } } }`.
fn in_a_span(span: &[u8]) -> Vec<u8> {
    wrap(0x0a, &wrap(0x12, &wrap(0x12, span)))
}

fn size(message: Message) -> usize {
    message.size()
}

#[test]
fn every_repeated_field_is_counted_at_every_depth() {
    let kv = |key: &str| KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::ArrayValue(ArrayValue {
                values: vec![AnyValue::default(); 3],
            })),
        }),
        ..KeyValue::default()
    };
    let span = Span {
        name: "chat".to_owned(),
        attributes: vec![kv("a"), kv("b")],
        events: vec![span::Event {
            attributes: vec![kv("c")],
            ..span::Event::default()
        }],
        links: vec![span::Link::default(); 2],
        start_time_unix_nano: 7,
        flags: 1,
        ..Span::default()
    };
    let request = ExportTraceServiceRequest {
        resource_spans: vec![
            ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![span.clone(), span],
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            },
            ResourceSpans::default(),
        ],
    };
    let tally = measure(&request.encode_to_vec(), WIDE).unwrap();
    // Per span: 3 attributes (2 + 1 in its event) each with 3 array values, 1 event, 2 links.
    let per_span = 3 + 9 + 1 + 2;
    assert_eq!(tally.spans, 2);
    assert_eq!(tally.entries, 2 + 1 + 2 + 2 * per_span);
    let decoded = 2 * size(Message::ResourceSpans)
        + size(Message::ScopeSpans)
        + 2 * (size(Message::Span)
            + 3 * size(Message::KeyValue)
            + 9 * size(Message::AnyValue)
            + size(Message::Event)
            + 2 * size(Message::Link));
    assert_eq!(tally.decoded, decoded);
}

#[test]
fn empty_and_unknown_content() {
    let table: &[(&str, Vec<u8>, Tally)] = &[
        ("empty request", vec![], Tally::default()),
        (
            "two empty resource spans",
            [0x0a, 0x00, 0x0a, 0x00].to_vec(),
            Tally {
                spans: 0,
                entries: 2,
                decoded: 2 * size(Message::ResourceSpans),
            },
        ),
        (
            "unknown fields of every wire type are skipped",
            [
                &[0x10, 0x96, 0x01][..],               // 2: varint (unknown at the root)
                &[0x19, 1, 2, 3, 4, 5, 6, 7, 8],       // 3: fixed64
                &[0x25, 1, 2, 3, 4],                   // 4: fixed32
                &[0x2a, 0x02, 0x0a, 0x00],             // 5: bytes, not walked into
                &[0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01], // field 2^32-1 as a varint
            ]
            .concat(),
            Tally::default(),
        ),
        (
            "a single message repeated is merged and costs nothing itself",
            wrap(0x0a, &[0x0a, 0x00, 0x0a, 0x02, 0x0a, 0x00]),
            Tally {
                spans: 0,
                entries: 2,
                decoded: size(Message::ResourceSpans) + size(Message::KeyValue),
            },
        ),
        (
            "entity reference keys are strings, counted one each",
            wrap(
                0x0a,
                &wrap(0x0a, &wrap(0x1a, &[0x1a, 0x01, b'k', 0x22, 0x00])),
            ),
            Tally {
                spans: 0,
                entries: 4,
                decoded: size(Message::ResourceSpans)
                    + size(Message::EntityRef)
                    + 2 * std::mem::size_of::<String>(),
            },
        ),
    ];
    for (what, body, want) in table {
        assert_eq!(measure(body, WIDE).as_ref(), Ok(want), "{what}");
    }
}

#[test]
fn malformed_bodies_are_refused_with_what_and_where() {
    let ten_byte_varint = [
        0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    let table: &[(&str, Vec<u8>, &str, usize)] = &[
        ("a key cut short", vec![0x80], "a cut-short key", 0),
        (
            "a varint cut short",
            vec![0x10, 0x80],
            "a cut-short varint",
            1,
        ),
        (
            "a varint of eleven bytes",
            [&ten_byte_varint[..10], &[0x80, 0x01]].concat(),
            "a cut-short varint",
            1,
        ),
        (
            "a tenth varint byte past 64 bits",
            [&ten_byte_varint[..10], &[0x02]].concat(),
            "a cut-short varint",
            1,
        ),
        ("a length cut short", vec![0x0a], "a cut-short length", 1),
        (
            "a length past the end",
            vec![0x0a, 0x05, 0x00],
            "a field longer than what follows it",
            2,
        ),
        (
            "a nested length past its message",
            wrap(0x0a, &[0x12, 0x05, 0x00]),
            "a field longer than what follows it",
            4,
        ),
        (
            "fixed64 cut short",
            vec![0x11, 1, 2],
            "a cut-short fixed-width field",
            1,
        ),
        (
            "fixed32 cut short",
            vec![0x1d, 1],
            "a cut-short fixed-width field",
            1,
        ),
        ("field number 0", vec![0x02, 0x00], "field number 0", 1),
        (
            "a start-group wire type",
            vec![0x13],
            "an unsupported wire type",
            1,
        ),
        ("wire type 7", vec![0x17], "an unsupported wire type", 1),
        (
            "resource_spans as a varint",
            vec![0x08, 0x01],
            "a message field of the wrong wire type",
            1,
        ),
        (
            "span attributes as fixed32",
            in_a_span(&[0x4d, 1, 2, 3, 4]),
            "a message field of the wrong wire type",
            7,
        ),
    ];
    for (what, body, message, at) in table {
        assert_eq!(
            measure(body, WIDE),
            Err(WireError::Malformed(message, *at)),
            "{what}"
        );
    }
}

#[test]
fn nesting_is_bounded_like_prost() {
    // An attribute whose value nests array values `levels` deep.
    let nested = |levels: usize| {
        let mut value = Vec::new();
        for _ in 0..levels {
            // AnyValue.array_value { values { <value> } }
            value = wrap(0x2a, &wrap(0x0a, &value));
        }
        in_a_span(&wrap(0x4a, &wrap(0x12, &value)))
    };
    // Request → resource → scope → span → key-value → any-value is 5 levels below the root, and
    // each array level adds two.
    assert!(measure(&nested(40), WIDE).is_ok());
    let err = measure(&nested(MAX_DEPTH), WIDE).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::Malformed("nested deeper than 100 messages", _)
        ),
        "{err}"
    );
    assert!(ExportTraceServiceRequest::decode(nested(MAX_DEPTH).as_slice()).is_err());
}

#[test]
fn the_walk_stops_at_the_first_limit_passed() {
    let spans = in_a_span(&[]).repeat(3);
    let three = Limits {
        spans: 3,
        decoded: usize::MAX,
    };
    assert_eq!(measure(&spans, three).unwrap().spans, 3);
    let two = Limits { spans: 2, ..three };
    assert_eq!(measure(&spans, two), Err(WireError::TooManySpans(2)));
    let tight = Limits {
        spans: usize::MAX,
        decoded: 2 * size(Message::ResourceSpans),
    };
    let resources = [0x0a, 0x00].repeat(1000);
    assert_eq!(
        measure(&resources, tight),
        Err(WireError::TooLarge {
            limit: tight.decoded,
            entries: 3
        }),
        "stops at the third, without walking the rest"
    );
    // A limit passed comes before damage further on.
    let damaged = [&resources[..], &[0xff]].concat();
    assert!(matches!(
        measure(&damaged, tight),
        Err(WireError::TooLarge { .. })
    ));
}
