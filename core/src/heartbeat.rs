//! Client liveness and failover detection.
//!
//! Each working client refreshes its `pgmill_client` row every few seconds. The table is
//! UNLOGGED: after a crash restart or a failover it comes back empty. A heartbeat that finds its
//! own row gone therefore means the database restarted under the client: it re-registers and
//! re-asserts its in-flight jobs, moving any that fell back to `available` (their fetch was lost
//! with the old primary) back to `running` under its name, before the rescuer, which waits a grace
//! period before rescuing jobs of clients without a row, could hand them to someone else.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::driver::{Driver, Executor, Row};
use crate::error::Result;
use crate::producer::QueueHandle;
use crate::query::{client_delete, client_heartbeat, client_register, job_reassert_running};
use crate::schema::Schema;

/// Default interval between heartbeats.
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(3);

#[derive(Clone)]
pub(crate) struct Heartbeat<D: Driver> {
    pub(crate) driver: D,
    pub(crate) schema: Schema,
    pub(crate) client_id: String,
    pub(crate) interval: Duration,
    pub(crate) queues: HashMap<String, Arc<QueueHandle>>,
}

impl<D: Driver> Heartbeat<D> {
    pub(crate) async fn run(self, stop: CancellationToken) {
        let span = info_span!("heartbeat", client_id = %self.client_id);
        async move {
            let mut registered = false;
            loop {
                match self.beat(registered).await {
                    Ok(()) => registered = true,
                    Err(e) => warn!(error = %e, "heartbeat failed"),
                }
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(self.interval) => {}
                }
            }
            let result = tokio::time::timeout(Duration::from_secs(5), async {
                let mut conn = self.driver.acquire().await?;
                conn.execute(&client_delete(&self.schema, &self.client_id))
                    .await
            })
            .await;
            if !matches!(result, Ok(Ok(_))) {
                warn!("could not remove the client row; it expires");
            }
        }
        .instrument(span)
        .await
    }

    /// One heartbeat; re-registers (and re-asserts in-flight jobs) when the row is gone.
    pub(crate) async fn beat(&self, registered: bool) -> Result<()> {
        let mut conn = self.driver.acquire().await?;
        let alive: Option<Row> = conn
            .query_opt(&client_heartbeat(&self.schema, &self.client_id))
            .await?;
        if alive.is_some() {
            return Ok(());
        }
        let host = hostname::get()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_default();
        let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        conn.execute(&client_register(&self.schema, &self.client_id, &host, pid))
            .await?;
        if !registered {
            debug!("client registered");
            return Ok(());
        }
        let running: Vec<_> = self
            .queues
            .values()
            .flat_map(|h| h.running_attempts())
            .collect();
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
        info!(
            num_running = running.len(),
            num_reasserted = reasserted,
            "client row was gone (database restart or failover): re-registered"
        );
        Ok(())
    }
}
