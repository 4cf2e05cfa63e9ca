//! Email through lettre's async SMTP: `smtps://` implicit TLS, `smtp://` with STARTTLS required,
//! plain SMTP only to loopback. Credentials come from the variables the channel names.

use std::time::Duration;

use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue, MIME_VERSION_1_0};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::alert::Notification;

/// How an SMTP attempt ended, in the classifier's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmtpOutcome {
    Sent,
    /// A 5xx, a malformed message, a server without what the client requires (STARTTLS, an AUTH
    /// mechanism) or a certificate it refuses: retrying cannot help.
    Permanent(String),
    /// A 4xx, or the connection failed before the server accepted anything.
    Transient(String),
    /// The exchange broke after the message may have been accepted.
    Unknown(String),
}

pub struct EmailChannel<'a> {
    pub smtp: &'a str,
    pub from: &'a str,
    pub to: &'a [String],
    pub username: Option<String>,
    pub password: Option<String>,
}

pub async fn send(channel: &EmailChannel<'_>, n: &Notification, timeout: Duration) -> SmtpOutcome {
    let message = match build(channel, n) {
        Ok(m) => m,
        Err(e) => return SmtpOutcome::Permanent(e),
    };
    let transport = match transport(channel, timeout) {
        Ok(t) => t,
        Err(e) => return SmtpOutcome::Permanent(e),
    };
    match tokio::time::timeout(timeout, transport.send(message)).await {
        Ok(Ok(_)) => SmtpOutcome::Sent,
        Ok(Err(e)) if e.is_permanent() => SmtpOutcome::Permanent(e.to_string()),
        // The client refusing what the server offers (no STARTTLS, no usable AUTH mechanism) or
        // a certificate it cannot accept: the same server answers the same way next time.
        Ok(Err(e)) if e.is_client() || e.is_tls() => SmtpOutcome::Permanent(e.to_string()),
        Ok(Err(e)) if e.is_transient() => SmtpOutcome::Transient(e.to_string()),
        Ok(Err(e)) if e.is_timeout() || broke_in_transit(&e) => SmtpOutcome::Unknown(e.to_string()),
        Ok(Err(e)) => SmtpOutcome::Transient(e.to_string()),
        Err(_) => SmtpOutcome::Unknown(format!(
            "no answer from {} within {}",
            channel.smtp,
            crate::transport::human_duration(timeout)
        )),
    }
}

/// Whether the connection broke under the SMTP exchange (an I/O error other than finding no
/// server), maybe after the server took the message.
fn broke_in_transit(e: &lettre::transport::smtp::Error) -> bool {
    use std::io::ErrorKind;
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return !matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::HostUnreachable
                    | ErrorKind::NetworkUnreachable
                    | ErrorKind::AddrNotAvailable
            );
        }
        source = s.source();
    }
    false
}

/// `Auto-Submitted` (RFC 3834), which lettre has no type for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AutoSubmitted(String);

impl AutoSubmitted {
    fn auto_generated() -> AutoSubmitted {
        AutoSubmitted("auto-generated".to_owned())
    }
}

impl Header for AutoSubmitted {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("Auto-Submitted")
    }

    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(AutoSubmitted(s.trim().to_owned()))
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

fn build(channel: &EmailChannel<'_>, n: &Notification) -> Result<Message, String> {
    let mut builder = Message::builder()
        .from(
            channel
                .from
                .parse()
                .map_err(|e| format!("from `{}`: {e}", channel.from))?,
        )
        .subject(n.headline())
        // The notification id: a receiver (or a person) can drop a duplicate delivery.
        .message_id(Some(format!("<{}@modelpin>", n.id)))
        .header(MIME_VERSION_1_0)
        // RFC 3834: machine-sent, so auto-responders (vacation replies) stay quiet.
        .header(AutoSubmitted::auto_generated())
        .header(ContentType::TEXT_PLAIN);
    for to in channel.to {
        builder = builder.to(to.parse().map_err(|e| format!("to `{to}`: {e}"))?);
    }
    builder.body(n.text()).map_err(|e| e.to_string())
}

fn transport(
    channel: &EmailChannel<'_>,
    timeout: Duration,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let url =
        reqwest::Url::parse(channel.smtp).map_err(|e| format!("smtp `{}`: {e}", channel.smtp))?;
    let host = url
        .host_str()
        .ok_or_else(|| format!("smtp `{}` names no host", channel.smtp))?;
    let mut builder = match url.scheme() {
        "smtps" => AsyncSmtpTransport::<Tokio1Executor>::relay(host).map_err(|e| e.to_string())?,
        "smtp" if is_loopback(host) => {
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        }
        "smtp" => {
            AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host).map_err(|e| e.to_string())?
        }
        other => {
            return Err(format!(
                "unsupported scheme `{other}` (smtp:// or smtps://)"
            ));
        }
    };
    if let Some(port) = url.port() {
        builder = builder.port(port);
    }
    if let (Some(user), Some(pass)) = (&channel.username, &channel.password) {
        builder = builder.credentials(Credentials::new(user.clone(), pass.clone()));
    }
    Ok(builder.timeout(Some(timeout)).build())
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{EmailChannel, SmtpOutcome, send};
    use crate::alert::tests::notification;

    async fn send_to(smtp: &str) -> SmtpOutcome {
        let to = ["ops@example.com".to_owned()];
        let channel = EmailChannel {
            smtp,
            from: "modelpin@example.com",
            to: &to,
            username: None,
            password: None,
        };
        send(&channel, &notification(Vec::new()), Duration::from_secs(10)).await
    }

    /// A server on loopback that greets, reads the client's first command and then hangs up:
    /// cleanly (FIN) or by a reset (RST).
    async fn hanging_up(reset: bool) -> (u16, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut socket, _) = listener.accept().await.unwrap();
            socket.write_all(b"220 mx ESMTP\r\n").await.unwrap();
            let mut buffer = [0u8; 512];
            let _ = socket.read(&mut buffer).await;
            if reset {
                socket.set_zero_linger().unwrap();
            }
        });
        (port, server)
    }

    /// Nobody listening, or a server hanging up before it took anything: a retry is safe
    /// (transient). A connection reset mid-exchange: the server may have taken the message
    /// (unknown). Both are retried; the outcome says which it was.
    #[tokio::test]
    async fn no_server_or_a_hang_up_is_transient_and_a_reset_is_unknown() {
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let outcome = send_to(&format!("smtp://127.0.0.1:{closed}")).await;
        assert!(matches!(outcome, SmtpOutcome::Transient(_)), "{outcome:?}");
        for (reset, unknown) in [(false, false), (true, true)] {
            let (port, server) = hanging_up(reset).await;
            let outcome = send_to(&format!("smtp://127.0.0.1:{port}")).await;
            server.await.unwrap();
            assert_eq!(
                matches!(outcome, SmtpOutcome::Unknown(_)),
                unknown,
                "reset {reset}: {outcome:?}"
            );
        }
    }
}
