//! The one HTTP client: deadlines, size caps and bounded concurrency.
//!
//! Every provider call goes through `Transport::send`, which ends in exactly one typed outcome —
//! a `RawResponse` or a `TransportFailure` — never a panic and never a hang: the whole exchange
//! (connect, headers, body) runs under one deadline, and the body is read in chunks so a hostile
//! server cannot make us buffer more than the cap. reqwest's own retries and redirects stay off:
//! a provider API that redirects is answered as it stands, and retrying is decided elsewhere.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use tokio::sync::Semaphore;

use crate::provider::{HttpRequest, RawResponse};
use crate::redact::Redactor;

/// Largest response body accepted: real completions for probe-sized prompts are a few KiB.
pub const DEFAULT_BODY_CAP: usize = 4 * 1024 * 1024;

/// How a call failed before any response could be interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The host answered the connection attempt with a refusal: nothing listens at that address.
    Refused,
    /// DNS, TLS, an unreachable network: nothing reached the server.
    Connect,
    /// The deadline passed before the whole response arrived.
    Timeout,
    /// The connection broke after the request was (maybe) sent.
    Io,
    /// The body exceeded the cap.
    BodyTooLarge,
    /// The request could not be built (bad header value, bad URL).
    Request,
}

impl FailureKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Refused => "connection refused",
            FailureKind::Connect => "connect",
            FailureKind::Timeout => "timeout",
            FailureKind::Io => "io",
            FailureKind::BodyTooLarge => "body_too_large",
            FailureKind::Request => "request",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportFailure {
    pub kind: FailureKind,
    pub message: String,
}

/// A response with how long the exchange took.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub response: RawResponse,
    pub latency: Duration,
}

#[derive(Debug, Clone, Copy)]
pub struct TransportLimits {
    /// Deadline for one whole exchange.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub body_cap: usize,
    /// Calls in flight overall.
    pub concurrency: usize,
}

/// The shared client plus the semaphores that bound calls overall and per provider.
#[derive(Debug, Clone)]
pub struct Transport {
    client: reqwest::Client,
    limits: TransportLimits,
    overall: Arc<Semaphore>,
    per_provider: Arc<HashMap<String, Arc<Semaphore>>>,
    /// Applied to every response and failure before anyone else sees it.
    redactor: Arc<Redactor>,
    /// Each provider's circuit breaker (`breaker`), kept as long as the transport.
    breakers: Option<Arc<crate::breaker::Breakers>>,
}

impl Transport {
    /// `providers` names each provider with its own concurrency limit.
    pub fn new(
        limits: TransportLimits,
        providers: &[(String, usize)],
    ) -> Result<Transport, TransportFailure> {
        let client = reqwest::Client::builder()
            .connect_timeout(limits.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("modelpin/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| TransportFailure {
                kind: FailureKind::Request,
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        let per_provider = providers
            .iter()
            .map(|(name, n)| (name.clone(), Arc::new(Semaphore::new((*n).max(1)))))
            .collect();
        Ok(Transport {
            client,
            limits,
            overall: Arc::new(Semaphore::new(limits.concurrency.max(1))),
            per_provider: Arc::new(per_provider),
            redactor: Arc::new(Redactor::default()),
            breakers: None,
        })
    }

    /// This transport, masking `redactor`'s secrets in everything it receives.
    #[must_use]
    pub fn with_redactor(mut self, redactor: Redactor) -> Transport {
        self.redactor = Arc::new(redactor);
        self
    }

    /// The redactor applied to what this transport receives, for text that enters elsewhere.
    #[must_use]
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The transport a config asks for: its timeout, overall and per-provider concurrency.
    pub fn for_config(config: &crate::config::Config) -> Result<Transport, TransportFailure> {
        let limits = TransportLimits {
            timeout: config.settings.timeout,
            connect_timeout: config.settings.timeout.min(Duration::from_secs(10)),
            body_cap: DEFAULT_BODY_CAP,
            concurrency: config.settings.concurrency,
        };
        let providers: Vec<(String, usize)> = config
            .providers
            .iter()
            .map(|p| (p.name.clone(), p.concurrency))
            .collect();
        let redactor = config.redactor(&|name| std::env::var(name).ok());
        let breakers = crate::breaker::Breakers::for_config(config);
        Ok(Transport::new(limits, &providers)?
            .with_redactor(redactor)
            .with_breakers(breakers))
    }

    /// The audit's probe calls through this transport consult `breakers` (models-endpoint
    /// lookups, which are advisory, do not).
    #[must_use]
    pub fn with_breakers(mut self, breakers: crate::breaker::Breakers) -> Transport {
        self.breakers = Some(Arc::new(breakers));
        self
    }

    /// The providers' circuit breakers, when this transport has them.
    #[must_use]
    pub fn breakers(&self) -> Option<&crate::breaker::Breakers> {
        self.breakers.as_deref()
    }

    #[must_use]
    pub fn limits(&self) -> TransportLimits {
        self.limits
    }

    /// Sends one request under the deadline `min(timeout, until - now)`.
    pub async fn send(
        &self,
        provider: &str,
        request: &HttpRequest,
        until: Option<Instant>,
    ) -> Result<Delivered, TransportFailure> {
        let builder = self.post(request)?;
        self.send_builder(provider, builder, until).await
    }

    /// A `POST` of exact bytes (signed webhook bodies) under the same deadline, cap and semaphores.
    pub async fn post_bytes(
        &self,
        provider: &str,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
        until: Option<Instant>,
    ) -> Result<Delivered, TransportFailure> {
        let mut builder = self.client.post(url).body(body);
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        self.send_builder(provider, builder, until).await
    }

    /// A `GET` under the same deadline, cap and semaphores (provider model lists, feeds).
    pub async fn get(
        &self,
        provider: &str,
        url: &str,
        headers: &[(String, String)],
        until: Option<Instant>,
    ) -> Result<Delivered, TransportFailure> {
        let mut builder = self.client.get(url);
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        self.send_builder(provider, builder, until).await
    }

    async fn send_builder(
        &self,
        provider: &str,
        builder: reqwest::RequestBuilder,
        until: Option<Instant>,
    ) -> Result<Delivered, TransportFailure> {
        let _overall = self.overall.acquire().await.map_err(closed)?;
        let _own = match self.per_provider.get(provider) {
            Some(sem) => Some(sem.acquire().await.map_err(closed)?),
            None => None,
        };
        let mut deadline = self.limits.timeout;
        if let Some(until) = until {
            deadline = deadline.min(until.saturating_duration_since(Instant::now()));
        }
        let started = Instant::now();
        match tokio::time::timeout(deadline, self.receive(builder)).await {
            Ok(Ok(response)) => Ok(Delivered {
                response: self.scrub(response),
                latency: started.elapsed(),
            }),
            Ok(Err(failure)) => Err(TransportFailure {
                message: self.redactor.scrub_owned(failure.message),
                ..failure
            }),
            Err(_) => Err(TransportFailure {
                kind: FailureKind::Timeout,
                message: format!("no complete response within {}", human_duration(deadline)),
            }),
        }
    }

    /// The one place provider text enters: headers and body with every secret masked.
    fn scrub(&self, response: RawResponse) -> RawResponse {
        scrub_response(&self.redactor, response)
    }

    fn post(&self, request: &HttpRequest) -> Result<reqwest::RequestBuilder, TransportFailure> {
        let body = serde_json::to_vec(&request.body).map_err(|e| TransportFailure {
            kind: FailureKind::Request,
            message: format!("cannot encode the request body: {e}"),
        })?;
        let mut builder = self.client.post(&request.url).body(body);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        Ok(builder)
    }

    async fn receive(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<RawResponse, TransportFailure> {
        let mut response = builder.send().await.map_err(|e| classify_reqwest(&e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| classify_reqwest(&e))? {
            if body.len() + chunk.len() > self.limits.body_cap {
                return Err(TransportFailure {
                    kind: FailureKind::BodyTooLarge,
                    message: format!(
                        "response body larger than {} bytes; refused",
                        self.limits.body_cap
                    ),
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(RawResponse {
            status,
            headers,
            body,
        })
    }
}

fn closed(_: tokio::sync::AcquireError) -> TransportFailure {
    TransportFailure {
        kind: FailureKind::Request,
        message: "transport is shutting down".to_owned(),
    }
}

/// reqwest errors carry the URL, never headers; URLs that are secrets (Slack's) are masked by the
/// caller.
fn classify_reqwest(error: &reqwest::Error) -> TransportFailure {
    let kind = if error.is_timeout() {
        FailureKind::Timeout
    } else if error.is_connect() && refused(error) {
        FailureKind::Refused
    } else if error.is_connect() {
        FailureKind::Connect
    } else if error.is_builder() {
        FailureKind::Request
    } else {
        FailureKind::Io
    };
    let message = match (kind, error.url()) {
        (FailureKind::Refused, Some(url)) => format!(
            "{}:{} refused the connection (nothing listens there)",
            url.host_str().unwrap_or("?"),
            url.port_or_known_default().unwrap_or(0)
        ),
        _ => error_chain(error),
    };
    TransportFailure { kind, message }
}

/// Whether an I/O error somewhere in the chain is a refused connection (`ECONNREFUSED`).
fn refused(error: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        if inner
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        source = inner.source();
    }
    false
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

/// `1.5s`, `250ms`, `2m`.
#[must_use]
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// A response with every secret masked in its header values and body: what the transport hands
/// on, so no caller ever holds the unmasked bytes.
#[must_use]
pub(crate) fn scrub_response(redactor: &Redactor, response: RawResponse) -> RawResponse {
    RawResponse {
        status: response.status,
        headers: response
            .headers
            .into_iter()
            .map(|(k, v)| (k, redactor.scrub_owned(v)))
            .collect(),
        body: redactor.scrub_bytes(response.body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_duration_table() {
        for (ms, want) in [
            (250, "250ms"),
            (1000, "1s"),
            (1500, "1.5s"),
            (60_000, "1m"),
            (90_000, "90s"),
        ] {
            assert_eq!(human_duration(Duration::from_millis(ms)), want);
        }
    }
}
