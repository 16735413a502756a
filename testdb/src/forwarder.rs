//! A TCP forwarder whose target can be switched: one address for clients across a failover.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::Error;

/// Forwards every connection made to a port of 127.0.0.1 to a target port of 127.0.0.1, the way
/// a virtual IP or a DNS name in front of a database does: [`Forwarder::switch_to`] drops every
/// open connection and sends the new ones to another target, so clients keep one URL across a
/// failover. A connection whose target refuses it is closed at once.
///
/// Each connection is served by two threads, one per direction; they end with the connection.
/// Dropping the forwarder stops listening and drops every open connection.
///
/// # Examples
///
/// ```no_run
/// # fn main() -> Result<(), pgmill_testdb::Error> {
/// let primary = pgmill_testdb::Cluster::start()?;
/// let replica = primary.start_replica()?;
/// let forwarder = pgmill_testdb::Forwarder::start(primary.port())?;
/// let url = forwarder.url_for(&primary.url()); // what clients connect to
/// primary.stop()?;
/// replica.promote()?;
/// forwarder.switch_to(replica.port()); // the same URL now reaches the promoted replica
/// # let _ = url;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Forwarder {
    port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    target: AtomicU16,
    stopping: AtomicBool,
    /// Both ends of every open connection, by connection number.
    open: Mutex<Vec<(u64, TcpStream, TcpStream)>>,
}

impl Shared {
    fn open(&self) -> std::sync::MutexGuard<'_, Vec<(u64, TcpStream, TcpStream)>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Shuts both ends of every open connection down; their threads then end.
    fn drop_all(&self) {
        for (_, client, upstream) in self.open().drain(..) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
        }
    }
}

impl Forwarder {
    /// Listens on a free port of 127.0.0.1 and forwards each connection to `target` (a port of
    /// 127.0.0.1).
    ///
    /// # Errors
    ///
    /// When no port can be bound.
    pub fn start(target: u16) -> Result<Forwarder, Error> {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| Error::setup("binding a port", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::setup("binding a port", e))?
            .port();
        let shared = Arc::new(Shared::default());
        shared.target.store(target, Ordering::SeqCst);
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("forwarder-{port}"))
                .spawn(move || accept(&listener, &shared))
                .map_err(|e| Error::setup("starting the forwarder", e))?
        };
        Ok(Forwarder {
            port,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port new connections are forwarded to.
    pub fn target(&self) -> u16 {
        self.shared.target.load(Ordering::SeqCst)
    }

    /// `url` (a `postgres://user@host:port/...` URL, as [`Cluster::url`](crate::Cluster::url)
    /// gives) with its host and port replaced by the forwarder's.
    pub fn url_for(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
        let (user, rest) = match rest.split_once('@') {
            Some((user, rest)) => (format!("{user}@"), rest),
            None => (String::new(), rest),
        };
        let tail = rest.find(['/', '?']).map_or("", |i| &rest[i..]);
        format!("{scheme}://{user}127.0.0.1:{}{tail}", self.port)
    }

    /// Sends new connections to `target` and drops every open one, as a failover of a virtual
    /// IP does: clients notice their connections lost and reconnect to the new target.
    pub fn switch_to(&self, target: u16) {
        self.shared.target.store(target, Ordering::SeqCst);
        self.shared.drop_all();
    }

    /// How many connections are open through the forwarder.
    pub fn open_connections(&self) -> usize {
        self.shared.open().len()
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wakes the acceptor up so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        self.shared.drop_all();
    }
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut next: u64 = 0;
    for client in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(client) = client else { continue };
        next += 1;
        let target = shared.target.load(Ordering::SeqCst);
        let Ok(upstream) = TcpStream::connect(("127.0.0.1", target)) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        // Out of threads or file descriptors: this connection is dropped, the next one tried.
        let _ = serve(next, target, client, upstream, shared);
    }
}

/// Registers the connection (made to `target`) and starts a thread per direction.
fn serve(
    id: u64,
    target: u16,
    client: TcpStream,
    upstream: TcpStream,
    shared: &Arc<Shared>,
) -> std::io::Result<()> {
    {
        let mut open = shared.open();
        // A switch since the target was read has missed this connection: it ends here. (A
        // switch stores the new target before it drops the connections it holds.)
        if shared.stopping.load(Ordering::SeqCst) || shared.target.load(Ordering::SeqCst) != target
        {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
            return Ok(());
        }
        open.push((id, client.try_clone()?, upstream.try_clone()?));
    }
    let pipes = [
        (client.try_clone()?, upstream.try_clone()?),
        (upstream, client),
    ];
    for (mut from, mut to) in pipes {
        let shared = Arc::clone(shared);
        std::thread::Builder::new()
            .name(format!("forwarder-conn-{id}"))
            .spawn(move || {
                // Ends at end of stream, or with an error after a reset or a switch: either way
                // the connection ends.
                let _ = std::io::copy(&mut from, &mut to);
                let _ = from.shutdown(Shutdown::Both);
                let _ = to.shutdown(Shutdown::Both);
                shared.open().retain(|(n, _, _)| *n != id);
            })?;
    }
    Ok(())
}
