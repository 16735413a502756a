//! Recent activity per queue: the outcomes within a window (`job_count_recent_by_queue.sql`).

use chrono::TimeDelta;

use super::micros;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::query::catalog::Query;
use crate::schema::Schema;

/// What one queue finished within a recent window.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueActivity {
    /// The queue (any queue with jobs, registered or not).
    pub queue: String,
    /// Jobs completed within the window.
    pub completed: i64,
    /// Jobs discarded within the window (attempts used up, or discarded by their worker).
    pub discarded: i64,
    /// Jobs cancelled within the window.
    pub cancelled: i64,
}

impl QueueActivity {
    /// Discarded jobs as a fraction of completed and discarded ones, `None` when neither.
    pub fn failure_rate(&self) -> Option<f64> {
        let finished = self.completed + self.discarded;
        #[allow(clippy::cast_precision_loss)]
        (finished > 0).then(|| self.discarded as f64 / finished as f64)
    }
}

impl FromRow for QueueActivity {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(QueueActivity {
            queue: row.take("queue")?,
            completed: row.take("completed")?,
            discarded: row.take("discarded")?,
            cancelled: row.take("cancelled")?,
        })
    }
}

pub(crate) fn job_count_recent_by_queue(schema: &Schema, window: TimeDelta) -> Statement {
    schema
        .statement(Query::JobCountRecentByQueue)
        .bind(micros(window))
}
