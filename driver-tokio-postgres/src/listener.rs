//! The dedicated LISTEN connection, with its own reconnect.
//!
//! tokio-postgres delivers notifications only to whoever polls the `Connection` with
//! `poll_message`; a connection driven by simply awaiting it (as deadpool does) drops them. So
//! the listener opens its own connection and spawns a task that polls it and forwards every
//! notification into an unbounded channel. When the connection ends (server restart,
//! `pg_terminate_backend`, network failure) the task ends and the channel closes; the next
//! [`Listener::next_event`] then reconnects, listens again to every channel and reports
//! [`ListenerEvent::Reconnected`]. The reconnect in progress lives in the listener, not in the
//! `next_event` future, so callers that drop that future (a `select!` against a timer) still see
//! it finish; if it fails, the error is returned and the next call starts a new one.

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::future::poll_fn;
use pgmill::Result;
use pgmill::driver::{Listener, ListenerEvent, Notification, listen_sql, unlisten_sql};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::{AsyncMessage, Client, Config, Connection, NoTls, Socket};

use crate::error::db_error;

/// A reconnect in progress: a new connection with every channel listened to again.
type Reconnecting =
    Pin<Box<dyn Future<Output = Result<(Client, UnboundedReceiver<Notification>)>> + Send>>;

/// A dedicated connection, outside the pool, receiving `NOTIFY`s.
///
/// Made by [`TokioPostgresDriver`](crate::TokioPostgresDriver)'s `Driver::listener`. It remembers
/// the channels it listens to and, after the connection is lost, reconnects on the next
/// [`Listener::next_event`] and listens to all of them again.
pub struct TokioPostgresListener {
    config: Arc<Config>,
    client: Client,
    notifications: UnboundedReceiver<Notification>,
    channels: BTreeSet<String>,
    /// Kept across calls, so a `next_event` dropped midway (by a `select!` or a timeout) does not
    /// restart the reconnect from scratch: the next call resumes it.
    reconnecting: Option<Reconnecting>,
}

impl TokioPostgresListener {
    /// Opens the listener's connection (without TLS).
    ///
    /// # Errors
    ///
    /// The connection error.
    pub(crate) async fn connect(config: Arc<Config>) -> Result<Self> {
        let (client, notifications) = open(&config).await?;
        Ok(TokioPostgresListener {
            config,
            client,
            notifications,
            channels: BTreeSet::new(),
            reconnecting: None,
        })
    }

    /// Starts a reconnect that listens again to the channels remembered now.
    fn start_reconnect(&self) -> Reconnecting {
        let config = Arc::clone(&self.config);
        let channels: Vec<String> = self.channels.iter().cloned().collect();
        Box::pin(async move {
            let (client, notifications) = open(&config).await?;
            if !channels.is_empty() {
                let script = channels
                    .iter()
                    .map(|c| listen_sql(c))
                    .collect::<Result<Vec<_>>>()?
                    .join("; ");
                client.batch_execute(&script).await.map_err(db_error)?;
            }
            Ok((client, notifications))
        })
    }
}

impl fmt::Debug for TokioPostgresListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokioPostgresListener")
            .field("channels", &self.channels)
            .field("closed", &self.client.is_closed())
            .field("reconnecting", &self.reconnecting.is_some())
            .finish_non_exhaustive()
    }
}

impl Listener for TokioPostgresListener {
    /// Listens to `channel`.
    ///
    /// When the connection is lost meanwhile, the channel is still remembered, so the reconnect
    /// in the next [`Listener::next_event`] listens to it.
    async fn listen(&mut self, channel: &str) -> Result<()> {
        let sql = listen_sql(channel)?;
        if self.channels.insert(channel.to_owned()) {
            // A reconnect already under way would miss the new channel: start it over.
            self.reconnecting = None;
        }
        let result = self.client.batch_execute(&sql).await.map_err(db_error);
        if let Err(e) = &result
            && !e.is_connection_lost()
        {
            self.channels.remove(channel);
        }
        result
    }

    async fn unlisten(&mut self, channel: &str) -> Result<()> {
        let sql = unlisten_sql(channel)?;
        if self.channels.remove(channel) {
            self.reconnecting = None;
        }
        self.client.batch_execute(&sql).await.map_err(db_error)
    }

    async fn next_event(&mut self) -> Result<ListenerEvent> {
        loop {
            if let Some(reconnecting) = self.reconnecting.as_mut() {
                let result = reconnecting.await;
                self.reconnecting = None;
                let (client, notifications) = result?;
                self.client = client;
                self.notifications = notifications;
                tracing::info!(num_channels = self.channels.len(), "listener reconnected");
                return Ok(ListenerEvent::Reconnected);
            }
            // `recv` is cancel-safe; it returns `None` once the connection task has ended.
            match self.notifications.recv().await {
                Some(notification) => return Ok(ListenerEvent::Notification(notification)),
                None => self.reconnecting = Some(self.start_reconnect()),
            }
        }
    }
}

/// Connects and spawns the task that forwards the connection's notifications.
async fn open(config: &Config) -> Result<(Client, UnboundedReceiver<Notification>)> {
    let (client, connection) = config.connect(NoTls).await.map_err(db_error)?;
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(forward_notifications(connection, sender));
    Ok((client, receiver))
}

/// Drives the connection until it ends, forwarding notifications; dropping `sender` at the end
/// closes the channel, which is how the listener learns the connection is gone.
async fn forward_notifications(
    mut connection: Connection<Socket, NoTlsStream>,
    sender: UnboundedSender<Notification>,
) {
    loop {
        match poll_fn(|cx| connection.poll_message(cx)).await {
            Some(Ok(AsyncMessage::Notification(n))) => {
                let notification = Notification {
                    channel: n.channel().to_owned(),
                    payload: n.payload().to_owned(),
                };
                if sender.send(notification).is_err() {
                    // The listener is gone; dropping the connection closes it.
                    return;
                }
            }
            Some(Ok(AsyncMessage::Notice(notice))) => {
                tracing::debug!(
                    severity = notice.severity(),
                    message = notice.message(),
                    "listener connection notice"
                );
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                tracing::warn!(error = %db_error(e), "listener connection failed");
                return;
            }
            None => return,
        }
    }
}
