//! The text as a reader would decode it: JSON string escapes and percent-encoding undone, each
//! decoded byte remembering the source bytes it came from, so a match found in the decoded text
//! masks exactly the escaped spelling in the source.

/// How many times JSON escapes are undone in a row.
const ESCAPE_LEVELS: usize = 3;

/// Bytes decoded from a source, each with the source range it came from.
pub(super) struct Stream {
    pub(super) bytes: Vec<u8>,
    pub(super) start: Vec<u32>,
    pub(super) end: Vec<u32>,
}

impl Stream {
    pub(super) fn identity(source: &[u8]) -> Stream {
        let n = source.len() as u32;
        Stream {
            bytes: source.to_vec(),
            start: (0..n).collect(),
            end: (1..=n).collect(),
        }
    }

    fn with_capacity(n: usize) -> Stream {
        Stream {
            bytes: Vec::with_capacity(n),
            start: Vec::with_capacity(n),
            end: Vec::with_capacity(n),
        }
    }

    /// Appends `bytes`, all coming from input positions `from..to` of `input`.
    fn push(&mut self, bytes: &[u8], input: &Stream, from: usize, to: usize) {
        for &b in bytes {
            self.bytes.push(b);
            self.start.push(input.start[from]);
            self.end.push(input.end[to - 1]);
        }
    }
}

/// The source as it reads with JSON string escapes undone, percent-encoding undone, and both
/// (in either order): only the decodings the source could need are built.
pub(super) fn decoded_streams(source: &[u8]) -> Vec<Stream> {
    // A source longer than u32 offsets is never produced here (bodies are capped at 4 MiB).
    if source.len() >= u32::MAX as usize {
        return Vec::new();
    }
    let (json, percent) = (source.contains(&b'\\'), source.contains(&b'%'));
    let mut streams = Vec::new();
    if !json && !percent {
        return streams;
    }
    let identity = Stream::identity(source);
    if json {
        // Escaped twice (JSON quoted inside JSON, a `{:?}` of a body) reads once more; a third
        // level is as deep as text from outside is quoted here.
        let mut j = json_unescape(&identity);
        for _ in 0..ESCAPE_LEVELS {
            // `\u0025` is a percent sign: the percent-encoding may appear only once decoded.
            if j.bytes.contains(&b'%') {
                streams.push(percent_decode(&j));
            }
            let again = j.bytes.contains(&b'\\').then(|| json_unescape(&j));
            streams.push(j);
            match again {
                Some(next) => j = next,
                None => break,
            }
        }
    }
    if percent {
        let p = percent_decode(&identity);
        if p.bytes.contains(&b'\\') {
            streams.push(json_unescape(&p));
        }
        streams.push(p);
    }
    streams
}

/// `\uXXXX` (surrogate pairs joined), `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` decoded;
/// anything else kept as it is.
fn json_unescape(input: &Stream) -> Stream {
    let s = &input.bytes;
    let mut out = Stream::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' && i + 1 < s.len() {
            let simple = match s[i + 1] {
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'/' => Some(b'/'),
                b'b' => Some(8),
                b'f' => Some(12),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                _ => None,
            };
            if let Some(b) = simple {
                out.push(&[b], input, i, i + 2);
                i += 2;
                continue;
            }
            if let Some((c, used)) = unicode_escape(&s[i..]) {
                let mut buf = [0u8; 4];
                out.push(c.encode_utf8(&mut buf).as_bytes(), input, i, i + used);
                i += used;
                continue;
            }
        }
        out.push(&[s[i]], input, i, i + 1);
        i += 1;
    }
    out
}

/// A `\uXXXX` escape (or a surrogate pair of two) at the start of `s`: the character and the
/// bytes it took.
fn unicode_escape(s: &[u8]) -> Option<(char, usize)> {
    let unit = |at: usize| -> Option<u32> {
        let digits = s.get(at..at + 6)?;
        if digits[0] != b'\\' || digits[1] != b'u' {
            return None;
        }
        let hex = std::str::from_utf8(&digits[2..]).ok()?;
        u32::from_str_radix(hex, 16).ok()
    };
    let first = unit(0)?;
    if (0xD800..0xDC00).contains(&first) {
        let second = unit(6).filter(|u| (0xDC00..0xE000).contains(u))?;
        let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return Some((char::from_u32(c)?, 12));
    }
    Some((char::from_u32(first)?, 6))
}

/// `%XX` (either case) decoded to its byte; anything else kept as it is.
pub(super) fn percent_decode(input: &Stream) -> Stream {
    let s = &input.bytes;
    let mut out = Stream::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%'
            && let Some(byte) = s
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(&[byte], input, i, i + 3);
            i += 3;
            continue;
        }
        out.push(&[s[i]], input, i, i + 1);
        i += 1;
    }
    out
}
