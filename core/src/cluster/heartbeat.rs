//! Client liveness and failover detection.
//!
//! Each working client refreshes its `pgmill_client` row every few seconds. The table is
//! UNLOGGED: after a crash restart or a failover it comes back empty. A heartbeat that finds its
//! own row gone therefore means the database restarted under the client: it re-registers and
//! re-asserts its in-flight jobs, moving any that fell back to `available` (their fetch was lost
//! with the old primary) back to `running` under its name, before the rescuer, which waits a grace
//! period before rescuing jobs of clients without a row, could hand them to someone else.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::TimeDelta;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::cluster::health::HealthState;
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor, Row};
use crate::error::{DB_CALL_TIMEOUT, Result, with_timeout};
use crate::query::{
    RescuedRow, client_delete, client_heartbeat, client_register, job_notify_insert,
    job_reassert_running, job_release_orphaned,
};
use crate::schema::Schema;
use crate::shared_parts::SharedParts;
use crate::work::in_flight::InFlight;

/// How long after detecting a restart the client keeps releasing jobs whose outcome was lost.
const RECOVERY_WINDOW: Duration = Duration::from_secs(3);
/// How long after a fetch failed with its claim possibly committed the client keeps releasing
/// claims it does not hold: the failed statement may still be running on the server (it was given
/// up on after `DB_CALL_TIMEOUT`) and commit later.
const RECONCILE_WINDOW: Duration = Duration::from_secs(DB_CALL_TIMEOUT.as_secs() + 3);
/// Claims this recent are left alone by a release during recovery: a fetch may be registering them.
const FRESH_CLAIM: Duration = Duration::from_secs(1);
/// How often the client also sweeps, outside any recovery, for claims under its name it does not
/// hold (a claim that committed after even the reconcile window, say)...
const SWEEP_INTERVAL: Duration = Duration::from_secs(60);
/// ...of which it releases only those older than this: no fetch of this client can still be
/// registering them, since every fetch is given up on after `DB_CALL_TIMEOUT`.
const SWEEP_MARGIN: Duration = Duration::from_secs(2 * DB_CALL_TIMEOUT.as_secs());

/// Default interval between heartbeats.
pub(crate) const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(3);

/// When the client's last successful heartbeat was sent, on the monotonic clock (the client's
/// start until one succeeds). The elector reads it: a leader whose heartbeat stopped landing steps
/// down before followers, who see its row's heartbeat age, may take its lease over.
#[derive(Debug)]
pub(crate) struct LastBeat(Mutex<Instant>);

impl LastBeat {
    /// Starts at now.
    pub(crate) fn new() -> Self {
        LastBeat(Mutex::new(Instant::now()))
    }

    /// The send time of the last successful heartbeat.
    pub(crate) fn get(&self) -> Instant {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, sent: Instant) {
        let mut last = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *last = (*last).max(sent);
    }
}

/// Keeps the client's liveness row, and recovers its in-flight jobs after a restart or failover.
#[derive(Clone)]
pub(crate) struct Heartbeat<D: Driver> {
    driver: D,
    schema: Schema,
    client_id: String,
    /// The queues the client works, advertised in its row.
    queues: Vec<String>,
    /// The job kinds it has workers for, advertised in its row: the only kinds it claims.
    kinds: Vec<String>,
    interval: Duration,
    in_flight: Arc<InFlight>,
    last_beat: Arc<LastBeat>,
    health: Arc<HealthState>,
    /// Set once this start of the client has its row: its producers claim nothing before.
    registered: Arc<watch::Sender<bool>>,
}

impl<D: Driver> Heartbeat<D> {
    /// A heartbeat for the client, which works the `kinds` of `queues`, every `interval`, covering
    /// the jobs it
    /// holds, recording each success in `last_beat`, and setting `registered` once the client's
    /// row exists.
    pub(crate) fn new(
        parts: &SharedParts<D>,
        queues: Vec<String>,
        kinds: Vec<String>,
        interval: Duration,
        last_beat: Arc<LastBeat>,
        registered: Arc<watch::Sender<bool>>,
    ) -> Self {
        Heartbeat {
            driver: parts.driver.clone(),
            schema: parts.schema.clone(),
            client_id: parts.client_id.clone(),
            queues,
            kinds,
            interval,
            in_flight: Arc::clone(&parts.in_flight),
            last_beat,
            health: Arc::clone(&parts.health),
            registered,
        }
    }

    /// Beats until `stop`, then removes the client's row.
    pub(crate) async fn run(self, stop: CancellationToken) {
        let span = info_span!("heartbeat", client_id = %self.client_id);
        async move {
            let mut registered = false;
            // After a restart, jobs whose outcome was lost are released over a few beats spanning
            // at least RECOVERY_WINDOW, so the release's one-second margin for fresh fetches
            // passes; after a failed fetch, over RECONCILE_WINDOW.
            let mut recovering: Option<(u32, Instant)> = None;
            let mut last_sweep = Instant::now();
            loop {
                let sent = Instant::now();
                match with_timeout("heartbeat", self.beat(registered)).await {
                    Ok(restarted) => {
                        self.last_beat.record(sent);
                        self.health.heartbeat_succeeded();
                        registered = true;
                        self.registered.send_replace(true);
                        if restarted {
                            recovering = Some((3, Instant::now() + RECOVERY_WINDOW));
                        }
                    }
                    Err(e) => warn!(error = %e, "heartbeat failed"),
                }
                if self.in_flight.take_reconcile() {
                    let until = Instant::now() + RECONCILE_WINDOW;
                    recovering = Some(match recovering {
                        Some((beats, was)) => (beats.max(3), was.max(until)),
                        None => (3, until),
                    });
                }
                if let Some((beats, until)) = recovering {
                    match with_timeout("orphan release", self.release_orphaned(FRESH_CLAIM)).await {
                        Ok(()) if beats <= 1 && Instant::now() >= until => recovering = None,
                        Ok(()) => recovering = Some((beats.saturating_sub(1), until)),
                        Err(e) => warn!(error = %e, "releasing jobs with lost outcomes failed"),
                    }
                } else if last_sweep.elapsed() >= SWEEP_INTERVAL {
                    last_sweep = Instant::now();
                    if let Err(e) =
                        with_timeout("orphan sweep", self.release_orphaned(SWEEP_MARGIN)).await
                    {
                        warn!(error = %e, "sweeping for orphaned claims failed");
                    }
                }
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(self.interval) => {}
                }
            }
            let result = tokio::time::timeout(Duration::from_secs(5), async {
                let mut conn = ConnectionLease::acquire(&self.driver).await?;
                conn.execute(&client_delete(&self.schema, &self.client_id))
                    .await
            })
            .await;
            if !matches!(result, Ok(Ok(_))) {
                warn!("could not remove the client row; the leader deletes it after the client retention");
            }
        }
        .instrument(span)
        .await
    }

    /// One heartbeat; re-registers (and re-asserts in-flight jobs) when the row is gone. True when
    /// the row was gone although this client had registered: the database restarted or failed over.
    pub(crate) async fn beat(&self, registered: bool) -> Result<bool> {
        let mut conn = ConnectionLease::acquire(&self.driver).await?;
        let alive: Option<Row> = conn
            .query_opt(&client_heartbeat(&self.schema, &self.client_id))
            .await?;
        if alive.is_some() {
            return Ok(false);
        }
        let host = hostname::get()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_default();
        let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        conn.execute(&client_register(
            &self.schema,
            &self.client_id,
            &host,
            pid,
            &self.queues,
            &self.kinds,
        ))
        .await?;
        // Also on the first registration, though producers wait for it before claiming: a
        // claim given up on (a timeout) may commit meanwhile, and a re-registration's claims may
        // have been lost with the old primary.
        let running = self.in_flight.snapshot();
        let reasserted: i64 = if running.is_empty() {
            0
        } else {
            conn.query_scalar(&job_reassert_running(
                &self.schema,
                &running,
                &self.client_id,
            ))
            .await?
        };
        if !registered {
            debug!(num_reasserted = reasserted, "client registered");
            return Ok(false);
        }
        info!(
            num_running = running.len(),
            num_reasserted = reasserted,
            "client row was gone (database restart or failover): re-registered"
        );
        Ok(true)
    }

    /// Releases running jobs attributed to this client under claims it does not hold, except
    /// claims made within `margin`.
    async fn release_orphaned(&self, margin: Duration) -> Result<()> {
        let held = self.in_flight.snapshot();
        let margin = TimeDelta::from_std(margin).unwrap_or(TimeDelta::MAX);
        let mut conn = ConnectionLease::acquire(&self.driver).await?;
        let released: Vec<RescuedRow> = conn
            .query_as(&job_release_orphaned(
                &self.schema,
                &self.client_id,
                &held,
                margin,
            ))
            .await?;
        if !released.is_empty() {
            info!(
                num_released = released.len(),
                "released orphaned jobs (lost connection, restart or failover)"
            );
            let queues: BTreeSet<String> = released.into_iter().map(|r| r.queue).collect();
            conn.execute(&job_notify_insert(
                &self.schema,
                queues.into_iter().collect(),
            ))
            .await?;
        }
        Ok(())
    }
}
