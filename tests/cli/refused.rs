//! A provider that cannot be reached is named for what it is: a refused connection is said to
//! be one at once, not retried for seconds and blamed on slowness; an HTML error page from a
//! proxy is summarised by its title, not pasted into the report.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::time::Duration;

use modelpin::provider::ProviderKind;

use crate::baseline::bare_lock;
use crate::harness::{Test, one_pin_with};
use crate::support::ports::ClosedPort;

const MODEL: &str = "acme-large-2024-08-06";

#[test]
fn a_refused_connection_is_named_at_once_and_not_retried_like_a_timeout() {
    let closed = ClosedPort::new();
    let test = Test::new()
        .pins(&one_pin_with(
            "timeout = \"5s\"\nbudget = \"60s\"",
            ProviderKind::OpenAi,
            &closed.url("/v1"),
            MODEL,
            "",
        ))
        .probes()
        .file("modelpin.lock", &bare_lock(&[("pin", MODEL)]));
    let run = test.run(&["check", "--format", "json", "--no-probes"]);
    run.code(3);
    let report = run.json();
    let pin = report.pin("pin");
    assert_eq!(pin.calls.retried, 0, "a refusal is not retried");
    let finding = pin.finding("inconclusive");
    assert!(
        finding
            .message
            .contains(&format!("127.0.0.1:{} refused the connection", closed.port)),
        "{}",
        finding.message
    );
    let action = finding.action.as_deref().unwrap();
    assert!(action.contains("`base_url`"), "{action}");
    for slow in ["timeout", "slow"] {
        assert!(!action.contains(slow), "not blamed on slowness: {action}");
    }
    let human = test.run(&["check", "--no-probes"]);
    assert!(
        human.stdout.contains(&format!(
            "127.0.0.1:{} refused the connection (nothing listens there) — not retried",
            closed.port
        )),
        "{}",
        human.stdout
    );
    // Said once, not three times over.
    assert_eq!(
        finding.message.matches("refused").count(),
        2,
        "{}",
        finding.message
    );
    assert!(
        !human.stderr.contains("/call"),
        "no latency line: {}",
        human.stderr
    );
}

/// A server that answers every request with nginx's HTML 502 page, until the test ends.
fn html_502() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 8192];
            let _ = stream.read(&mut buf);
            let body = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n";
            let _ = write!(
                stream,
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn an_html_error_page_is_summarised_by_its_status_and_title_not_pasted() {
    let port = html_502();
    let test = Test::new()
        .pins(&one_pin_with(
            "timeout = \"5s\"\nmax_attempts = 1",
            ProviderKind::OpenAi,
            &format!("http://127.0.0.1:{port}/v1"),
            MODEL,
            "",
        ))
        .probes()
        .file("modelpin.lock", &bare_lock(&[("pin", MODEL)]));
    let run = test.run(&["check", "--format", "json", "--no-probes"]);
    run.code(3);
    let finding = run
        .json()
        .pin("pin")
        .finding("inconclusive")
        .message
        .clone();
    assert!(
        finding.contains("(HTTP 502): HTML page: 502 Bad Gateway"),
        "{finding}"
    );
    assert!(!finding.contains('<'), "no markup: {finding}");
}
