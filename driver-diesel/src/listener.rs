//! The notification listener: a dedicated OS thread owning its own `PgConnection`.
//!
//! diesel 2.3's `PgConnection::notifications_iter()` never blocks, so the thread polls it every
//! [`POLL_INTERVAL`] (every [`BUSY_POLL_INTERVAL`] for [`BUSY_FOR`] after a notification: while
//! jobs are being inserted, their wake-ups wait less, and an idle listener stays cheap), and in
//! between waits on a command channel, so `LISTEN` and `UNLISTEN` from the async side run at
//! once. Notifications go to the async side over a tokio channel, which
//! makes [`Listener::next_event`] cancel-safe.
//!
//! # Losing the connection
//!
//! After the server kills the connection, the first poll returns nothing and the second the
//! error; a `SELECT 1` every [`HEALTH_CHECK_INTERVAL`] catches a loss even when nothing is
//! polled. The thread then reconnects: at once, then with a backoff from [`RECONNECT_MIN`]
//! doubling to [`RECONNECT_MAX`]. Each failed attempt is reported as an error event; a successful
//! one listens to every remembered channel again and sends [`ListenerEvent::Reconnected`].
//! Commands that arrive while the connection is down only update the remembered set.
//!
//! The thread ends when the [`DieselListener`] is dropped.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use pgmill::driver::{Listener, ListenerEvent, Notification, listen_sql, unlisten_sql};
use pgmill::{DbError, DbErrorKind, Error, Result};
use tokio::sync::{mpsc as async_mpsc, oneshot};

use crate::error::{connection_error, query_error};

/// How often the thread polls for notifications: half of it is the average wait a notification
/// adds. Each poll is one non-blocking read on the socket.
const POLL_INTERVAL: Duration = Duration::from_millis(1);
/// How often the thread polls for [`BUSY_FOR`] after a notification arrived.
const BUSY_POLL_INTERVAL: Duration = Duration::from_micros(250);
/// How long after a notification the thread polls every [`BUSY_POLL_INTERVAL`].
const BUSY_FOR: Duration = Duration::from_millis(100);

/// The wait before the next poll, the last notification having arrived at `last_notification`.
fn poll_interval(last_notification: Option<Instant>, now: Instant) -> Duration {
    match last_notification {
        Some(at) if now.saturating_duration_since(at) < BUSY_FOR => BUSY_POLL_INTERVAL,
        _ => POLL_INTERVAL,
    }
}
/// How often the thread checks the connection with `SELECT 1`.
const HEALTH_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// The first wait between failed reconnect attempts.
const RECONNECT_MIN: Duration = Duration::from_millis(250);
/// The longest wait between failed reconnect attempts.
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// A request from the async side to the listener thread.
enum Command {
    Listen {
        channel: String,
        sql: String,
        reply: oneshot::Sender<Result<()>>,
    },
    Unlisten {
        channel: String,
        sql: String,
        reply: oneshot::Sender<Result<()>>,
    },
}

/// The diesel driver's [`Listener`]: a dedicated connection, outside the pool, polled on its own
/// thread, that reconnects by itself.
///
/// Open one with [`Driver::listener`](pgmill::driver::Driver::listener).
pub struct DieselListener {
    commands: mpsc::Sender<Command>,
    events: async_mpsc::UnboundedReceiver<Result<ListenerEvent>>,
}

impl fmt::Debug for DieselListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DieselListener").finish_non_exhaustive()
    }
}

impl DieselListener {
    /// Connects to `url` and starts the listener thread.
    pub(crate) async fn connect(url: Arc<str>) -> Result<Self> {
        let conn_url = Arc::clone(&url);
        let conn = tokio::task::spawn_blocking(move || PgConnection::establish(&conn_url))
            .await
            .map_err(|e| other(format!("connecting the listener failed: {e}")))?
            .map_err(connection_error)?;
        let (commands, command_rx) = mpsc::channel();
        let (event_tx, events) = async_mpsc::unbounded_channel();
        let worker = Worker {
            url,
            conn: Some(conn),
            channels: BTreeSet::new(),
            commands: command_rx,
            events: event_tx,
            last_check: Instant::now(),
            last_notification: None,
        };
        std::thread::Builder::new()
            .name("pgmill-diesel-listener".to_owned())
            .spawn(move || worker.run())
            .map_err(|e| other(format!("cannot start the listener thread: {e}")))?;
        Ok(DieselListener { commands, events })
    }

    async fn command(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<()>>) -> Command,
    ) -> Result<()> {
        let (reply, response) = oneshot::channel();
        self.commands.send(make(reply)).map_err(|_| stopped())?;
        response.await.map_err(|_| stopped())?
    }
}

fn other(message: impl Into<String>) -> Error {
    DbError::new(DbErrorKind::Other, message).into()
}

fn stopped() -> Error {
    other("the diesel listener thread has stopped")
}

impl Listener for DieselListener {
    async fn listen(&mut self, channel: &str) -> Result<()> {
        let sql = listen_sql(channel)?;
        let channel = channel.to_owned();
        self.command(|reply| Command::Listen {
            channel,
            sql,
            reply,
        })
        .await
    }

    async fn unlisten(&mut self, channel: &str) -> Result<()> {
        let sql = unlisten_sql(channel)?;
        let channel = channel.to_owned();
        self.command(|reply| Command::Unlisten {
            channel,
            sql,
            reply,
        })
        .await
    }

    async fn next_event(&mut self) -> Result<ListenerEvent> {
        self.events.recv().await.unwrap_or_else(|| Err(stopped()))
    }
}

/// What the listener thread owns.
struct Worker {
    url: Arc<str>,
    /// `None` while disconnected.
    conn: Option<PgConnection>,
    /// Every channel listened to, listened to again after a reconnect.
    channels: BTreeSet<String>,
    commands: mpsc::Receiver<Command>,
    events: async_mpsc::UnboundedSender<Result<ListenerEvent>>,
    last_check: Instant,
    /// When the last notification arrived.
    last_notification: Option<Instant>,
}

/// Whether the thread goes on or stops (the listener was dropped).
enum Flow {
    Continue,
    Stop,
}

impl Worker {
    fn run(mut self) {
        tracing::debug!("diesel listener thread started");
        loop {
            let wait = poll_interval(self.last_notification, Instant::now());
            match self.commands.recv_timeout(wait) {
                Ok(command) => self.handle(command),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if let Flow::Stop = self.poll() {
                break;
            }
            if self.conn.is_none() && matches!(self.reconnect(), Flow::Stop) {
                break;
            }
        }
        tracing::debug!("diesel listener thread stopped");
    }

    /// Runs one command; a lost connection drops `conn` so the loop reconnects.
    fn handle(&mut self, command: Command) {
        let (listen, channel, sql, reply) = match command {
            Command::Listen {
                channel,
                sql,
                reply,
            } => (true, channel, sql, reply),
            Command::Unlisten {
                channel,
                sql,
                reply,
            } => (false, channel, sql, reply),
        };
        let result = match self.conn.as_mut() {
            // Remembered; the reconnect (un)listens.
            None => Ok(()),
            Some(conn) => match conn.batch_execute(&sql).map_err(query_error) {
                Err(e) if e.is_connection_lost() => {
                    tracing::warn!(error = %e, "diesel listener lost its connection");
                    self.conn = None;
                    Ok(())
                }
                other => other,
            },
        };
        if result.is_ok() {
            if listen {
                self.channels.insert(channel);
            } else {
                self.channels.remove(&channel);
            }
        }
        // The caller may have given up waiting; the command took effect anyway.
        let _ = reply.send(result);
    }

    /// Forwards pending notifications and checks the connection now and then.
    fn poll(&mut self) -> Flow {
        let Some(conn) = self.conn.as_mut() else {
            return Flow::Continue;
        };
        let mut lost = None;
        for item in conn.notifications_iter() {
            match item {
                Ok(n) => {
                    self.last_notification = Some(Instant::now());
                    let event = ListenerEvent::Notification(Notification {
                        channel: n.channel,
                        payload: n.payload,
                    });
                    if self.events.send(Ok(event)).is_err() {
                        return Flow::Stop;
                    }
                }
                Err(e) => {
                    lost = Some(query_error(e));
                    break;
                }
            }
        }
        if lost.is_none() && self.last_check.elapsed() >= HEALTH_CHECK_INTERVAL {
            self.last_check = Instant::now();
            if let Err(e) = conn.batch_execute("SELECT 1") {
                lost = Some(query_error(e));
            }
        }
        if let Some(e) = lost {
            tracing::warn!(error = %e, "diesel listener lost its connection");
            self.conn = None;
        }
        Flow::Continue
    }

    /// Reconnects with backoff, listens again and reports [`ListenerEvent::Reconnected`].
    fn reconnect(&mut self) -> Flow {
        let mut delay = RECONNECT_MIN;
        loop {
            match self.connect_and_listen() {
                Ok(conn) => {
                    self.conn = Some(conn);
                    self.last_check = Instant::now();
                    tracing::info!(
                        num_channels = self.channels.len(),
                        "diesel listener reconnected"
                    );
                    return match self.events.send(Ok(ListenerEvent::Reconnected)) {
                        Ok(()) => Flow::Continue,
                        Err(_) => Flow::Stop,
                    };
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64, "diesel listener reconnect failed");
                    if self.events.send(Err(e)).is_err() {
                        return Flow::Stop;
                    }
                }
            }
            if let Flow::Stop = self.wait(delay) {
                return Flow::Stop;
            }
            delay = (delay * 2).min(RECONNECT_MAX);
        }
    }

    fn connect_and_listen(&self) -> Result<PgConnection> {
        let mut conn = PgConnection::establish(&self.url).map_err(connection_error)?;
        for channel in &self.channels {
            conn.batch_execute(&listen_sql(channel)?)
                .map_err(query_error)?;
        }
        Ok(conn)
    }

    /// Waits `delay` while disconnected, still answering commands.
    fn wait(&mut self, delay: Duration) -> Flow {
        let deadline = Instant::now() + delay;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Flow::Continue;
            }
            match self.commands.recv_timeout(left) {
                Ok(command) => self.handle(command),
                Err(RecvTimeoutError::Timeout) => return Flow::Continue,
                Err(RecvTimeoutError::Disconnected) => return Flow::Stop,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_faster_for_a_while_after_a_notification() {
        let now = Instant::now();
        assert_eq!(poll_interval(None, now), POLL_INTERVAL);
        assert_eq!(poll_interval(Some(now), now), BUSY_POLL_INTERVAL);
        let recent = now + BUSY_FOR - Duration::from_millis(1);
        assert_eq!(poll_interval(Some(now), recent), BUSY_POLL_INTERVAL);
        assert_eq!(poll_interval(Some(now), now + BUSY_FOR), POLL_INTERVAL);
    }
}
