//! A TCP relay on loopback that can be cut like a network: while cut, it passes no byte either
//! way and closes nothing (a client sees silence, as behind a dropped link, not a reset); healed,
//! it passes bytes again. Stands between one daemon and its PostgreSQL server.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub struct Relay {
    pub port: u16,
    cut: Arc<AtomicBool>,
}

impl Relay {
    /// Relays connections on a port the system picks to 127.0.0.1:`to`.
    pub fn to(to: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        let port = listener.local_addr().expect("relay address").port();
        let cut = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cut);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", to)) else {
                    continue;
                };
                for (from, into) in [(&client, &server), (&server, &client)] {
                    let (Ok(from), Ok(into)) = (from.try_clone(), into.try_clone()) else {
                        continue;
                    };
                    let cut = Arc::clone(&flag);
                    std::thread::spawn(move || pump(from, into, &cut));
                }
            }
        });
        Relay { port, cut }
    }

    /// From now on no byte passes, either way, on any connection, old or new.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

/// Copies `from` into `into`, holding what it read while the link is cut.
fn pump(mut from: TcpStream, mut into: TcpStream, cut: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        hold_while(cut);
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        hold_while(cut);
        if into.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = into.shutdown(std::net::Shutdown::Write);
}

fn hold_while(cut: &AtomicBool) {
    while cut.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(10));
    }
}
