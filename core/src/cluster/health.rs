//! A client's health, for a readiness endpoint: what its background components last reported
//! ([`HealthState`], written by them as they run) and a round trip to the database
//! ([`Client::health`](crate::Client::health)).

use crate::admin::VacuumHorizon;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The state of a client's notification listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListenerState {
    /// The client is not started, or has no queues (it listens only to work them).
    NotStarted,
    /// Opening the listener connection, for the first time or again after losing it; producers
    /// poll meanwhile.
    Connecting,
    /// Listening: inserts, pauses and cancels reach the client at once.
    Listening,
    /// The client only polls, by configuration or because the driver has no listener.
    PollOnly,
}

/// A client's health at one moment, from [`Client::health`](crate::Client::health).
///
/// [`Health::is_ready`] sums it up for a readiness probe; the fields say what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Health {
    /// A pooled connection answered just now.
    pub connected: bool,
    /// Why the database did not answer, when it did not.
    pub database_error: Option<String>,
    /// The client is started and not stopping.
    pub started: bool,
    /// Time since this client's heartbeat last reached the database; `None` before the first.
    pub heartbeat_age: Option<Duration>,
    /// The configured heartbeat interval, to judge [`Health::heartbeat_age`] by.
    pub heartbeat_interval: Duration,
    /// The id of the client holding a live leadership lease (by the database clock), if any: the
    /// leader runs scheduling, rescue and cleaning for every client of the schema.
    pub leader: Option<String>,
    /// This client is the leader.
    pub is_leader: bool,
    /// Queues whose producer is fetching now.
    pub producers_running: usize,
    /// Queues this client is configured to work.
    pub producers_total: usize,
    /// The notification listener.
    pub listener: ListenerState,
    /// What holds vacuum back on the database (a snapshot held open elsewhere makes the job
    /// tables' dead rows pile up); `None` when the database did not answer. It does not count
    /// against [`Health::is_ready`]: the cause is outside the client.
    pub vacuum_horizon: Option<VacuumHorizon>,
}

impl Health {
    /// True when the client works as configured: the database answers, the client is started,
    /// every producer fetches, the heartbeat is recent (within three intervals), a leader is
    /// known, and the listener listens (or the client only polls). A client without queues (one
    /// that only inserts) is ready when the database answers.
    pub fn is_ready(&self) -> bool {
        if !self.connected {
            return false;
        }
        if self.producers_total == 0 {
            return true;
        }
        let heartbeat_fresh = self
            .heartbeat_age
            .is_some_and(|age| age <= self.heartbeat_interval * 3);
        self.started
            && self.producers_running == self.producers_total
            && heartbeat_fresh
            && self.leader.is_some()
            && matches!(
                self.listener,
                ListenerState::Listening | ListenerState::PollOnly
            )
    }
}

/// What a client's components report as they run, read by [`Client::health`](crate::Client::health).
#[derive(Debug, Default)]
pub(crate) struct HealthState {
    heartbeat_at: Mutex<Option<Instant>>,
    producers_running: AtomicUsize,
    listener: AtomicU8,
}

const LISTENER_NOT_STARTED: u8 = 0;
const LISTENER_CONNECTING: u8 = 1;
const LISTENER_LISTENING: u8 = 2;

impl HealthState {
    /// The heartbeat reached the database.
    pub(crate) fn heartbeat_succeeded(&self) {
        *self.heartbeat_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    pub(crate) fn heartbeat_age(&self) -> Option<Duration> {
        self.heartbeat_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map(|at| at.elapsed())
    }

    /// A producer's fetch loop runs while the guard lives.
    pub(crate) fn producer_running(&self) -> ProducerRunning<'_> {
        self.producers_running.fetch_add(1, Ordering::SeqCst);
        ProducerRunning(self)
    }

    pub(crate) fn producers_running(&self) -> usize {
        self.producers_running.load(Ordering::SeqCst)
    }

    /// The listener is being opened (`false`) or listens (`true`).
    pub(crate) fn set_listening(&self, listening: bool) {
        let state = if listening {
            LISTENER_LISTENING
        } else {
            LISTENER_CONNECTING
        };
        self.listener.store(state, Ordering::SeqCst);
    }

    /// The notifier ended (the client stops).
    pub(crate) fn listener_stopped(&self) {
        self.listener.store(LISTENER_NOT_STARTED, Ordering::SeqCst);
    }

    pub(crate) fn listener(&self) -> ListenerState {
        match self.listener.load(Ordering::SeqCst) {
            LISTENER_CONNECTING => ListenerState::Connecting,
            LISTENER_LISTENING => ListenerState::Listening,
            _ => ListenerState::NotStarted,
        }
    }
}

/// Counts a producer as running until dropped.
pub(crate) struct ProducerRunning<'a>(&'a HealthState);

impl Drop for ProducerRunning<'_> {
    fn drop(&mut self) {
        self.0.producers_running.fetch_sub(1, Ordering::SeqCst);
    }
}
