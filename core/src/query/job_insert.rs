//! Inserting jobs: one, many (unique or not, plain or not), by COPY, and the notifications of the
//! insert topic that announce them. Each builds its statement without I/O, so the async and the
//! blocking (diesel host transaction) paths share one definition.

use chrono::{DateTime, Utc};

use crate::driver::{CopyIn, FromRow, Row, RowView, Statement};
use crate::error::Result;
use crate::job::{InsertResult, JobId, JobRow, JobState};
use crate::job_args::InsertParams;
use crate::query::catalog::Query;
use crate::query::topic::TOPIC_INSERT;
use crate::schema::Schema;

/// The insert of jobs none of which is unique, returning their rows; with `notify` non-empty, the
/// statement also notifies each of those queues on the insert channel (delivered at its commit).
pub(crate) fn job_insert_many(
    schema: &Schema,
    params: &[InsertParams],
    notify: &[&str],
) -> Statement {
    let rows: Vec<serde_json::Value> = params.iter().map(InsertParams::to_insert_json).collect();
    schema
        .statement(Query::JobInsertMany)
        .bind(rows)
        .bind((!notify.is_empty()).then(|| schema.channel(TOPIC_INSERT)))
        .bind(
            notify
                .iter()
                .map(|q| (*q).to_owned())
                .collect::<Vec<String>>(),
        )
}

/// The insert of jobs some of which are unique, returning [`InsertResult`]s in input order.
pub(crate) fn job_insert_unique_many(schema: &Schema, params: &[InsertParams]) -> Statement {
    let rows: Vec<serde_json::Value> = params.iter().map(InsertParams::to_insert_json).collect();
    schema.statement(Query::JobInsertUniqueMany).bind(rows)
}

impl FromRow for InsertResult {
    fn from_row(mut row: Row) -> Result<Self> {
        let skipped_as_duplicate = row.take("skipped_as_duplicate")?;
        Ok(InsertResult::new(
            JobRow::from_row(row)?,
            skipped_as_duplicate,
        ))
    }
}

/// The insert of one job, with typed parameters; it returns an [`InsertedRow`]. With `notify`,
/// a job due now (its state is then `available` whatever the database clock says) also notifies
/// its queue on the insert channel from the same statement (delivered at its commit); other jobs
/// ignore it. The args go as JSON text, written from the job's value without copying it.
///
/// # Errors
///
/// [`Error::InvalidConfig`](crate::Error::InvalidConfig) should the job's args fail to serialize.
pub(crate) fn job_insert_one(schema: &Schema, p: &InsertParams, notify: bool) -> Result<Statement> {
    let channel = (notify && p.is_due_now()).then(|| schema.channel(TOPIC_INSERT));
    let args = args_text(p)?;
    if p.is_due_now() && CopyShape::of(p) == CopyShape::Plain {
        // Nothing for the server to decide or parse beyond the args (job_insert_plain_one.sql),
        // and without a notification no subquery to carry one.
        let plain = |query| {
            schema
                .statement(query)
                .bind(p.queue.as_str())
                .bind(p.kind.as_str())
                .bind(args)
                .bind(p.priority)
                .bind(p.max_attempts)
        };
        return Ok(match channel {
            Some(channel) => plain(Query::JobInsertPlainOneNotify).bind(channel),
            None => plain(Query::JobInsertPlainOne),
        });
    }
    Ok(schema
        .statement(Query::JobInsertOne)
        .bind(p.queue.as_str())
        .bind(p.kind.as_str())
        .bind(args)
        .bind(p.metadata.clone())
        .bind(p.priority)
        .bind(p.max_attempts)
        .bind(p.tags.clone())
        .bind(p.pending)
        .bind(p.scheduled_at)
        .bind(
            p.schedule_in
                .map(|d| d.num_microseconds().unwrap_or(i64::MAX)),
        )
        .bind(channel))
}

/// A job's args as JSON text, which the insert statements cast to `jsonb` (the server parses it
/// as it parses a `jsonb` value); cheaper than binding a copy of the value.
fn args_text(p: &InsertParams) -> Result<String> {
    serde_json::to_string(&p.args).map_err(|e| {
        crate::Error::InvalidConfig(format!("args of {} do not serialize: {e}", p.kind))
    })
}

/// What [`job_insert_one`] returns: the columns of the new row the database decides.
pub(crate) struct InsertedRow {
    id: JobId,
    state: JobState,
    created_at: DateTime<Utc>,
    scheduled_at: DateTime<Utc>,
}

impl InsertedRow {
    /// The columns job_insert_one.sql returns, in order.
    const COLUMNS: [&'static str; 5] = ["id", "state", "created_at", "scheduled_at", "xact_id"];

    /// The columns the plain forms (job_insert_plain_one.sql and its notifying twin) return, in
    /// order: their job is available and scheduled at its creation (both columns default to the
    /// same `now()`), so only the time is sent.
    const PLAIN_COLUMNS: [&'static str; 3] = ["id", "created_at", "xact_id"];

    /// Decodes a row of [`job_insert_one`]'s statements in place, by position (checked against
    /// the names the statements give), with the inserting transaction's id.
    pub(crate) fn read(row: &mut dyn RowView) -> Result<WithXact<InsertedRow>> {
        if row.width() == Self::PLAIN_COLUMNS.len() {
            row.expect_columns(&Self::PLAIN_COLUMNS)?;
            let created_at = row.read(1)?;
            return Ok(WithXact {
                row: InsertedRow {
                    id: JobId(row.read(0)?),
                    state: JobState::Available,
                    created_at,
                    scheduled_at: created_at,
                },
                xact_id: row.read(2)?,
            });
        }
        row.expect_columns(&Self::COLUMNS)?;
        Ok(WithXact {
            row: InsertedRow {
                id: JobId(row.read(0)?),
                state: row.read::<String>(1)?.parse()?,
                created_at: row.read(2)?,
                scheduled_at: row.read(3)?,
            },
            xact_id: row.read(4)?,
        })
    }

    /// The whole new row: what the database decided, the rest as `p` bound it, and the column
    /// defaults of a job never attempted (migrations 001 and 002).
    pub(crate) fn into_job(self, p: InsertParams) -> JobRow {
        JobRow {
            id: self.id,
            state: self.state,
            queue: p.queue,
            kind: p.kind,
            args: p.args,
            metadata: p.metadata,
            priority: p.priority,
            attempt: 0,
            max_attempts: p.max_attempts,
            attempted_at: None,
            attempted_by: Vec::new(),
            created_at: self.created_at,
            scheduled_at: self.scheduled_at,
            finalized_at: None,
            errors: Vec::new(),
            tags: p.tags,
            claim_token: None,
        }
    }
}

/// The multi-row insert of jobs due now or pending that carry no metadata and no tags (each
/// [`CopyShape::Plain`]). Jobs that share their state, queue, priority and max_attempts, as a
/// bulk insert's jobs usually do, send those once (`job_insert_plain_alike.sql`); others send
/// every job's (`job_insert_plain_many.sql`). The args go as JSON text, written from each job's
/// value without copying it.
///
/// # Errors
///
/// [`Error::InvalidConfig`](crate::Error::InvalidConfig) should a job's args fail to serialize.
pub(crate) fn job_insert_plain_many(
    schema: &Schema,
    params: &[&InsertParams],
) -> Result<Statement> {
    let state = |p: &InsertParams| {
        if p.pending {
            JobState::Pending
        } else {
            JobState::Available
        }
    };
    let kinds: Vec<String> = params.iter().map(|p| p.kind.clone()).collect();
    let args = params
        .iter()
        .copied()
        .map(args_text)
        .collect::<Result<Vec<String>>>()?;
    if let Some(first) = params.first()
        && params.iter().all(|p| {
            p.pending == first.pending
                && p.priority == first.priority
                && p.max_attempts == first.max_attempts
                && p.queue == first.queue
        })
    {
        return Ok(schema
            .statement(Query::JobInsertPlainAlike)
            .bind(state(first).as_str())
            .bind(first.queue.as_str())
            .bind(kinds)
            .bind(args)
            .bind(first.priority)
            .bind(first.max_attempts));
    }
    Ok(schema
        .statement(Query::JobInsertPlainMany)
        .bind(
            params
                .iter()
                .map(|p| state(p).as_str().to_owned())
                .collect::<Vec<_>>(),
        )
        .bind(params.iter().map(|p| p.queue.clone()).collect::<Vec<_>>())
        .bind(kinds)
        .bind(args)
        .bind(
            params
                .iter()
                .map(|p| i64::from(p.priority))
                .collect::<Vec<_>>(),
        )
        .bind(
            params
                .iter()
                .map(|p| i64::from(p.max_attempts))
                .collect::<Vec<_>>(),
        ))
}

/// Which columns a bulk COPY of jobs carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CopyShape {
    /// Every column the insert sets.
    Full,
    /// Jobs with no metadata and no tags: those columns are left to their defaults.
    Plain,
}

impl CopyShape {
    /// The narrowest shape that carries everything `p` sets.
    pub(crate) fn of(p: &InsertParams) -> Self {
        let no_metadata = p
            .metadata
            .as_object()
            .is_some_and(serde_json::Map::is_empty);
        if no_metadata && p.tags.is_empty() {
            CopyShape::Plain
        } else {
            CopyShape::Full
        }
    }
}

/// The COPY of jobs due now or pending; every param must be [`InsertParams::is_due_now`] or
/// pending without a schedule, and fit `shape` ([`CopyShape::of`]).
pub(crate) fn job_copy_available<'a>(
    schema: &Schema,
    shape: CopyShape,
    params: impl Iterator<Item = &'a InsertParams>,
) -> CopyIn {
    let query = match shape {
        CopyShape::Full => Query::JobCopyAvailable,
        CopyShape::Plain => Query::JobCopyAvailablePlain,
    };
    let mut copy = CopyIn::new(schema.statement(query).shared_sql().clone());
    for p in params {
        let state = if p.pending {
            JobState::Pending
        } else {
            JobState::Available
        };
        let mut row = copy.row();
        row.text(state.as_str())
            .text(&p.queue)
            .text(&p.kind)
            .jsonb(&p.args);
        if shape == CopyShape::Full {
            row.jsonb(&p.metadata);
        }
        row.int(i64::from(p.priority))
            .int(i64::from(p.max_attempts));
        if shape == CopyShape::Full {
            row.text_array(&p.tags);
        }
    }
    copy
}

/// Notifies the queues of those of `watched` (inserting transaction, queue) whose transaction is
/// committed; returns the transactions still in progress ([`InProgressRow`]). Every other one is
/// settled: committed, rolled back, or of a status the server no longer keeps.
pub(crate) fn job_notify_committed(schema: &Schema, watched: &[(i64, &str)]) -> Statement {
    schema
        .statement(Query::JobNotifyCommitted)
        .bind(schema.channel(TOPIC_INSERT))
        .bind(watched.iter().map(|(x, _)| *x).collect::<Vec<_>>())
        .bind(
            watched
                .iter()
                .map(|(_, q)| (*q).to_owned())
                .collect::<Vec<_>>(),
        )
}

/// The inserting transactions a look found still in progress (`in_progress`, NULL for none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InProgressRow(pub(crate) Vec<i64>);

impl FromRow for InProgressRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(InProgressRow(
            row.take::<Option<Vec<i64>>>("in_progress")?
                .unwrap_or_default(),
        ))
    }
}

/// A row of an insert statement that returns rows, with the id of the inserting transaction that
/// each such statement adds (`xact_id`): what the commit watcher asks the database about.
pub(crate) struct WithXact<T> {
    pub(crate) row: T,
    pub(crate) xact_id: i64,
}

impl<T: FromRow> FromRow for WithXact<T> {
    fn from_row(mut row: Row) -> Result<Self> {
        let xact_id = row.take("xact_id")?;
        Ok(WithXact {
            row: T::from_row(row)?,
            xact_id,
        })
    }
}

impl<T> WithXact<T> {
    /// The rows, and the transaction that inserted them (one statement: the same for every row;
    /// `None` without rows).
    pub(crate) fn split(rows: Vec<WithXact<T>>) -> (Vec<T>, Option<i64>) {
        let xact_id = rows.first().map(|r| r.xact_id);
        (rows.into_iter().map(|r| r.row).collect(), xact_id)
    }
}

pub(crate) fn job_notify_insert(schema: &Schema, queues: Vec<String>) -> Statement {
    schema
        .statement(Query::JobNotifyInsert)
        .bind(schema.channel(TOPIC_INSERT))
        .bind(queues)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::driver::Value;
    use crate::job_args::InsertOpts;

    fn jobs(opts: &[InsertOpts]) -> Vec<InsertParams> {
        (0..)
            .zip(opts)
            .map(|(i, o)| InsertParams::new("task", json!({"i": i, "s": "é\n\""}), o.clone()))
            .collect::<Result<_>>()
            .unwrap()
    }

    fn statement(jobs: &[InsertParams]) -> Statement {
        let schema = Schema::new("public").unwrap();
        job_insert_plain_many(&schema, &jobs.iter().collect::<Vec<_>>()).unwrap()
    }

    fn sql_of(query: Query) -> String {
        Schema::new("public")
            .unwrap()
            .statement(query)
            .sql()
            .to_owned()
    }

    #[test]
    fn plain_jobs_alike_send_their_state_queue_priority_and_attempts_once() {
        let opts = InsertOpts::new()
            .queue("q")
            .priority(3)
            .max_attempts(7)
            .pending();
        let stmt = statement(&jobs(&[opts.clone(), opts.clone(), opts]));
        assert_eq!(stmt.sql(), sql_of(Query::JobInsertPlainAlike));
        let args: Vec<String> = (0..3)
            .map(|i| json!({"i": i, "s": "é\n\""}).to_string())
            .collect();
        assert_eq!(
            stmt.params(),
            &[
                Value::Text("pending".into()),
                Value::Text("q".into()),
                Value::TextArray(vec!["task".into(); 3]),
                Value::TextArray(args),
                Value::Int2(3),
                Value::Int2(7),
            ]
        );
    }

    #[test]
    fn plain_jobs_differing_in_any_of_those_send_each_jobs() {
        let differing = [
            InsertOpts::new().queue("other"),
            InsertOpts::new().priority(2),
            InsertOpts::new().max_attempts(3),
            InsertOpts::new().pending(),
        ];
        for other in differing {
            let stmt = statement(&jobs(&[InsertOpts::new(), other.clone()]));
            assert_eq!(stmt.sql(), sql_of(Query::JobInsertPlainMany), "{other:?}");
            assert_eq!(stmt.params().len(), 6);
            assert!(
                stmt.params()
                    .iter()
                    .all(|v| matches!(v, Value::TextArray(a) if a.len() == 2)
                        || matches!(v, Value::Int8Array(a) if a.len() == 2)),
                "{other:?}: {:?}",
                stmt.params()
            );
        }
    }
}
