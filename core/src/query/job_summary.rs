//! The dashboard's job list: jobs newest first below a keyset cursor, each cut to a summary
//! (`job_list_newest.sql`).

use crate::admin::{DEFAULT_PREVIEW_CHARS, JobSummary, JobSummaryPage, JobSummaryParams};
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::JobId;
use crate::query::catalog::Query;
use crate::schema::Schema;

impl FromRow for JobSummary {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(JobSummary {
            id: JobId(row.take("id")?),
            state: row.take::<String>("state")?.parse()?,
            queue: row.take("queue")?,
            kind: row.take("kind")?,
            args_preview: row.take("args_preview")?,
            args_chars: row.take("args_chars")?,
            priority: row.take("priority")?,
            attempt: row.take("attempt")?,
            max_attempts: row.take("max_attempts")?,
            created_at: row.take("created_at")?,
            scheduled_at: row.take("scheduled_at")?,
            attempted_at: row.take("attempted_at")?,
            finalized_at: row.take("finalized_at")?,
            error_count: row.take("error_count")?,
            last_error: row.take("last_error")?,
            tags: row.take("tags")?,
        })
    }
}

pub(crate) fn job_list_newest(schema: &Schema, p: &JobSummaryParams) -> Statement {
    let preview = p.preview_chars.unwrap_or(DEFAULT_PREVIEW_CHARS);
    schema
        .statement(Query::JobListNewest)
        .bind(p.filter.state_names())
        .bind(p.filter.queues.clone())
        .bind(p.filter.kinds.clone())
        .bind(p.before.map(|c| c.0))
        .bind(i64::try_from(p.page_size()).unwrap_or(i64::MAX))
        .bind(i32::try_from(preview).unwrap_or(i32::MAX))
}

pub(crate) fn job_list_newest_page(jobs: Vec<JobSummary>, p: &JobSummaryParams) -> JobSummaryPage {
    let next_cursor = if jobs.len() == p.page_size() {
        jobs.last().map(|j| j.id)
    } else {
        None
    };
    JobSummaryPage { jobs, next_cursor }
}
