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
        Ok(Err(e)) if e.is_timeout() || e.to_string().contains("onnection") => {
            SmtpOutcome::Unknown(e.to_string())
        }
        Ok(Err(e)) => SmtpOutcome::Transient(e.to_string()),
        Err(_) => SmtpOutcome::Unknown(format!(
            "no answer from {} within {}",
            channel.smtp,
            crate::transport::human_duration(timeout)
        )),
    }
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
