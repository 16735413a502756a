//! Queries on `pgmill_job`. Each builds its statement without I/O, so the async and the blocking
//! (diesel host transaction) paths share one definition.

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};

use super::micros;
use crate::driver::{CopyIn, FromRow, HeldRows, Row, RowView, Statement};
use crate::error::Result;
use crate::insert::inserter::InsertResult;
use crate::job::{JobId, JobRow, JobState};
use crate::job_args::InsertParams;
use crate::query::catalog::Query;
use crate::schema::Schema;
use crate::work::in_flight::HeldClaim;

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
        .bind((!notify.is_empty()).then(|| schema.channel(crate::cluster::notifier::TOPIC_INSERT)))
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
    let channel =
        (notify && p.is_due_now()).then(|| schema.channel(crate::cluster::notifier::TOPIC_INSERT));
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

/// A position in fetch order: (priority, scheduled_at, id) of a job.
pub(crate) type FetchPosition = (i16, DateTime<Utc>, JobId);

/// The claim of up to `limit` due jobs of `queue` in fetch order for `client_id` under the fencing
/// token `claim_token`; only those after `after` when given (`job_get_available_after.sql`). Run
/// it with [`Executor::query_held`](crate::driver::Executor::query_held) and read its rows with
/// [`claimed_position`] and [`claimed_jobs`].
pub(crate) fn job_get_available(
    schema: &Schema,
    queue: &str,
    limit: usize,
    client_id: &str,
    claim_token: i64,
    after: Option<FetchPosition>,
) -> Statement {
    let query = match after {
        Some(_) => Query::JobGetAvailableAfter,
        None => Query::JobGetAvailable,
    };
    let stmt = schema
        .statement(query)
        .bind(queue)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(client_id)
        .bind(claim_token);
    match after {
        Some((priority, scheduled_at, id)) => stmt.bind(priority).bind(scheduled_at).bind(id.0),
        None => stmt,
    }
}

/// The position in fetch order of the last job a claim took: the greatest (priority,
/// scheduled_at, id) of its rows (RETURNING has no order), `None` for no row. Reads those three
/// columns only (the producer sends its next claim from there before decoding the rest), after
/// checking the rows' columns.
pub(crate) fn claimed_position(rows: &mut HeldRows) -> Result<Option<FetchPosition>> {
    let (id, priority, scheduled_at) = JobRow::CLAIMED_POSITION_COLUMNS;
    let mut first = true;
    let mut last: Option<FetchPosition> = None;
    rows.read_each(|row| {
        if std::mem::take(&mut first) {
            row.expect_columns(&JobRow::CLAIMED_COLUMNS)?;
        }
        let at = (
            row.read(priority)?,
            row.read(scheduled_at)?,
            JobId(row.read(id)?),
        );
        last = Some(last.map_or(at, |l| l.max(at)));
        Ok(())
    })?;
    Ok(last)
}

/// Decodes the rows of a claim made by [`job_get_available`] with the same `queue`, `client_id`
/// and `claim_token`, in fetch order.
pub(crate) fn claimed_jobs(
    rows: &mut HeldRows,
    queue: &str,
    client_id: &str,
    claim_token: i64,
) -> Result<Vec<Arc<JobRow>>> {
    // The claim's time, read once: the statement sets every row's `attempted_at` to its `now()`.
    let mut attempted_at = None;
    let mut first = true;
    let mut jobs = rows.decode(|row| {
        if std::mem::take(&mut first) {
            row.expect_columns(&JobRow::CLAIMED_COLUMNS)?;
            attempted_at = row.read(JobRow::CLAIMED_AT_COLUMN)?;
        }
        JobRow::from_claimed_row(row, queue, claim_token, client_id, attempted_at).map(Arc::new)
    })?;
    // RETURNING has no order; run in fetch order.
    jobs.sort_by_key(|j| (j.priority, j.scheduled_at, j.id));
    Ok(jobs)
}

/// What happened to one attempt, as `job_set_state_if_running_many.sql` records it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetStateParams {
    pub(crate) id: JobId,
    pub(crate) attempt: i16,
    /// The fencing token of the claim the outcome belongs to.
    pub(crate) claim_token: i64,
    pub(crate) outcome: &'static str,
    pub(crate) delay: TimeDelta,
    pub(crate) error: Option<serde_json::Value>,
}

/// The new state of one row `job_set_state_if_running_many` changed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetStateResult {
    pub(crate) id: JobId,
    pub(crate) state: JobState,
    pub(crate) attempt: i16,
    pub(crate) scheduled_at: DateTime<Utc>,
    pub(crate) finalized_at: Option<DateTime<Utc>>,
}

impl FromRow for SetStateResult {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(SetStateResult {
            id: JobId(row.take("id")?),
            state: row.take::<String>("state")?.parse()?,
            attempt: row.take("attempt")?,
            scheduled_at: row.take("scheduled_at")?,
            finalized_at: row.take("finalized_at")?,
        })
    }
}

pub(crate) fn job_set_state_if_running_many(
    schema: &Schema,
    params: &[SetStateParams],
    available_within: TimeDelta,
) -> Statement {
    let micros = |d: TimeDelta| d.num_microseconds().unwrap_or(i64::MAX);
    schema
        .statement(Query::JobSetStateIfRunningMany)
        .bind(params.iter().map(|p| p.id.0).collect::<Vec<_>>())
        .bind(
            params
                .iter()
                .map(|p| i64::from(p.attempt))
                .collect::<Vec<_>>(),
        )
        .bind(
            params
                .iter()
                .map(|p| p.outcome.to_owned())
                .collect::<Vec<_>>(),
        )
        .bind(params.iter().map(|p| micros(p.delay)).collect::<Vec<_>>())
        .bind(
            params
                .iter()
                .map(|p| p.error.clone().unwrap_or(serde_json::Value::Null))
                .collect::<Vec<_>>(),
        )
        .bind(micros(available_within))
        .bind(params.iter().map(|p| p.claim_token).collect::<Vec<_>>())
}

/// A row `job_set_completed_many` completed: every one is completed at the attempt and with the
/// schedule of the claim that ran it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompletedRow {
    pub(crate) id: JobId,
    pub(crate) finalized_at: DateTime<Utc>,
}

impl FromRow for CompletedRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(CompletedRow {
            id: JobId(row.take("id")?),
            finalized_at: row.take("finalized_at")?,
        })
    }
}

/// The lean statement for a batch of plain completions of non-periodic jobs, fenced alike: it
/// completes the claims `(id, fencing token)`, returning a [`CompletedRow`] for each when `rows`,
/// and only the count of rows completed otherwise.
pub(crate) fn job_set_completed_many(
    schema: &Schema,
    claims: impl Iterator<Item = (JobId, i64)> + Clone,
    rows: bool,
) -> Statement {
    let query = if rows {
        Query::JobSetCompletedMany
    } else {
        Query::JobSetCompletedManyCount
    };
    schema
        .statement(query)
        .bind(claims.clone().map(|(id, _)| id.0).collect::<Vec<_>>())
        .bind(claims.map(|(_, token)| token).collect::<Vec<_>>())
}

pub(crate) fn job_get_by_id(schema: &Schema, id: JobId) -> Statement {
    schema.statement(Query::JobGetById).bind(id.0)
}

/// Filters and cursor of a job listing.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct JobListParams {
    /// Only jobs in these states.
    pub states: Option<Vec<JobState>>,
    /// Only jobs in these queues.
    pub queues: Option<Vec<String>>,
    /// Only jobs of these kinds.
    pub kinds: Option<Vec<String>>,
    /// Only these jobs.
    pub ids: Option<Vec<JobId>>,
    /// Only jobs after this cursor: the [`JobListPage::next_cursor`] of the previous page.
    pub after: Option<JobId>,
    /// Page size (default 100).
    pub limit: Option<usize>,
}

impl JobListParams {
    /// No filter, first page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only jobs in these states.
    pub fn states(mut self, states: impl IntoIterator<Item = JobState>) -> Self {
        self.states = Some(states.into_iter().collect());
        self
    }

    /// Only jobs in these queues.
    pub fn queues<S: Into<String>>(mut self, queues: impl IntoIterator<Item = S>) -> Self {
        self.queues = Some(queues.into_iter().map(Into::into).collect());
        self
    }

    /// Only jobs of these kinds.
    pub fn kinds<S: Into<String>>(mut self, kinds: impl IntoIterator<Item = S>) -> Self {
        self.kinds = Some(kinds.into_iter().map(Into::into).collect());
        self
    }

    /// Only these jobs.
    pub fn ids(mut self, ids: impl IntoIterator<Item = JobId>) -> Self {
        self.ids = Some(ids.into_iter().collect());
        self
    }

    /// Continue after this cursor.
    pub fn after(mut self, cursor: JobId) -> Self {
        self.after = Some(cursor);
        self
    }

    /// Page size.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }
}

/// One page of a job listing.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JobListPage {
    /// The jobs, in id order.
    pub jobs: Vec<JobRow>,
    /// The cursor for the next page, `None` when this page was the last.
    pub next_cursor: Option<JobId>,
}

pub(crate) const DEFAULT_LIST_LIMIT: usize = 100;

pub(crate) fn job_list(schema: &Schema, p: &JobListParams) -> Statement {
    let limit = p.limit.unwrap_or(DEFAULT_LIST_LIMIT).max(1);
    schema
        .statement(Query::JobList)
        .bind(
            p.states
                .as_ref()
                .map(|s| s.iter().map(|s| s.as_str().to_owned()).collect::<Vec<_>>()),
        )
        .bind(p.queues.clone())
        .bind(p.kinds.clone())
        .bind(
            p.ids
                .as_ref()
                .map(|ids| ids.iter().map(|i| i.0).collect::<Vec<_>>()),
        )
        .bind(p.after.map_or(0, |c| c.0))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

pub(crate) fn job_list_page(jobs: Vec<JobRow>, p: &JobListParams) -> JobListPage {
    let limit = p.limit.unwrap_or(DEFAULT_LIST_LIMIT).max(1);
    let next_cursor = if jobs.len() == limit {
        jobs.last().map(|j| j.id)
    } else {
        None
    };
    JobListPage { jobs, next_cursor }
}

pub(crate) fn job_cancel(schema: &Schema, id: JobId, error: serde_json::Value) -> Statement {
    schema.statement(Query::JobCancel).bind(id.0).bind(error)
}

pub(crate) fn job_retry(schema: &Schema, id: JobId) -> Statement {
    schema.statement(Query::JobRetry).bind(id.0)
}

pub(crate) fn job_release_pending(
    schema: &Schema,
    id: JobId,
    at: Option<DateTime<Utc>>,
) -> Statement {
    schema
        .statement(Query::JobReleasePending)
        .bind(id.0)
        .bind(at)
}

/// One job id in a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdRow(pub(crate) JobId);

impl FromRow for IdRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(IdRow(JobId(row.take("id")?)))
    }
}

pub(crate) fn job_get_cancel_requested(schema: &Schema, ids: &[JobId]) -> Statement {
    schema
        .statement(Query::JobGetCancelRequested)
        .bind(ids.iter().map(|i| i.0).collect::<Vec<_>>())
}

pub(crate) fn job_delete(schema: &Schema, id: JobId) -> Statement {
    schema.statement(Query::JobDelete).bind(id.0)
}

/// One rescued job.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RescuedRow {
    pub(crate) id: JobId,
    pub(crate) state: JobState,
    pub(crate) queue: String,
}

impl FromRow for RescuedRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(RescuedRow {
            id: JobId(row.take("id")?),
            state: row.take::<String>("state")?.parse()?,
            queue: row.take("queue")?,
        })
    }
}

pub(crate) fn job_rescue(
    schema: &Schema,
    heartbeat_timeout: TimeDelta,
    missing_clients: Vec<String>,
    hard_deadline: TimeDelta,
    limit: usize,
) -> Statement {
    schema
        .statement(Query::JobRescue)
        .bind(micros(heartbeat_timeout))
        .bind(missing_clients)
        .bind(micros(hard_deadline))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

/// A client named by running jobs but with no row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientIdRow(pub(crate) String);

impl FromRow for ClientIdRow {
    fn from_row(mut row: Row) -> Result<Self> {
        row.take("client_id").map(ClientIdRow)
    }
}

pub(crate) fn job_get_running_clients(schema: &Schema) -> Statement {
    schema.statement(Query::JobGetRunningClients)
}

pub(crate) fn job_reassert_running(
    schema: &Schema,
    claims: &[HeldClaim],
    client_id: &str,
) -> Statement {
    schema
        .statement(Query::JobReassertRunning)
        .bind(claims.iter().map(|c| c.id.0).collect::<Vec<_>>())
        .bind(
            claims
                .iter()
                .map(|c| i64::from(c.attempt))
                .collect::<Vec<_>>(),
        )
        .bind(client_id)
        .bind(claims.iter().map(|c| c.token).collect::<Vec<_>>())
        .bind(
            claims
                .iter()
                .map(|c| c.attempted_at.unwrap_or(DateTime::<Utc>::MIN_UTC))
                .collect::<Vec<_>>(),
        )
        .bind(claims.iter().map(|c| c.created_at).collect::<Vec<_>>())
}

/// Releases running jobs attributed to `client_id` under any claim but those `held`, except
/// claims made within `margin`.
pub(crate) fn job_release_orphaned(
    schema: &Schema,
    client_id: &str,
    held: &[HeldClaim],
    margin: TimeDelta,
) -> Statement {
    schema
        .statement(Query::JobReleaseOrphaned)
        .bind(client_id)
        .bind(held.iter().map(|c| c.id.0).collect::<Vec<_>>())
        .bind(held.iter().map(|c| c.token).collect::<Vec<_>>())
        .bind(micros(margin))
}

pub(crate) fn job_delete_finalized(
    schema: &Schema,
    completed: Option<TimeDelta>,
    cancelled: Option<TimeDelta>,
    discarded: Option<TimeDelta>,
    limit: usize,
) -> Statement {
    schema
        .statement(Query::JobDeleteFinalized)
        .bind(completed.map(micros))
        .bind(cancelled.map(micros))
        .bind(discarded.map(micros))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

/// Notifies the queues of those of `watched` (inserting transaction, queue) whose transaction is
/// committed; returns the transactions still in progress ([`InProgressRow`]). Every other one is
/// settled: committed, rolled back, or of a status the server no longer keeps.
pub(crate) fn job_notify_committed(schema: &Schema, watched: &[(i64, &str)]) -> Statement {
    schema
        .statement(Query::JobNotifyCommitted)
        .bind(schema.channel(crate::cluster::notifier::TOPIC_INSERT))
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
        .bind(schema.channel(crate::cluster::notifier::TOPIC_INSERT))
        .bind(queues)
}

/// Due scheduled and retryable jobs made available by one [`job_schedule`] batch, per queue.
pub(crate) struct QueueCountRow {
    pub(crate) queue: String,
    pub(crate) num_jobs: i64,
}

impl FromRow for QueueCountRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(QueueCountRow {
            queue: row.take("queue")?,
            num_jobs: row.take("num_jobs")?,
        })
    }
}

/// One batch of the scheduler: up to `limit` scheduled and retryable jobs due within
/// `lookahead` become available, keeping their `scheduled_at`.
pub(crate) fn job_schedule(schema: &Schema, lookahead: TimeDelta, limit: usize) -> Statement {
    schema
        .statement(Query::JobSchedule)
        .bind(micros(lookahead))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

/// The job table's rows against the rows of its statistics ([`job_table_growth`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableGrowthRow {
    /// Rows when the statistics were last taken (`reltuples`, 0 before the first).
    pub(crate) stats_rows: i64,
    /// Rows now: inserts less deletes, as the statistics system counts them, or the rows the
    /// caller has just committed when more.
    pub(crate) live_rows: i64,
    /// Whether this role may analyze the table (see `job_table_growth.sql`).
    pub(crate) permitted: bool,
    /// Whether the table has outgrown its statistics and may be analyzed now.
    pub(crate) outgrown: bool,
}

impl FromRow for TableGrowthRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(TableGrowthRow {
            stats_rows: row.take("stats_rows")?,
            live_rows: row.take("live_rows")?,
            permitted: row.take("permitted")?,
            outgrown: row.take("outgrown")?,
        })
    }
}

/// Whether the job table's rows, less `overstated` (how far the counters overstated them at the
/// caller's last `ANALYZE`, 0 for none), or at least the `inserted` rows the caller has just
/// committed, are at least `min_rows` and `growth` times the rows of its statistics.
pub(crate) fn job_table_growth(
    schema: &Schema,
    min_rows: i64,
    growth: i64,
    overstated: i64,
    inserted: i64,
) -> Statement {
    schema
        .statement(Query::JobTableGrowth)
        .bind(schema.name())
        .bind(min_rows)
        .bind(growth)
        .bind(overstated)
        .bind(inserted)
}

/// Takes the job table's statistics again, on a small sample, failing rather than waiting more
/// than 100 ms for a lock: a script of three statements, for
/// [`Executor::execute_script`](crate::driver::Executor::execute_script).
pub(crate) fn job_analyze(schema: &Schema) -> Statement {
    schema.statement(Query::JobAnalyze)
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
