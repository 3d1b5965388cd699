//! The listening socket, shared by every event-loop thread.
//!
//! Why one shared socket rather than one SO_REUSEPORT socket per thread: the kernel hashes each
//! new connection to one of several reuseport sockets regardless of whether that socket's
//! thread is busy, so a connection could wait behind a thread stuck in `/slow` while another
//! thread idles. With one socket, only a thread that is polling can accept: a thread busy with
//! inline CPU work is not, so an idle thread takes the connection. That is what makes "one
//! /slow in flight leaves /fast fast on a new connection" deterministic in `threads` mode.
//!
//! Each loop also defers briefly when it already holds more connections than the
//! least-loaded loop, so that a burst of connections (wrk's two, say) spreads over the loops
//! instead of all landing on whichever woke first. A loop that is the least loaded but busy
//! cannot accept, so after [`HANDOFF`] any loop takes the connection.
//!
//! SO_REUSEPORT is still set, so several replica *processes* can share one port.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::connection::forward_write_tail;

/// How long a more-loaded loop leaves a new connection to the least-loaded one.
pub const HANDOFF: Duration = Duration::from_millis(2);

/// Binds `host:port` with SO_REUSEADDR and SO_REUSEPORT, listening and non-blocking.
pub fn bind(host: IpAddr, port: u16) -> io::Result<std::net::TcpListener> {
    let addr = SocketAddr::new(host, port);
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Open connections per loop, to spread new ones.
pub struct Balance {
    open: Box<[AtomicUsize]>,
}

impl Balance {
    /// Counters for `loops` event loops.
    pub fn new(loops: usize) -> Arc<Self> {
        Arc::new(Balance {
            open: (0..loops.max(1)).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    fn is_least_loaded(&self, index: usize) -> bool {
        let mine = self.open[index].load(Relaxed);
        self.open.iter().all(|n| n.load(Relaxed) >= mine)
    }
}

/// One loop's view of the shared socket, as an axum [`Listener`](axum::serve::Listener).
pub struct SharedListener {
    fd: AsyncFd<std::net::TcpListener>,
    index: usize,
    balance: Arc<Balance>,
}

impl SharedListener {
    /// Registers a duplicate of `listener` with the current runtime as loop `index`.
    pub fn new(
        listener: &std::net::TcpListener,
        index: usize,
        balance: Arc<Balance>,
    ) -> io::Result<Self> {
        let dup = listener.try_clone()?;
        // SAFETY: `dup` is a listener this struct owns; its descriptor stays open and is not
        // replaced for as long as the AsyncFd holds it.
        let fd = unsafe { AsyncFd::register(dup)? };
        Ok(SharedListener { fd, index, balance })
    }

    fn wrap(&self, stream: std::net::TcpStream) -> io::Result<CountedStream> {
        stream.set_nonblocking(true)?;
        // Responses are small and written once; Nagle would only add delay.
        stream.set_nodelay(true)?;
        let stream = TcpStream::from_std(stream)?;
        self.balance.open[self.index].fetch_add(1, Relaxed);
        Ok(CountedStream {
            inner: stream,
            balance: Arc::clone(&self.balance),
            index: self.index,
        })
    }
}

impl axum::serve::Listener for SharedListener {
    type Io = CountedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let mut guard = match self.fd.readable().await {
                Ok(g) => g,
                Err(e) => {
                    tracing::error!(error = %e, "listener poll failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            if !self.balance.is_least_loaded(self.index) {
                tokio::time::sleep(HANDOFF).await;
            }
            match guard.try_io(|fd| fd.get_ref().accept()) {
                Ok(Ok((stream, addr))) => match self.wrap(stream) {
                    Ok(io) => return (io, addr),
                    Err(e) => {
                        tracing::debug!(error = %e, "dropping a connection that could not be set up")
                    }
                },
                Ok(Err(e)) if is_connection_error(&e) => {}
                Ok(Err(e)) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::error!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                // Another loop took it.
                Err(_would_block) => {}
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.fd.get_ref().local_addr()
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// A TCP stream that keeps its loop's open-connection count.
pub struct CountedStream {
    inner: TcpStream,
    balance: Arc<Balance>,
    index: usize,
}

impl Drop for CountedStream {
    fn drop(&mut self) {
        self.balance.open[self.index].fetch_sub(1, Relaxed);
    }
}

impl AsyncRead for CountedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for CountedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    forward_write_tail!();
}
