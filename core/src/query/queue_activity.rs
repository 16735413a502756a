//! Recent activity per queue: the outcomes within a window (`job_count_recent_by_queue.sql`).

use chrono::TimeDelta;

use super::micros;
use crate::admin::QueueActivity;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::query::catalog::Query;
use crate::schema::Schema;

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
