//! An OTLP protobuf trace request measured on the wire before prost builds it: every entry of
//! every repeated field counted, and the memory the decoded request would take summed, so a body
//! whose decoded form would not fit the bound is refused before anything is allocated.
//!
//! A body's size alone does not bound its decoded size: an empty entry is two bytes on the wire
//! (tag and zero length) and a whole struct once decoded (`size_of::<Span>()` is 250 bytes and
//! more), so 4 MiB of empty `resource_spans` decoded to a quarter of a gigabyte. The walk follows
//! the message types of opentelemetry-proto (`opentelemetry/proto/trace/v1/trace.proto`,
//! `common/v1/common.proto`, `resource/v1/resource.proto`) into every field that holds a message
//! — resource spans, scopes, spans, attributes, events, links, status, array and key-value-list
//! values, entity references — and charges each repeated entry the size of the struct prost
//! builds for it. Fields it does not know are skipped by their wire type, as prost skips them.
//! Malformed input (a cut-short field, a varint over ten bytes, a wrong or unknown wire type, a
//! field number 0, nesting past prost's own limit of 100) is an error here, so a count is never
//! taken from a body the decoder would read differently.

use std::mem::size_of;

use opentelemetry_proto::tonic::common::v1::{
    AnyValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};

/// Nesting deeper than this is refused; prost's own recursion limit is 100 (`RECURSION_LIMIT`).
pub const MAX_DEPTH: usize = 100;

/// The message types of a trace request that hold other messages or repeated fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Message {
    Request,
    ResourceSpans,
    Resource,
    ScopeSpans,
    Scope,
    Span,
    Event,
    Link,
    Status,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
    EntityRef,
}

/// What one field number of a message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// A repeated message: each entry is one more struct in a `Vec`.
    Entries(Message),
    /// A single message (merged when repeated, so it costs no more).
    One(Message),
    /// A repeated string: one `String` per entry.
    Texts,
    /// A scalar, string or bytes, or a field prost does not know: skipped.
    Other,
}

impl Message {
    fn field(self, number: u64) -> Field {
        use Field::{Entries, One, Other, Texts};
        use Message as M;
        match (self, number) {
            (M::Request, 1) => Entries(M::ResourceSpans),
            (M::ResourceSpans, 1) => One(M::Resource),
            (M::ResourceSpans, 2) => Entries(M::ScopeSpans),
            (M::Resource | M::KeyValueList, 1)
            | (M::Scope | M::Event, 3)
            | (M::Span, 9)
            | (M::Link, 4) => Entries(M::KeyValue),
            (M::Resource, 3) => Entries(M::EntityRef),
            (M::ScopeSpans, 1) => One(M::Scope),
            (M::ScopeSpans, 2) => Entries(M::Span),
            (M::Span, 11) => Entries(M::Event),
            (M::Span, 13) => Entries(M::Link),
            (M::Span, 15) => One(M::Status),
            (M::KeyValue, 2) => One(M::AnyValue),
            (M::AnyValue, 5) => One(M::ArrayValue),
            (M::AnyValue, 6) => One(M::KeyValueList),
            (M::ArrayValue, 1) => Entries(M::AnyValue),
            (M::EntityRef, 3 | 4) => Texts,
            _ => Other,
        }
    }

    /// Bytes of the struct prost builds for one entry of this type.
    fn size(self) -> usize {
        match self {
            Message::Request => 0,
            Message::ResourceSpans => size_of::<ResourceSpans>(),
            Message::Resource => size_of::<Resource>(),
            Message::ScopeSpans => size_of::<ScopeSpans>(),
            Message::Scope => size_of::<InstrumentationScope>(),
            Message::Span => size_of::<Span>(),
            Message::Event => size_of::<span::Event>(),
            Message::Link => size_of::<span::Link>(),
            Message::Status => size_of::<Status>(),
            Message::KeyValue => size_of::<KeyValue>(),
            Message::AnyValue => size_of::<AnyValue>(),
            Message::ArrayValue => size_of::<Vec<AnyValue>>(),
            Message::KeyValueList => size_of::<KeyValueList>(),
            Message::EntityRef => size_of::<EntityRef>(),
        }
    }
}

/// What a request holds, counted on the wire.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Spans (entries of `scope_spans.spans`).
    pub spans: usize,
    /// Entries of every repeated field, spans included.
    pub entries: usize,
    /// Bytes of the structs those entries decode to; each `Vec` may hold up to twice this while
    /// it grows, and the strings and bytes inside add at most the body's own size.
    pub decoded: usize,
}

/// Limits a request is measured against; the walk stops at the first one passed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub spans: usize,
    pub decoded: usize,
}

/// Why a request was not measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("more than {0} spans")]
    TooManySpans(usize),
    /// Past the decoded-size limit after this many entries.
    #[error("more than {limit} bytes once decoded ({entries} entries counted so far)")]
    TooLarge { limit: usize, entries: usize },
    #[error("{0} at byte {1}")]
    Malformed(&'static str, usize),
}

/// Counts every repeated entry of an `ExportTraceServiceRequest`, refusing at the first limit
/// passed or the first malformed byte.
pub fn measure(request: &[u8], limits: Limits) -> Result<Tally, WireError> {
    let mut walk = Walk {
        start: request.as_ptr() as usize,
        limits,
        tally: Tally::default(),
    };
    walk.message(Message::Request, request, 0)?;
    Ok(walk.tally)
}

struct Walk {
    /// Where the body starts in memory: every slice walked is part of it, so a slice's start
    /// less this is its position in the body.
    start: usize,
    limits: Limits,
    tally: Tally,
}

impl Walk {
    fn message(&mut self, message: Message, mut buf: &[u8], depth: usize) -> Result<(), WireError> {
        if depth > MAX_DEPTH {
            return Err(self.malformed("nested deeper than 100 messages", buf));
        }
        while !buf.is_empty() {
            let key = varint(&mut buf).ok_or_else(|| self.malformed("a cut-short key", buf))?;
            let number = key >> 3;
            if number == 0 {
                return Err(self.malformed("field number 0", buf));
            }
            let field = message.field(number);
            match (key & 7, field) {
                (2, _) => {
                    let payload = self.delimited(&mut buf)?;
                    self.field(field, payload, depth)?;
                }
                (_, Field::Entries(_) | Field::One(_) | Field::Texts) => {
                    return Err(self.malformed("a message field of the wrong wire type", buf));
                }
                (0, _) => {
                    varint(&mut buf).ok_or_else(|| self.malformed("a cut-short varint", buf))?;
                }
                (1, _) => buf = self.skip(buf, 8)?,
                (5, _) => buf = self.skip(buf, 4)?,
                _ => return Err(self.malformed("an unsupported wire type", buf)),
            }
        }
        Ok(())
    }

    fn field(&mut self, field: Field, payload: &[u8], depth: usize) -> Result<(), WireError> {
        match field {
            Field::Entries(inner) => {
                self.entry(inner.size(), inner == Message::Span)?;
                self.message(inner, payload, depth + 1)
            }
            Field::One(inner) => self.message(inner, payload, depth + 1),
            Field::Texts => self.entry(size_of::<String>(), false),
            Field::Other => Ok(()),
        }
    }

    fn entry(&mut self, size: usize, span: bool) -> Result<(), WireError> {
        let tally = &mut self.tally;
        tally.entries += 1;
        tally.decoded += size;
        if span {
            tally.spans += 1;
            if tally.spans > self.limits.spans {
                return Err(WireError::TooManySpans(self.limits.spans));
            }
        }
        if tally.decoded > self.limits.decoded {
            return Err(WireError::TooLarge {
                limit: self.limits.decoded,
                entries: tally.entries,
            });
        }
        Ok(())
    }

    /// A length-delimited payload from the front of `buf`, which moves past it.
    fn delimited<'a>(&self, buf: &mut &'a [u8]) -> Result<&'a [u8], WireError> {
        let len = varint(buf).ok_or_else(|| self.malformed("a cut-short length", buf))?;
        let len =
            usize::try_from(len).map_err(|_| self.malformed("a length past the body", buf))?;
        let payload = buf
            .get(..len)
            .ok_or_else(|| self.malformed("a field longer than what follows it", buf))?;
        *buf = &buf[len..];
        Ok(payload)
    }

    fn skip<'a>(&self, buf: &'a [u8], n: usize) -> Result<&'a [u8], WireError> {
        buf.get(n..)
            .ok_or_else(|| self.malformed("a cut-short fixed-width field", buf))
    }

    /// `what`, at the byte of the body `rest` starts at.
    fn malformed(&self, what: &'static str, rest: &[u8]) -> WireError {
        WireError::Malformed(what, (rest.as_ptr() as usize).saturating_sub(self.start))
    }
}

/// A protobuf varint from the front of `buf`, which moves past it; `None` when it is cut short
/// or runs past ten bytes or 64 bits.
fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, byte) in buf.iter().enumerate().take(10) {
        if i == 9 && *byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *buf = &buf[i + 1..];
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests;
