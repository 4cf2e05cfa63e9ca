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

/// Text a decoding reads: the source itself, or an earlier decoding of it.
pub(super) trait Origin {
    fn bytes(&self) -> &[u8];
    /// The source range of positions `from..to` of this text.
    fn span(&self, from: usize, to: usize) -> (u32, u32);
}

/// The source as it came: each byte is its own range, nothing copied.
pub(super) struct Source<'a>(pub(super) &'a [u8]);

impl Origin for Source<'_> {
    fn bytes(&self) -> &[u8] {
        self.0
    }

    fn span(&self, from: usize, to: usize) -> (u32, u32) {
        (from as u32, to as u32)
    }
}

impl Origin for Stream {
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn span(&self, from: usize, to: usize) -> (u32, u32) {
        (self.start[from], self.end[to - 1])
    }
}

impl Stream {
    fn with_capacity(n: usize) -> Stream {
        Stream {
            bytes: Vec::with_capacity(n),
            start: Vec::with_capacity(n),
            end: Vec::with_capacity(n),
        }
    }

    /// Appends `bytes`, all coming from input positions `from..to` of `input`.
    fn push(&mut self, bytes: &[u8], input: &dyn Origin, from: usize, to: usize) {
        let (start, end) = input.span(from, to);
        for &b in bytes {
            self.bytes.push(b);
            self.start.push(start);
            self.end.push(end);
        }
    }
}

/// Calls `visit` with the source as it reads with JSON string escapes undone (up to
/// `ESCAPE_LEVELS` times), percent-encoding undone, and both in either order; only the decodings
/// the source could need are built, one after another, so at most three are held at once (each
/// nine bytes per source byte: a 4 MiB body costs at most about 110 MiB while it is searched).
pub(super) fn each_decoding(source: &[u8], visit: &mut dyn FnMut(&Stream)) {
    // A source longer than u32 offsets is never produced here (bodies are capped at 4 MiB).
    if source.len() >= u32::MAX as usize {
        return;
    }
    let origin = Source(source);
    if source.contains(&b'\\') {
        // Escaped twice (JSON quoted inside JSON, a `{:?}` of a body) reads once more; a third
        // level is as deep as text from outside is quoted here.
        let mut j = json_unescape(&origin);
        for _ in 0..ESCAPE_LEVELS {
            // `\u0025` is a percent sign: the percent-encoding may appear only once decoded.
            if j.bytes.contains(&b'%') {
                visit(&percent_decode(&j));
            }
            visit(&j);
            if !j.bytes.contains(&b'\\') {
                break;
            }
            j = json_unescape(&j);
        }
    }
    if source.contains(&b'%') {
        let p = percent_decode(&origin);
        if p.bytes.contains(&b'\\') {
            visit(&json_unescape(&p));
        }
        visit(&p);
    }
}

/// `\uXXXX` (surrogate pairs joined), `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` decoded;
/// anything else kept as it is.
fn json_unescape(input: &dyn Origin) -> Stream {
    let s = input.bytes();
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
pub(super) fn percent_decode(input: &dyn Origin) -> Stream {
    let s = input.bytes();
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
