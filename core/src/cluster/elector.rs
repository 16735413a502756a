//! Leader election: a lease row with explicit terms.
//!
//! One row in `pgmill_leader` holds the lease: `(leader_id, elected_at)` names the term and
//! `expires_at` (database time) ends it. A follower takes the lease only once it expired
//! (`leader_attempt_elect`); the leader renews only its own term (`leader_attempt_reelect`), so a
//! leader that lost its term can never extend a newer one; resigning deletes only its own term and
//! notifies followers, one of which takes over at once.
//!
//! A leader that cannot renew steps down on its own before anyone else could be elected: it
//! trusts its lease only until `send time of its last successful renewal + 3/4 of the lease`,
//! measured on its monotonic clock. The database set the expiry at least one lease after that send
//! time, so the trust window always ends before the lease does.
//!
//! A dead leader is replaced before its lease ends: a follower also takes the lease over when the
//! leader's client row has not heartbeated for the rescuer's client timeout (the age at which the
//! rescuer takes the leader's jobs back), so rescue never waits for a lease longer than that. The
//! leader's side of the bargain is the same as for its lease: it trusts its term only until
//! `send time of its last successful heartbeat + 3/4 of the client timeout`, and a client whose
//! heartbeat is failing does not stand. Clients of one schema must share the rescuer's client
//! timeout (the rescuer already assumes it). A follower sleeps until the moment the current term
//! could be taken over (its expiry, or its leader's heartbeat timing out), at most `interval`, so
//! takeover does not wait for its next periodic attempt.

use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use metrics::{Counter, Gauge};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::field::Empty;
use tracing::{Instrument, debug_span, info, info_span, warn};

use crate::admin::LeaderRow;
use crate::cluster::heartbeat::LastBeat;
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::engine_metrics::{IS_LEADER, LEADER_ELECTIONS};
use crate::error::{Error, Result};
use crate::query::{ElectionRow, leader_attempt_elect, leader_attempt_reelect, leader_resign};
use crate::schema::Schema;
use crate::shared_parts::SharedParts;

/// Default [`ElectorConfig::interval`].
pub(crate) const DEFAULT_ELECT_INTERVAL: Duration = Duration::from_secs(5);
/// Default [`ElectorConfig::lease`].
pub(crate) const DEFAULT_LEADER_LEASE: Duration = Duration::from_secs(15);

/// Settings of leader election.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ElectorConfig {
    /// How often a follower tries to take an expired lease, and how often the leader renews.
    /// Default 5 s.
    pub interval: Duration,
    /// How long a lease lasts without renewal: a new leader is elected within the shorter of
    /// `lease` and the rescuer's client timeout after the leader dies without resigning. Default
    /// 15 s.
    pub lease: Duration,
}

impl Default for ElectorConfig {
    fn default() -> Self {
        ElectorConfig {
            interval: DEFAULT_ELECT_INTERVAL,
            lease: DEFAULT_LEADER_LEASE,
        }
    }
}

impl ElectorConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.interval.is_zero() || self.lease <= self.interval {
            return Err(Error::InvalidConfig(
                "elector interval must be positive and shorter than the lease".into(),
            ));
        }
        Ok(())
    }

    /// How long after sending a successful renewal the leader still trusts its lease.
    fn trust(&self) -> Duration {
        self.lease * 3 / 4
    }
}

/// Campaigns for, holds and resigns the schema's leader lease.
#[derive(Clone)]
pub(crate) struct Elector<D: Driver> {
    driver: D,
    schema: Schema,
    client_id: String,
    config: ElectorConfig,
    /// True while this client leads.
    is_leader: Arc<watch::Sender<bool>>,
    /// Woken by leadership notifications (a resignation): try to take over now.
    kick: Arc<Notify>,
    elections: Counter,
    leading: Gauge,
    /// This client's heartbeat, and the age at which a client's heartbeat means it is dead.
    heartbeat: Option<(Arc<LastBeat>, Duration)>,
}

/// Shortest sleep between election attempts while waiting for a term to end.
const MIN_WAIT: Duration = Duration::from_millis(20);

impl<D: Driver> Elector<D> {
    /// An elector for the client, publishing leadership to `is_leader` and trying to take over
    /// whenever `kick` is notified.
    pub(crate) fn new(
        parts: &SharedParts<D>,
        config: ElectorConfig,
        is_leader: Arc<watch::Sender<bool>>,
        kick: Arc<Notify>,
    ) -> Self {
        Elector {
            driver: parts.driver.clone(),
            schema: parts.schema.clone(),
            client_id: parts.client_id.clone(),
            config,
            is_leader,
            kick,
            elections: parts.metrics.counter(LEADER_ELECTIONS, &[]),
            leading: parts.metrics.gauge(IS_LEADER, &[]),
            heartbeat: None,
        }
    }

    /// Whether this client leads, as this elector publishes it.
    pub(crate) fn is_leader(&self) -> watch::Receiver<bool> {
        self.is_leader.subscribe()
    }

    /// Ties leadership to this client's heartbeat (`last_beat`): it takes over leaders whose
    /// heartbeat is older than `client_timeout`, and trusts its own term only while its heartbeat
    /// lands, stepping down before followers would take over.
    pub(crate) fn with_heartbeat(
        mut self,
        last_beat: Arc<LastBeat>,
        client_timeout: Duration,
    ) -> Self {
        self.heartbeat = Some((last_beat, client_timeout));
        self
    }

    /// Until when this client trusts its own heartbeat to show it alive: 3/4 of the client timeout
    /// after its last successful heartbeat was sent.
    fn heartbeat_trust(&self) -> Option<Instant> {
        self.heartbeat
            .as_ref()
            .map(|(beat, timeout)| beat.get() + *timeout * 3 / 4)
    }

    /// Until when the term renewed at `renewed` is trusted.
    fn trust_until(&self, renewed: Instant) -> Instant {
        let lease = renewed + self.config.trust();
        self.heartbeat_trust().map_or(lease, |h| h.min(lease))
    }

    /// How long a follower that saw `row` waits before its next attempt.
    fn wait_after(&self, row: Option<&ElectionRow>) -> Duration {
        let interval = self.config.interval;
        let Some(us) = row.and_then(|r| r.wait_us) else {
            return interval;
        };
        let until = Duration::from_micros(u64::try_from(us).unwrap_or(0));
        // Just past the moment: the database compares strictly.
        (until + MIN_WAIT).clamp(MIN_WAIT.min(interval), interval)
    }

    /// Publishes whether this client leads, to the client and the `pgmill_is_leader` gauge.
    fn set_leader(&self, leads: bool) {
        let was = self.is_leader.send_replace(leads);
        if leads && !was {
            self.elections.increment(1);
            self.leading.increment(1.0);
        } else if !leads && was {
            self.leading.decrement(1.0);
        }
    }

    /// Campaigns and leads until `stop`, resigning on the way out.
    pub(crate) async fn run(self, stop: CancellationToken) {
        let span = info_span!("elector", client_id = %self.client_id);
        async move {
            let lease = TimeDelta::from_std(self.config.lease).unwrap_or(TimeDelta::MAX);
            let leader_timeout = self.heartbeat.as_ref().map_or(TimeDelta::MAX, |(_, t)| {
                TimeDelta::from_std(*t).unwrap_or(TimeDelta::MAX)
            });
            let mut term: Option<(LeaderRow, Instant)> = None;
            loop {
                match term.take() {
                    None => {
                        let mut seen = None;
                        // A client whose own heartbeat is failing does not stand: followers would
                        // take its term over at once.
                        if self.heartbeat_trust().is_none_or(|t| Instant::now() < t) {
                            let sent = Instant::now();
                            let stmt = leader_attempt_elect(
                                &self.schema,
                                &self.client_id,
                                lease,
                                leader_timeout,
                            );
                            let span = debug_span!("pgmill.leader_elect", elected = Empty);
                            let attempt = self
                                .query::<ElectionRow>(&stmt, self.config.interval)
                                .instrument(span.clone())
                                .await;
                            span.record("elected", matches!(&attempt, Ok(Some(r)) if r.elected));
                            match attempt {
                                Ok(Some(row)) if row.elected => {
                                    info!(elected_at = %row.term.elected_at, "elected leader");
                                    self.set_leader(true);
                                    term = Some((row.term, sent));
                                    continue;
                                }
                                Ok(row) => seen = row,
                                Err(e) => warn!(error = %e, "election attempt failed"),
                            }
                        }
                        tokio::select! {
                            () = stop.cancelled() => return,
                            () = self.kick.notified() => {}
                            () = tokio::time::sleep(self.wait_after(seen.as_ref())) => {}
                        }
                    }
                    Some((row, renewed)) => {
                        let wake =
                            (Instant::now() + self.config.interval).min(self.trust_until(renewed));
                        tokio::select! {
                            () = stop.cancelled() => {
                                self.resign(&row).await;
                                return;
                            }
                            () = tokio::time::sleep_until(wake) => {}
                        }
                        // Heartbeats that landed meanwhile extend the trust.
                        let trust_until = self.trust_until(renewed);
                        if Instant::now() >= trust_until {
                            let why = if self.heartbeat_trust().is_some_and(|h| h <= trust_until) {
                                "its heartbeat has not landed in time"
                            } else {
                                "could not renew the lease in time"
                            };
                            self.step_down(why);
                            continue;
                        }
                        let sent = Instant::now();
                        let stmt = leader_attempt_reelect(&self.schema, &row, lease);
                        match self.query::<LeaderRow>(&stmt, trust_until - sent).await {
                            Ok(Some(_)) => term = Some((row, sent)),
                            Ok(None) => self.step_down("the term is over"),
                            Err(e) => {
                                warn!(error = %e, "lease renewal failed");
                                term = Some((row, renewed));
                            }
                        }
                    }
                }
            }
        }
        .instrument(span)
        .await
    }

    fn step_down(&self, why: &str) {
        warn!(reason = why, "stepping down as leader");
        self.set_leader(false);
    }

    async fn query<R: crate::driver::FromRow + Send>(
        &self,
        stmt: &crate::driver::Statement,
        limit: Duration,
    ) -> Result<Option<R>> {
        tokio::time::timeout(limit, async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.query_opt(stmt).await
        })
        .await
        .map_err(|_| Error::Timeout("leader election query"))?
    }

    async fn resign(&self, row: &LeaderRow) {
        self.set_leader(false);
        let stmt = leader_resign(&self.schema, row);
        let result = tokio::time::timeout(Duration::from_secs(5), async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.execute(&stmt).await
        })
        .await;
        match result {
            Ok(Ok(_)) => info!("resigned leadership"),
            Ok(Err(e)) => warn!(error = %e, "resigning failed; the lease will expire"),
            Err(_) => warn!("resigning timed out; the lease will expire"),
        }
    }
}
