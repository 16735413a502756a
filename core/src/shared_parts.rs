//! What every component of a client shares, in one place.
//!
//! A client's producers, completer, notifier, heartbeat, elector and maintainer all talk to the
//! same database through the same driver, in the same schema, under the same client id, report
//! to the same metrics sink and health, and read or write the same set of held claims. Each is
//! built from a [`SharedParts`] first, then its own settings, then what only it receives, so a
//! constructor's arguments say what is particular to it (the way River passes one archetype to
//! every service).

use std::sync::Arc;

use crate::cluster::health::HealthState;
use crate::driver::Driver;
use crate::engine_metrics::MetricsSink;
use crate::schema::Schema;
use crate::work::in_flight::InFlight;

/// The handles every component of one client shares. Cheap to clone.
#[derive(Clone)]
pub(crate) struct SharedParts<D: Driver> {
    /// The database.
    pub(crate) driver: D,
    /// The schema worked.
    pub(crate) schema: Schema,
    /// The client's id, as `attempted_by`, the client row and the leader lease record it.
    pub(crate) client_id: String,
    /// Where metrics go (off unless configured).
    pub(crate) metrics: MetricsSink,
    /// What the components report for [`Client::health`](crate::Client::health).
    pub(crate) health: Arc<HealthState>,
    /// The claims the client holds: added by producers, removed by the completer, read by the
    /// heartbeat after a failover.
    pub(crate) in_flight: Arc<InFlight>,
}
