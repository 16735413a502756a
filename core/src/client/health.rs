//! [`Client::health`]: what a readiness endpoint reports.

use crate::admin::VacuumHorizon;
use crate::client::Client;
use crate::cluster::health::{Health, ListenerState};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::with_timeout;
use crate::query::{LeaderIdRow, leader_get_live, storage_horizon};

/// The most holders of the vacuum horizon a health check names.
const HEALTH_HORIZON_HOLDERS: usize = 3;

impl<D: Driver> Client<D> {
    /// This client's health now, for a readiness endpoint ([`Health::is_ready`] sums it up).
    ///
    /// Makes two quick reads on one connection (who leads, by the database clock, and what holds
    /// vacuum back); the rest is what the client's components last reported. Never fails: a
    /// database that does not answer is reported in [`Health::connected`] and
    /// [`Health::database_error`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) {
    /// let health = client.health().await;
    /// if !health.is_ready() {
    ///     tracing::warn!(?health, "not ready");
    /// }
    /// # }
    /// ```
    pub async fn health(&self) -> Health {
        let read = with_timeout("health check", async {
            let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
            let leader = conn
                .query_opt::<LeaderIdRow>(&leader_get_live(self.schema()))
                .await?;
            let holders = conn
                .query_as(&storage_horizon(self.schema(), HEALTH_HORIZON_HOLDERS))
                .await?;
            Ok((leader, VacuumHorizon { holders }))
        })
        .await;
        let (connected, database_error, leader, vacuum_horizon) = match read {
            Ok((row, horizon)) => (true, None, row.map(|LeaderIdRow(id)| id), Some(horizon)),
            Err(e) => (false, Some(e.to_string()), None, None),
        };
        let started = self.inner.running.lock().await.is_some();
        let state = &self.inner.parts.health;
        let listener = if !started || self.inner.config.queues.is_empty() {
            ListenerState::NotStarted
        } else if self.poll_only() {
            ListenerState::PollOnly
        } else {
            state.listener()
        };
        Health {
            connected,
            database_error,
            started,
            heartbeat_age: state.heartbeat_age(),
            heartbeat_interval: self.inner.config.heartbeat_interval,
            leader,
            is_leader: self.is_leader(),
            producers_running: state.producers_running(),
            producers_total: self.inner.config.queues.len(),
            listener,
            vacuum_horizon,
        }
    }
}
