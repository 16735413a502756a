//! The dedicated notification connection.

use std::future::Future;

use crate::error::{Error, Result};
use crate::ident::quote_ident;

/// One `NOTIFY` delivered to a [`Listener`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The channel it was sent on.
    pub channel: String,
    /// Its payload (empty when none was given).
    pub payload: String,
}

/// What [`Listener::next_event`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListenerEvent {
    /// A notification arrived.
    Notification(Notification),
    /// The connection was lost and has been re-established, with every channel listened to again.
    /// Notifications sent in between may be lost: re-poll now.
    Reconnected,
}

/// A dedicated connection, outside the pool, receiving notifications.
///
/// It reconnects on its own: when the connection drops, the next [`Listener::next_event`]
/// reconnects, listens again to every channel and returns [`ListenerEvent::Reconnected`]. If the
/// reconnect fails it returns the error, and the caller backs off and calls again.
pub trait Listener: Send + 'static {
    /// Starts listening to `channel` (the name is quoted by the listener).
    fn listen(&mut self, channel: &str) -> impl Future<Output = Result<()>> + Send;

    /// Stops listening to `channel`.
    fn unlisten(&mut self, channel: &str) -> impl Future<Output = Result<()>> + Send;

    /// Waits for the next notification or reconnect.
    ///
    /// Must be cancel-safe: dropping the future before it completes loses no notification.
    fn next_event(&mut self) -> impl Future<Output = Result<ListenerEvent>> + Send;
}

/// The listener of drivers that have none; the engine then only polls.
#[derive(Debug, Clone, Copy)]
pub enum NoListener {}

impl Listener for NoListener {
    async fn listen(&mut self, _channel: &str) -> Result<()> {
        match *self {}
    }

    async fn unlisten(&mut self, _channel: &str) -> Result<()> {
        match *self {}
    }

    async fn next_event(&mut self) -> Result<ListenerEvent> {
        match *self {}
    }
}

/// The `LISTEN` statement for a channel, with the name quoted; for listeners that issue SQL.
///
/// # Errors
///
/// [`Error::InvalidName`] when the channel is empty, too long or contains a NUL.
pub fn listen_sql(channel: &str) -> Result<String> {
    Ok(format!("LISTEN {}", quote_channel(channel)?))
}

/// The `UNLISTEN` statement for a channel, with the name quoted.
///
/// # Errors
///
/// [`Error::InvalidName`] when the channel is empty, too long or contains a NUL.
pub fn unlisten_sql(channel: &str) -> Result<String> {
    Ok(format!("UNLISTEN {}", quote_channel(channel)?))
}

fn quote_channel(channel: &str) -> Result<String> {
    let reason = if channel.is_empty() {
        Some("is empty")
    } else if channel.len() > 63 {
        Some("is longer than 63 bytes")
    } else if channel.contains('\0') {
        Some("contains a NUL character")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidName {
            kind: "channel",
            name: channel.to_owned(),
            reason,
        }),
        None => Ok(quote_ident(channel)),
    }
}
