//! The daemon's listening socket, bounded: at most `MAX_CONNECTIONS` connections at once, each
//! closed after `IDLE_TIMEOUT` without a byte read or written, and a full listener makes room for
//! a newcomer by closing its oldest connection that is not writing a response.
//!
//! `/metrics` and `/healthz` are served to anyone who can connect. Without bounds, a client that
//! opens connections and sends nothing keeps a file descriptor each until the daemon can accept
//! nothing else — not a scrape, not a health check. The cap bounds descriptors; it cannot tell a
//! health check from a client that holds a slot by sending a header line every few seconds
//! (slowloris), because at accept time neither has said anything. So a full listener does not
//! turn the newcomer away: it closes the oldest connection that is not writing a response (one
//! waiting for a request head, a body or the next request on a kept-alive connection) and serves
//! the newcomer. A client that
//! holds slots must then open connections faster than a health check sends one request line;
//! those it holds are ended by the head deadline (`http`) anyway. Only when every connection is
//! writing a response is a newcomer closed at once rather than left in the
//! kernel's backlog.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Connections served at once; Prometheus and a few `modelpin history` calls need a handful.
pub const MAX_CONNECTIONS: usize = 128;

/// A connection with no traffic for this long is closed. Shorter than a typical 15 s scrape
/// interval would force a reconnect per scrape, which is cheap; longer keeps idle sockets open.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a newcomer waits for the connection closed to make room for it to let go of its
/// slot (it does on its next poll: microseconds).
const EVICTION_WAIT: Duration = Duration::from_secs(1);

/// A `TcpListener` that hands out at most `limit` live connections, each with an idle timeout.
pub struct Bounded {
    inner: TcpListener,
    slots: Arc<Semaphore>,
    idle: Duration,
    open: Arc<Open>,
}

/// The connections being served, by age (ids only grow).
#[derive(Default)]
struct Open {
    next: AtomicU64,
    connections: Mutex<BTreeMap<u64, Arc<Connection>>>,
}

/// What the listener knows of one connection: whether it is answering a request (and so not to
/// be closed to make room), and the token that closes it.
#[derive(Default)]
pub struct Connection {
    answering: AtomicBool,
    evicted: CancellationToken,
}

impl Connection {
    /// Marks the connection as answering a request until the guard is dropped (with the
    /// response body, once it is written).
    #[must_use]
    pub fn answering(self: &Arc<Connection>) -> Answering {
        self.answering.store(true, Ordering::Relaxed);
        Answering(self.clone())
    }
}

/// Held while a response is being produced and written.
pub struct Answering(Arc<Connection>);

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.answering.store(false, Ordering::Relaxed);
    }
}

impl Open {
    fn register(&self) -> (u64, Arc<Connection>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection::default());
        self.lock().insert(id, connection.clone());
        (id, connection)
    }

    /// Closes the oldest connection not answering a request; false when every one is.
    fn evict_oldest_waiting(&self) -> bool {
        let open = self.lock();
        let oldest = open
            .values()
            .find(|c| !c.answering.load(Ordering::Relaxed) && !c.evicted.is_cancelled());
        oldest.map(|c| c.evicted.cancel()).is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Connection>>> {
        // The map stays consistent through a panic elsewhere: every update is one call.
        self.connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Bounded {
    #[must_use]
    pub fn new(inner: TcpListener, limit: usize, idle: Duration) -> Bounded {
        Bounded {
            inner,
            slots: Arc::new(Semaphore::new(limit.max(1))),
            idle,
            open: Arc::new(Open::default()),
        }
    }

    /// The next connection from the kernel (cancel-safe, so it can race a shutdown).
    pub async fn next(&self) -> TcpStream {
        loop {
            match self.inner.accept().await {
                Ok((stream, _)) => return stream,
                Err(e) => {
                    // Out of descriptors or a reset before accept: wait instead of spinning.
                    tracing::warn!(error = %e, "metrics listener: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// A slot for `stream`, made by closing the oldest waiting connection when the listener is
    /// full; `None` (and the stream closed) when every connection is answering a request.
    pub async fn admit(&self, stream: TcpStream) -> Option<Guarded> {
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) if self.open.evict_oldest_waiting() => {
                tokio::time::timeout(EVICTION_WAIT, self.slots.clone().acquire_owned())
                    .await
                    .ok()?
                    .ok()?
            }
            Err(_) => return None,
        };
        let (id, connection) = self.open.register();
        Some(Guarded {
            stream,
            _slot: slot,
            idle: self.idle,
            deadline: Box::pin(tokio::time::sleep(self.idle)),
            evicted: Box::pin(connection.evicted.clone().cancelled_owned()),
            connection,
            id,
            open: self.open.clone(),
        })
    }
}

/// One accepted connection: holds its slot until dropped and fails once idle too long or
/// closed to make room.
pub struct Guarded {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    evicted: Pin<Box<WaitForCancellationFutureOwned>>,
    connection: Arc<Connection>,
    id: u64,
    open: Arc<Open>,
}

impl Guarded {
    /// What the listener knows of this connection, for the service that answers on it.
    #[must_use]
    pub fn connection(&self) -> Arc<Connection> {
        self.connection.clone()
    }

    fn touched(&mut self) {
        let next = Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    /// `Pending` while the connection may go on; an error once it idled out or was evicted.
    fn ended<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        if self.evicted.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed to make room for a new connection",
            )));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection idle for too long",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.open.lock().remove(&self.id);
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.connection.evicted.is_cancelled() {
            return this.ended(cx);
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.touched();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.ended(cx),
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
            Poll::Pending => this.ended(cx),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::AsyncReadExt as _;
    use tokio::net::{TcpListener, TcpStream};

    use super::Bounded;

    async fn bounded(limit: usize) -> (Bounded, std::net::SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        (
            Bounded::new(listener, limit, Duration::from_secs(60)),
            address,
        )
    }

    async fn accept(listener: &Bounded, address: std::net::SocketAddr) -> Option<super::Guarded> {
        let client = TcpStream::connect(address).await.unwrap();
        let guarded = listener.admit(listener.next().await).await;
        std::mem::forget(client);
        guarded
    }

    #[tokio::test]
    async fn a_full_listener_closes_its_oldest_waiting_connection_for_a_newcomer() {
        let (listener, address) = bounded(2).await;
        let mut first = accept(&listener, address).await.unwrap();
        let second = accept(&listener, address).await.unwrap();
        let answering = second.connection().answering();
        let read = tokio::spawn(async move {
            let mut byte = [0u8; 1];
            first.read(&mut byte).await.map_err(|e| e.kind())
        });
        // Full: the first (waiting) is closed, the second (answering) kept.
        let third = accept(&listener, address).await;
        assert!(third.is_some(), "the newcomer is served");
        assert_eq!(
            read.await.unwrap(),
            Err(std::io::ErrorKind::ConnectionAborted)
        );
        // Full again, and every connection but the newcomer answers: it is closed to make room.
        let third_answering = third.as_ref().unwrap().connection().answering();
        assert!(
            accept(&listener, address).await.is_none(),
            "every connection answering: the newcomer is turned away"
        );
        drop((answering, third_answering, second, third));
        assert_eq!(listener.open.lock().len(), 0, "dropped connections leave");
        assert!(Arc::strong_count(&listener.open) == 1);
    }
}
