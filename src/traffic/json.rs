//! GenAI spans read from an OTLP/JSON request body as it is parsed, without building the
//! document: the receiver's JSON path, held to the same span limit as protobuf.
//!
//! A parsed `serde_json::Value` takes many times its text (an object is a map node of hundreds
//! of bytes, `{}` is two), so 4 MiB of JSON could take hundreds of megabytes. Here each span is
//! read into the few attributes `spans::Fields` asks for and turned into a `GenAiSpan` at once;
//! everything else is skipped by the parser without allocating (`IgnoredAny`). Memory is the
//! spans kept (at most `limit`, each a few hundred bytes) plus one span's attributes at a time.
//! The spans are counted as they are read, and the read stops at the first past the limit.
//!
//! It reads what `spans::extract` reads from a parsed document, with the same leniency inside
//! the request object (a body that is not an object is refused): a member of the wrong type is
//! no member, a span that is not an object is a span without GenAI
//! attributes, a span whose `attributes` is not an array is malformed.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::spans::{Attr, Extracted, Fields, Ids, Read, bounded, is_read};

/// A `Visitor`'s answer to values of kinds it does not read: skipped whole, giving `$none`.
macro_rules! skip_scalars {
    ($none:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

macro_rules! skip_text {
    ($none:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

macro_rules! skip_arrays {
    ($none:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($none)
        }
    };
}

macro_rules! skip_objects {
    ($none:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($none)
        }
    };
}

/// The skips of a reader of objects.
macro_rules! not_objects {
    ($none:expr) => {
        skip_scalars!($none);
        skip_text!($none);
        skip_arrays!($none);
    };
}

/// The skips of a reader of arrays.
macro_rules! not_arrays {
    ($none:expr) => {
        skip_scalars!($none);
        skip_text!($none);
        skip_objects!($none);
    };
}

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("more than {0} spans")]
    TooManySpans(usize),
    #[error("{0}")]
    Syntax(serde_json::Error),
}

/// Every GenAI span in one OTLP/JSON `ExportTraceServiceRequest`, at most `limit` spans.
pub fn extract(body: &[u8], limit: usize) -> Result<Extracted, JsonError> {
    let mut reader = Reader {
        out: Extracted::default(),
        limit,
        over: false,
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let read = Root(&mut reader)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    match read {
        _ if reader.over => Err(JsonError::TooManySpans(limit)),
        Ok(()) => Ok(reader.out),
        Err(e) => Err(JsonError::Syntax(e)),
    }
}

struct Reader {
    out: Extracted,
    limit: usize,
    /// Set when the span limit was passed (the parse is then ended with an error).
    over: bool,
}

/// Text as the parser gives it: borrowed from the body unless it held escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, kept when it is a string.
struct MaybeText<'de>(Option<Cow<'de, str>>);

impl<'de> serde::Deserialize<'de> for MaybeText<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MaybeText<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(Some(Cow::Owned(s.to_owned()))))
            }
            skip_scalars!(MaybeText(None));
            skip_arrays!(MaybeText(None));
            skip_objects!(MaybeText(None));
        }
        d.deserialize_any(V)
    }
}

/// The document: `resourceSpans`.
struct Root<'r>(&'r mut Reader);

impl<'de> DeserializeSeed<'de> for Root<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Root<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an ExportTraceServiceRequest")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Text(key)) = map.next_key()? {
            if key == "resourceSpans" {
                map.next_value_seed(Each(&mut *self.0, Level::Resources))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    // Anything but an object is refused (the default): an OTLP/JSON request is one.
}

/// Which array `Each` walks.
#[derive(Clone, Copy)]
enum Level {
    Resources,
    Scopes,
    Spans,
}

/// The entries of one array (anything else in its place is no entry).
struct Each<'r>(&'r mut Reader, Level);

impl<'de> DeserializeSeed<'de> for Each<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Each<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let reader = self.0;
        loop {
            let more = match self.1 {
                Level::Resources => seq.next_element_seed(Resource(&mut *reader))?,
                Level::Scopes => seq.next_element_seed(Scope(&mut *reader))?,
                Level::Spans => {
                    let more = seq
                        .next_element_seed(SpanSeed)?
                        .map(|read| reader.keep(read));
                    if reader.out.seen > reader.limit as u64 {
                        reader.over = true;
                        // Any error ends the parse; `extract` reports the limit.
                        return Err(serde::de::Error::custom("span limit"));
                    }
                    more
                }
            };
            if more.is_none() {
                return Ok(());
            }
        }
    }
    not_arrays!(());
}

/// One `resourceSpans` entry: its service name and its scopes; the spans read before the
/// `resource` member (JSON members come in any order) get the service once it is known.
struct Resource<'r>(&'r mut Reader);

impl<'de> DeserializeSeed<'de> for Resource<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Resource<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a ResourceSpans")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let first = self.0.out.spans.len();
        let mut service = None;
        while let Some(Text(key)) = map.next_key()? {
            match key.as_ref() {
                "resource" => service = map.next_value_seed(ServiceOf)?,
                "scopeSpans" => map.next_value_seed(Each(&mut *self.0, Level::Scopes))?,
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        for span in &mut self.0.out.spans[first..] {
            span.service.clone_from(&service);
        }
        Ok(())
    }
    not_objects!(());
}

/// One `scopeSpans` entry: its spans.
struct Scope<'r>(&'r mut Reader);

impl<'de> DeserializeSeed<'de> for Scope<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scope<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a ScopeSpans")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Text(key)) = map.next_key()? {
            if key == "spans" {
                map.next_value_seed(Each(&mut *self.0, Level::Spans))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    not_objects!(());
}

/// The `service.name` of a `resource`: the first attribute of that key decides.
struct ServiceOf;

impl<'de> DeserializeSeed<'de> for ServiceOf {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ServiceOf {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Resource")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut service = None;
        while let Some(Text(key)) = map.next_key()? {
            if key == "attributes" {
                let attributes = map.next_value_seed(Attributes {
                    only: "service.name",
                })?;
                service = attributes.and_then(|kept| match kept.into_iter().next() {
                    Some((_, Value::Text(t))) => Some(bounded(&t)),
                    _ => None,
                });
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(service)
    }
    not_objects!(None);
}

/// One span: its ids and the attributes `Fields` reads, made into a `GenAiSpan` at once.
struct SpanSeed;

impl<'de> DeserializeSeed<'de> for SpanSeed {
    type Value = Read;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Read, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SpanSeed {
    type Value = Read;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Span")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
        let (mut trace_id, mut span_id) = (None, None);
        let mut attributes = Some(Vec::new());
        while let Some(Text(key)) = map.next_key()? {
            match key.as_ref() {
                "traceId" => trace_id = map.next_value::<MaybeText>()?.0,
                "spanId" => span_id = map.next_value::<MaybeText>()?.0,
                "attributes" => attributes = map.next_value_seed(Attributes { only: "" })?,
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        let Some(attributes) = attributes else {
            return Ok(Read::Malformed);
        };
        let mut fields = Fields::default();
        for (key, value) in &attributes {
            fields.offer(key, || value.attr());
        }
        let ids = Ids {
            trace_id: trace_id.map(|t| bounded(&t)).unwrap_or_default(),
            span_id: span_id.map(|t| bounded(&t)).unwrap_or_default(),
            service: None,
        };
        Ok(fields.into_span(ids))
    }
    not_objects!(Read::Other);
}

impl Reader {
    fn keep(&mut self, read: Read) {
        self.out.seen += 1;
        match read {
            Read::GenAi(span) => self.out.spans.push(span),
            Read::Other => {}
            Read::Malformed => self.out.malformed += 1,
        }
    }
}

/// An attribute value as kept between reading it and building the span.
enum Value<'de> {
    Text(Cow<'de, str>),
    Int(Option<u64>),
    Other,
}

impl Value<'_> {
    fn attr(&self) -> Attr<'_> {
        match self {
            Value::Text(t) => Attr::Text(t),
            Value::Int(n) => Attr::Int(*n),
            Value::Other => Attr::Other,
        }
    }
}

/// An `attributes` array: the first entry of each key `Fields` reads (or only of `only`),
/// so at most one per key is held; `None` when it is not an array.
struct Attributes {
    only: &'static str,
}

impl<'de> DeserializeSeed<'de> for Attributes {
    type Value = Option<Vec<(Cow<'de, str>, Value<'de>)>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Attributes {
    type Value = Option<Vec<(Cow<'de, str>, Value<'de>)>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of attributes")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut kept: Vec<(Cow<'de, str>, Value<'de>)> = Vec::new();
        while let Some(kv) = seq.next_element::<KeyValue<'de>>()? {
            let Some((key, value)) = kv.0 else { continue };
            let wanted = if self.only.is_empty() {
                is_read(&key)
            } else {
                key == self.only
            };
            if wanted && !kept.iter().any(|(k, _)| *k == key) {
                kept.push((key, value));
            }
        }
        Ok(Some(kept))
    }
    not_arrays!(None);
}

/// One attribute: a string `key` and a `value` (of any type); anything else is no attribute.
struct KeyValue<'de>(Option<(Cow<'de, str>, Value<'de>)>);

impl<'de> serde::Deserialize<'de> for KeyValue<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyValue<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a KeyValue")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyValue<'de>, A::Error> {
                let (mut key, mut value) = (None, None);
                while let Some(Text(k)) = map.next_key()? {
                    match k.as_ref() {
                        "key" => key = map.next_value::<MaybeText>()?.0,
                        "value" => value = Some(map.next_value::<AnyValue>()?.0),
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(KeyValue(key.zip(value)))
            }
            not_objects!(KeyValue(None));
        }
        d.deserialize_any(V)
    }
}

/// An `AnyValue`: `stringValue` when it is a string, else `intValue` (a string of digits or a
/// number; anything else present is an unreadable integer), else nothing GenAI reads.
struct AnyValue<'de>(Value<'de>);

impl<'de> serde::Deserialize<'de> for AnyValue<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AnyValue<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an AnyValue")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyValue<'de>, A::Error> {
                let (mut text, mut int) = (None, None);
                while let Some(Text(k)) = map.next_key()? {
                    match k.as_ref() {
                        "stringValue" => text = map.next_value::<MaybeText>()?.0,
                        "intValue" => int = Some(map.next_value::<Integer>()?.0),
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(AnyValue(match (text, int) {
                    (Some(t), _) => Value::Text(t),
                    (None, Some(n)) => Value::Int(n),
                    (None, None) => Value::Other,
                }))
            }
            not_objects!(AnyValue(Value::Other));
        }
        d.deserialize_any(V)
    }
}

/// An `intValue`: OTLP/JSON writes 64-bit integers as strings; a number is read too. Negative,
/// fractional or other values are `None`.
struct Integer(Option<u64>);

impl<'de> serde::Deserialize<'de> for Integer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Integer, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Integer;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_u64<E>(self, n: u64) -> Result<Integer, E> {
                Ok(Integer(Some(n)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Integer, E> {
                Ok(Integer(s.parse().ok()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Integer, E> {
                Ok(Integer(None))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Integer, E> {
                Ok(Integer(u64::try_from(n).ok()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Integer, E> {
                Ok(Integer(None))
            }
            fn visit_unit<E>(self) -> Result<Integer, E> {
                Ok(Integer(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Integer, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Integer(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Integer, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Integer(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::{JsonError, extract};

    /// The parsed-document reader and this one agree on every body, valid or not.
    fn same(body: &serde_json::Value) {
        let text = body.to_string();
        let streamed = extract(text.as_bytes(), 1_000).unwrap();
        let parsed = crate::traffic::spans::extract(body);
        assert_eq!(streamed.spans, parsed.spans, "{text}");
        assert_eq!(
            (streamed.seen, streamed.malformed),
            (parsed.seen, parsed.malformed),
            "{text}"
        );
    }

    #[test]
    fn reads_what_the_document_reader_reads() {
        let kv = |k: &str, v: serde_json::Value| serde_json::json!({"key": k, "value": v});
        let genai = serde_json::json!({"traceId": "ab", "spanId": "cd", "attributes": [
            kv("gen_ai.request.model", serde_json::json!({"stringValue": "gpt-4o"})),
            kv("gen_ai.request.model", serde_json::json!({"stringValue": "second"})),
            kv("gen_ai.response.model", serde_json::json!({"stringValue": "gpt-\u{1b}4o"})),
            kv("gen_ai.usage.input_tokens", serde_json::json!({"intValue": "17"})),
            kv("gen_ai.usage.output_tokens", serde_json::json!({"intValue": 3})),
            kv("gen_ai.provider.name", serde_json::json!({"intValue": -1})),
            kv("ignored", serde_json::json!({"arrayValue": {"values": [{}, {}]}})),
            {"key": 7, "value": null},
        ]});
        let service = |v: serde_json::Value| {
            serde_json::json!({"attributes": [
                {"key": "service.name", "value": v},
                {"key": "service.name", "value": {"stringValue": "second"}},
            ]})
        };
        for body in [
            serde_json::json!({"resourceSpans": [
                {"resource": service(serde_json::json!({"stringValue": "support"})),
                 "scopeSpans": [{"spans": [genai.clone(), 5, {"attributes": 3}, {}]}]},
                {"scopeSpans": [{"spans": [genai.clone()]}],
                 "resource": service(serde_json::json!({"stringValue": "late"}))},
                {"scopeSpans": [{"spans": [genai.clone()]}],
                 "resource": service(serde_json::json!({"intValue": 1}))},
                7, {"scopeSpans": 3}, {"scopeSpans": [{"spans": {"a": 1}}]},
            ]}),
            serde_json::json!({"resourceSpans": {"not": "an array"}}),
            serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [
                {"attributes": [kv("llm.model_name", serde_json::json!({"stringValue": "m"}))]}
            ]}]}]}),
        ] {
            same(&body);
        }
    }

    #[test]
    fn escaped_text_reads_like_plain_text() {
        let body = br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [
            {"key": "gen_ai.request.\u006dodel", "value": {"stringValue": "gpt-\u0034o"}}
        ]}]}]}]}"#;
        let got = extract(body, 10).unwrap();
        assert_eq!(got.spans[0].requested.as_deref(), Some("gpt-4o"));
    }

    #[test]
    fn spans_past_the_limit_end_the_read() {
        let body = |n: usize| {
            let spans = vec!["{}"; n].join(",");
            format!(r#"{{"resourceSpans": [{{"scopeSpans": [{{"spans": [{spans}]}}]}}]}}"#)
        };
        assert_eq!(extract(body(10).as_bytes(), 10).unwrap().seen, 10);
        let err = extract(body(11).as_bytes(), 10).unwrap_err();
        assert!(matches!(err, JsonError::TooManySpans(10)), "{err}");
        // Counted across scopes and resources alike.
        let split = r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{}, {}]}, {"spans": [{}]}]},
            {"scopeSpans": [{"spans": [{}]}]}]}"#;
        assert!(matches!(
            extract(split.as_bytes(), 3),
            Err(JsonError::TooManySpans(3))
        ));
    }

    #[test]
    fn broken_json_is_a_syntax_error() {
        for body in [
            &b"{\"resourceSpans\": ["[..],
            b"{} trailing",
            b"",
            b"{\"a\": 1,}",
            b"[1, 2]",
            b"\"text\"",
        ] {
            assert!(
                matches!(extract(body, 10), Err(JsonError::Syntax(_))),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(extract(deep.as_bytes(), 10).is_err(), "not a request");
        // Deep nesting where nothing is read is skipped without recursion.
        let inside = format!(r#"{{"x": {}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(extract(inside.as_bytes(), 10).unwrap().seen, 0);
    }
}
