//! The daemon's listening socket, bounded: at most `MAX_CONNECTIONS` connections at once, and
//! each one closed after `IDLE_TIMEOUT` without a byte read or written.
//!
//! `/metrics` and `/api/history` are served to anyone who can connect. Without bounds, a client
//! that opens connections and sends nothing keeps a file descriptor each until the daemon can
//! accept nothing else — not a scrape, not a health check. The idle timeout also ends a request
//! whose headers trickle in (slowloris) and keep-alive connections a scraper forgot; a connection
//! over the cap is closed at once rather than left in the kernel's backlog.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Connections served at once; Prometheus and a few `modelpin history` calls need a handful.
pub const MAX_CONNECTIONS: usize = 128;

/// A connection with no traffic for this long is closed. Shorter than a typical 15 s scrape
/// interval would force a reconnect per scrape, which is cheap; longer keeps idle sockets open.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// A `TcpListener` that hands out at most `limit` live connections, each with an idle timeout.
pub struct Bounded {
    inner: TcpListener,
    slots: Arc<Semaphore>,
    idle: Duration,
}

impl Bounded {
    #[must_use]
    pub fn new(inner: TcpListener, limit: usize, idle: Duration) -> Bounded {
        Bounded {
            inner,
            slots: Arc::new(Semaphore::new(limit.max(1))),
            idle,
        }
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Guarded;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Guarded, std::net::SocketAddr) {
        loop {
            let (stream, addr) = match self.inner.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or a reset before accept: wait instead of spinning.
                    tracing::warn!(error = %e, "metrics listener: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            match self.slots.clone().try_acquire_owned() {
                Ok(permit) => return (Guarded::new(stream, permit, self.idle), addr),
                Err(_) => drop(stream),
            }
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }
}

/// One accepted connection: holds its slot until dropped and fails once idle too long.
pub struct Guarded {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl Guarded {
    fn new(stream: TcpStream, slot: OwnedSemaphorePermit, idle: Duration) -> Guarded {
        Guarded {
            stream,
            _slot: slot,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
        }
    }

    fn touched(&mut self) {
        let next = Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    /// `Pending` while there is time left; a timeout error once the connection has idled out.
    fn idled_out<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection idle for too long",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.touched();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.idled_out(cx),
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_write(cx, data) {
            Poll::Ready(Ok(n)) => {
                this.touched();
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.idled_out(cx),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
