//! Loopback ports a test holds for as long as it needs them. A port is never picked by binding
//! and dropping a listener: between the drop and the next bind another test may take it.

use std::net::SocketAddr;

/// A port bound but not listening: a connection to it is refused at once, and no other socket
/// can listen on it while this value lives. A receiver that is "down" is one of these; it can
/// come up on the same port with [`ClosedPort::listen`].
pub struct ClosedPort {
    socket: tokio::net::TcpSocket,
    pub port: u16,
}

impl ClosedPort {
    /// A port the system picks.
    pub fn new() -> ClosedPort {
        ClosedPort::bind(0)
    }

    /// Holds `port` again right after its listener closed.
    pub fn reclaim(port: u16) -> ClosedPort {
        ClosedPort::bind(port)
    }

    /// SO_REUSEADDR, as every listener of the tests has it: connections a listener on this port
    /// closed linger in TIME_WAIT and would block the next bind. A port picked by the system is
    /// never one another socket is bound to, reuse or not.
    fn bind(port: u16) -> ClosedPort {
        let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
        socket.set_reuseaddr(true).expect("SO_REUSEADDR");
        socket
            .bind(SocketAddr::from(([127, 0, 0, 1], port)))
            .unwrap_or_else(|e| panic!("binding 127.0.0.1:{port}: {e}"));
        let port = socket.local_addr().expect("bound address").port();
        ClosedPort { socket, port }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts listening on the held port; needs a tokio runtime.
    pub fn listen(self) -> tokio::net::TcpListener {
        self.socket.listen(1024).expect("listen on a held port")
    }

    /// Lets go of the port for a program that will bind it itself, as late as possible.
    pub fn release(self) -> u16 {
        self.port
    }
}

/// The port a process listens on on 127.0.0.1, read from `/proc` (as `ss -ltnp` does): for a
/// process whose start-up line is filtered out of its log.
#[cfg(target_os = "linux")]
pub fn listening_port(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).ok()?;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // local_address (hex ip:port), st (0A is LISTEN), inode
        let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
        let (ip, port) = local.split_once(':')?;
        (*state == "0A" && ip == "0100007F" && inodes.iter().any(|i| i == inode))
            .then(|| u16::from_str_radix(port, 16).ok())
            .flatten()
    })
}
