//! One HTTP/1.1 request on loopback, written by hand so a test controls every byte it sends (a
//! declared length that never arrives, a body a client library would refuse to build).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

/// One HTTP/1.1 answer: status, head and body (bytes: it may be gzip or protobuf).
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    /// A header's value, its name matched without regard to case.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One request with `Connection: close`; `headers` are whole header lines without their CRLF.
/// A refusal may close the connection before the whole body is written, so the answer is read
/// whatever writing the body did. `None` when nothing answers.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &[u8],
) -> Option<Reply> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let length = if body.is_empty() {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{length}");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some(Reply {
        status,
        head,
        body: raw[split + 4..].to_vec(),
    })
}

/// A plain GET: status, head and body as text.
pub fn get(port: u16, path: &str) -> Option<(u16, String, String)> {
    let reply = request(port, "GET", path, &[], &[])?;
    let body = reply.text();
    Some((reply.status, reply.head, body))
}

/// A GET with extra request header lines (each ending in `\r\n`).
pub fn fetch(port: u16, path: &str, headers: &str) -> Option<Reply> {
    let lines: Vec<&str> = headers.split_terminator("\r\n").collect();
    request(port, "GET", path, &lines, &[])
}

/// A POST; `headers` are whole lines without CRLF.
pub fn post(port: u16, path: &str, headers: &[&str], body: &[u8]) -> Option<Reply> {
    request(port, "POST", path, headers, body)
}

/// The target of a `Link: <…>; rel="next"` header line in `head`.
pub fn next_link(head: &str) -> Option<String> {
    let line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("link:"))?;
    let target = line.split_once('<')?.1.split_once('>')?.0;
    Some(target.to_owned())
}
