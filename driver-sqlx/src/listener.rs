//! The notification connection: sqlx's [`PgListener`], made cancel-safe across reconnects.
//!
//! # How it reconnects
//!
//! A [`PgListener`] holds one connection taken out of the driver's pool for good. When that
//! connection is lost, `try_recv` drops it and returns `Ok(None)`. With sqlx's default
//! `eager_reconnect` it would reconnect *before* returning, but that reconnect sits inside the
//! `try_recv` future: a caller that drops the future mid-reconnect (a `select!` with a timer does)
//! never sees the `Ok(None)`, and the gap in notifications goes unreported.
//!
//! So this listener turns eager reconnects off, keeps its own list of channels, and reconnects
//! itself: when the connection is lost (`Ok(None)`, or an error that means a lost connection) it
//! drops the [`PgListener`] and opens a new one in a future it *stores*. A call cancelled during
//! the reconnect leaves the future in place and the next call resumes it; once it completes,
//! [`ListenerEvent::Reconnected`] is reported exactly once. Waiting for a notification is
//! cancel-safe in sqlx itself (it only consumes a message once it has been read whole).

use std::fmt;

use futures_util::future::BoxFuture;
use pgmill::Result;
use pgmill::driver::{Listener, ListenerEvent, Notification, listen_sql};
use sqlx::PgPool;
use sqlx::postgres::PgListener;

use crate::error::db_error;

/// A dedicated notification connection over sqlx's [`PgListener`].
///
/// Opened by [`SqlxDriver`](crate::SqlxDriver)'s `listener`; it takes one connection out of the
/// driver's pool for as long as it lives, and reconnects through the pool on its own.
pub struct SqlxListener {
    pool: PgPool,
    /// Every channel listened to, re-listened on reconnect.
    channels: Vec<String>,
    /// The open listener; `None` once its connection was lost.
    listener: Option<PgListener>,
    /// A reconnect in progress, kept across cancelled calls.
    reconnect: Option<BoxFuture<'static, sqlx::Result<PgListener>>>,
    /// A reconnect completed and [`ListenerEvent::Reconnected`] is still to be reported.
    reconnected: bool,
}

impl SqlxListener {
    /// Opens a listener on a connection taken out of `pool`.
    pub(crate) async fn connect(pool: &PgPool) -> Result<Self> {
        let listener = open(pool.clone(), Vec::new()).await.map_err(db_error)?;
        Ok(SqlxListener {
            pool: pool.clone(),
            channels: Vec::new(),
            listener: Some(listener),
            reconnect: None,
            reconnected: false,
        })
    }

    /// The open listener, reconnecting first if the connection was lost.
    async fn open_listener(&mut self) -> Result<&mut PgListener> {
        let listener = match self.listener.take() {
            Some(listener) => listener,
            None => {
                let (pool, channels) = (&self.pool, &self.channels);
                let reconnect = self
                    .reconnect
                    .get_or_insert_with(|| Box::pin(open(pool.clone(), channels.clone())));
                let opened = reconnect.await;
                self.reconnect = None;
                let listener = opened.map_err(db_error)?;
                self.reconnected = true;
                tracing::debug!(channels = self.channels.len(), "listener reconnected");
                listener
            }
        };
        Ok(self.listener.insert(listener))
    }

    /// Forgets a lost connection; the next call reconnects.
    fn lost(&mut self, reason: &dyn fmt::Display) {
        tracing::debug!(reason = %reason, "listener connection lost");
        self.listener = None;
    }
}

/// Opens a [`PgListener`] on `pool` listening to `channels`.
async fn open(pool: PgPool, channels: Vec<String>) -> sqlx::Result<PgListener> {
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.eager_reconnect(false);
    if !channels.is_empty() {
        listener
            .listen_all(channels.iter().map(String::as_str))
            .await?;
    }
    Ok(listener)
}

impl Listener for SqlxListener {
    async fn listen(&mut self, channel: &str) -> Result<()> {
        // sqlx quotes the name itself (`LISTEN "a.b"`); this only applies core's rules for a
        // channel name, so every driver rejects the same names.
        listen_sql(channel)?;
        if self.channels.iter().any(|c| c == channel) {
            return Ok(());
        }
        let listener = self.open_listener().await?;
        match listener.listen(channel).await {
            Ok(()) => {
                self.channels.push(channel.to_owned());
                Ok(())
            }
            Err(e) => {
                let err = db_error(e);
                if err.is_connection_lost() {
                    self.lost(&err);
                }
                Err(err)
            }
        }
    }

    async fn unlisten(&mut self, channel: &str) -> Result<()> {
        self.channels.retain(|c| c != channel);
        let Some(listener) = self.listener.as_mut() else {
            // Not connected: the next reconnect must not listen to it.
            self.reconnect = None;
            return Ok(());
        };
        match listener.unlisten(channel).await {
            Ok(()) => Ok(()),
            Err(e) => {
                let err = db_error(e);
                if err.is_connection_lost() {
                    // The session is gone, and its LISTENs with it.
                    self.lost(&err);
                    Ok(())
                } else {
                    Err(err)
                }
            }
        }
    }

    async fn next_event(&mut self) -> Result<ListenerEvent> {
        loop {
            if self.listener.is_none() || self.reconnected {
                self.open_listener().await?;
                self.reconnected = false;
                return Ok(ListenerEvent::Reconnected);
            }
            let Some(listener) = self.listener.as_mut() else {
                continue;
            };
            match listener.try_recv().await {
                Ok(Some(n)) => {
                    return Ok(ListenerEvent::Notification(Notification {
                        channel: n.channel().to_owned(),
                        payload: n.payload().to_owned(),
                    }));
                }
                Ok(None) => self.lost(&"connection closed"),
                Err(e) => {
                    let err = db_error(e);
                    if !err.is_connection_lost() {
                        return Err(err);
                    }
                    self.lost(&err);
                }
            }
        }
    }
}

impl fmt::Debug for SqlxListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlxListener")
            .field("channels", &self.channels)
            .field("connected", &self.listener.is_some())
            .field("reconnecting", &self.reconnect.is_some())
            .field("reconnected", &self.reconnected)
            .finish_non_exhaustive()
    }
}
