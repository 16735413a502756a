//! The notifier: one dedicated listener connection per client, shared by every topic and queue.
//!
//! Topics are scoped to the schema (`<schema>.pgmill_insert`, `<schema>.pgmill_control`,
//! `<schema>.pgmill_leadership`), so two installations in one database never hear each other.
//! Notifications are only ever a shortcut: polling is the backstop, so a lost notification costs
//! latency, never a job. When the connection drops, the listener reconnects (with backoff) and the
//! notifier tells every producer to fetch and re-read its queue's state at once, instead of waiting
//! for the next poll.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use metrics::{Counter, Gauge};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, debug_span, info, info_span, warn};

use crate::cluster::health::HealthState;
use crate::driver::{Driver, Listener, ListenerEvent, Notification};
use crate::engine_metrics::{LISTENER_DOWN, NOTIFIER_RECONNECTS};
use crate::error::Result;
use crate::job::JobId;
use crate::query::FetchPosition;
use crate::query::topic::{TOPIC_CONTROL, TOPIC_INSERT, TOPIC_LEADERSHIP, TOPIC_REWIND};
use crate::schema::Schema;
use crate::shared_parts::SharedParts;
use crate::work::queue_handle::QueueHandle;

/// A message on the control topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum ControlMessage {
    /// Pause a queue (`*`: every queue).
    Pause { queue: String },
    /// Resume a queue (`*`: every queue).
    Resume { queue: String },
    /// Cancel a running job.
    Cancel { job_id: JobId, queue: String },
}

/// Called with each leadership notification's payload (empty after a reconnect).
pub(crate) type LeadershipHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Where notifications go.
#[derive(Clone)]
pub(crate) struct NotificationRouter {
    queues: HashMap<String, Arc<QueueHandle>>,
    on_leadership: Option<LeadershipHook>,
}

impl NotificationRouter {
    /// Routes insert and control notifications to `queues`, leadership ones to `on_leadership`.
    pub(crate) fn new(
        queues: HashMap<String, Arc<QueueHandle>>,
        on_leadership: Option<LeadershipHook>,
    ) -> Self {
        NotificationRouter {
            queues,
            on_leadership,
        }
    }

    fn handles<'a>(&'a self, queue: &'a str) -> impl Iterator<Item = &'a Arc<QueueHandle>> + 'a {
        self.queues
            .iter()
            .filter(move |(name, _)| queue == "*" || name.as_str() == queue)
            .map(|(_, h)| h)
    }

    fn route(&self, schema: &Schema, n: &Notification) {
        let topic = n
            .channel
            .strip_prefix(schema.name())
            .and_then(|t| t.strip_prefix('.'));
        match topic {
            Some(TOPIC_INSERT) => {
                if let Some(h) = self.queues.get(&n.payload) {
                    h.wake();
                }
            }
            Some(TOPIC_CONTROL) => match serde_json::from_str::<ControlMessage>(&n.payload) {
                Ok(ControlMessage::Pause { queue }) => {
                    self.handles(&queue).for_each(|h| h.set_paused(true))
                }
                Ok(ControlMessage::Resume { queue }) => {
                    self.handles(&queue).for_each(|h| h.set_paused(false));
                }
                Ok(ControlMessage::Cancel { job_id, queue }) => {
                    self.handles(&queue).for_each(|h| h.cancel_job(job_id));
                }
                Err(e) => {
                    warn!(error = %e, payload = %n.payload, "ignoring a malformed control message")
                }
            },
            Some(TOPIC_REWIND) => match parse_rewind(&n.payload) {
                Some((queue, position)) => {
                    if let Some(h) = self.queues.get(queue) {
                        h.rewind(position);
                    }
                }
                None => warn!(payload = %n.payload, "ignoring a malformed rewind"),
            },
            Some(TOPIC_LEADERSHIP) => {
                if let Some(f) = &self.on_leadership {
                    f(&n.payload);
                }
            }
            _ => debug!(channel = %n.channel, "notification on an unknown channel"),
        }
    }

    /// After a reconnect, messages may have been missed: every producer fetches and re-reads.
    fn resync(&self) {
        for h in self.queues.values() {
            h.request_resync();
        }
        if let Some(f) = &self.on_leadership {
            f("");
        }
    }
}

/// Listens on the client's dedicated connection and routes what it hears.
#[derive(Clone)]
pub(crate) struct Notifier<D: Driver> {
    driver: D,
    schema: Schema,
    router: NotificationRouter,
    reconnects: Counter,
    /// `pgmill_listener_down`, shared by the process's clients.
    listener_down: Gauge,
    health: Arc<HealthState>,
}

impl<D: Driver> Notifier<D> {
    /// A notifier for the client's schema's topics, handing what it hears to `router`.
    pub(crate) fn new(parts: &SharedParts<D>, router: NotificationRouter) -> Self {
        Notifier {
            driver: parts.driver.clone(),
            schema: parts.schema.clone(),
            router,
            reconnects: parts.metrics.counter(NOTIFIER_RECONNECTS, &[]),
            listener_down: parts.metrics.gauge(LISTENER_DOWN, &[]),
            health: Arc::clone(&parts.health),
        }
    }

    /// Listens until `stop`, reconnecting with backoff.
    pub(crate) async fn run(self, stop: CancellationToken) {
        let span = info_span!("notifier", schema = self.schema.name());
        let mut state = ListenerStateGuard {
            health: Arc::clone(&self.health),
            down_gauge: self.listener_down.clone(),
            down: false,
        };
        state.set_listening(false);
        async move {
            let channels: Vec<String> =
                [TOPIC_INSERT, TOPIC_CONTROL, TOPIC_LEADERSHIP, TOPIC_REWIND]
                    .iter()
                    .map(|t| self.schema.channel(t))
                    .collect();
            let mut backoff = Backoff::new();
            let mut listener: Option<D::Listener> = None;
            // Every open after the first is a reconnect.
            let mut opened_before = false;
            loop {
                if stop.is_cancelled() {
                    return;
                }
                let l = match listener.as_mut() {
                    Some(l) => l,
                    None => match self
                        .open(&channels)
                        .instrument(debug_span!(
                            "pgmill.notifier_connect",
                            reconnect = opened_before
                        ))
                        .await
                    {
                        Ok(l) => {
                            if opened_before {
                                self.reconnects.increment(1);
                                info!("listener reopened; producers re-poll");
                            }
                            opened_before = true;
                            state.set_listening(true);
                            backoff.reset();
                            // Anything sent before we listened was missed.
                            self.router.resync();
                            listener.insert(l)
                        }
                        Err(e) => {
                            state.set_listening(false);
                            warn!(error = %e, "cannot open the listener; polling meanwhile");
                            if backoff.sleep(&stop).await {
                                return;
                            }
                            continue;
                        }
                    },
                };
                tokio::select! {
                    () = stop.cancelled() => return,
                    event = l.next_event() => match event {
                        Ok(ListenerEvent::Notification(n)) => {
                            backoff.reset();
                            self.router.route(&self.schema, &n);
                        }
                        Ok(ListenerEvent::Reconnected) => {
                            state.set_listening(true);
                            self.reconnects.increment(1);
                            info!("listener reconnected; producers re-poll");
                            backoff.reset();
                            self.router.resync();
                        }
                        Err(e) => {
                            state.set_listening(false);
                            warn!(error = %e, "listener failed; it reconnects on the next call");
                            if backoff.sleep(&stop).await {
                                return;
                            }
                        }
                    },
                }
            }
        }
        .instrument(span)
        .await
    }

    async fn open(&self, channels: &[String]) -> Result<D::Listener> {
        let mut l = self.driver.listener().await?;
        for c in channels {
            l.listen(c).await?;
        }
        Ok(l)
    }
}

/// Reports the listener's state to the client's health and to `pgmill_listener_down` (one count
/// per client whose listener is down), and reports it stopped when the notifier's task ends.
struct ListenerStateGuard {
    health: Arc<HealthState>,
    down_gauge: Gauge,
    /// This client counts in `down_gauge`.
    down: bool,
}

impl ListenerStateGuard {
    /// The listener is being opened (`false`) or listens (`true`).
    fn set_listening(&mut self, listening: bool) {
        self.health.set_listening(listening);
        if listening == self.down {
            self.down = !listening;
            if self.down {
                self.down_gauge.increment(1.0);
            } else {
                self.down_gauge.decrement(1.0);
            }
        }
    }
}

impl Drop for ListenerStateGuard {
    fn drop(&mut self) {
        self.health.listener_stopped();
        if self.down {
            self.down_gauge.decrement(1.0);
        }
    }
}

/// Exponential backoff from 100 ms to 5 s.
struct Backoff(Duration);

impl Backoff {
    const MIN: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    fn new() -> Self {
        Backoff(Self::MIN)
    }

    fn reset(&mut self) {
        self.0 = Self::MIN;
    }

    /// Sleeps the current delay and doubles it; true when `stop` fired meanwhile.
    async fn sleep(&mut self, stop: &CancellationToken) -> bool {
        let d = self.0;
        self.0 = (self.0 * 2).min(Self::MAX);
        tokio::select! {
            () = stop.cancelled() => true,
            () = tokio::time::sleep(d) => false,
        }
    }
}

/// A rewind's payload: `queue<TAB>priority<TAB>scheduled_at in µs<TAB>id`.
fn parse_rewind(payload: &str) -> Option<(&str, FetchPosition)> {
    let mut parts = payload.split('\t');
    let queue = parts.next()?;
    let priority = parts.next()?.parse().ok()?;
    let micros: i64 = parts.next()?.parse().ok()?;
    let id = parts.next()?.parse().ok()?;
    let scheduled_at = DateTime::<Utc>::from_timestamp_micros(micros)?;
    parts
        .next()
        .is_none()
        .then_some((queue, (priority, scheduled_at, JobId(id))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_have_a_stable_wire_form() {
        let m = ControlMessage::Cancel {
            job_id: JobId(7),
            queue: "q".into(),
        };
        let s = serde_json::to_string(&m).unwrap();
        assert_eq!(s, r#"{"action":"cancel","job_id":7,"queue":"q"}"#);
        assert_eq!(serde_json::from_str::<ControlMessage>(&s).unwrap(), m);
        let p: ControlMessage = serde_json::from_str(r#"{"action":"pause","queue":"*"}"#).unwrap();
        assert_eq!(p, ControlMessage::Pause { queue: "*".into() });
    }
}
