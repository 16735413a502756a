//! The dead-letter queue as operators see it: jobs that were discarded, why, and which of them an
//! action (redrive, purge) applies to.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::job::{JobId, JobRow};

/// Why a job is in the dead-letter queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeadReason {
    /// Its attempts were used up: its last attempt failed with none left.
    MaxAttempts,
    /// Its worker discarded it ([`JobError::discard`](crate::JobError::discard)), or its args did
    /// not decode.
    Discarded,
    /// It was rescued (its client died, or it ran past its hard deadline) with no attempt left.
    Rescued,
    /// An operator moved it there.
    Manual,
}

impl DeadReason {
    /// The reason as stored: `max_attempts`, `discarded`, `rescued` or `manual`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadReason::MaxAttempts => "max_attempts",
            DeadReason::Discarded => "discarded",
            DeadReason::Rescued => "rescued",
            DeadReason::Manual => "manual",
        }
    }
}

impl fmt::Display for DeadReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DeadReason {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "max_attempts" => Ok(DeadReason::MaxAttempts),
            "discarded" => Ok(DeadReason::Discarded),
            "rescued" => Ok(DeadReason::Rescued),
            "manual" => Ok(DeadReason::Manual),
            other => Err(Error::decode(
                "dead_reason",
                format!("unknown reason {other:?}"),
            )),
        }
    }
}

/// A job in the dead-letter queue: the job as it was discarded (its state `discarded`, every
/// attempt's error kept), and what the queue records of it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeadJob {
    /// The job.
    pub job: JobRow,
    /// When it entered the dead-letter queue.
    pub dead_at: DateTime<Utc>,
    /// Why.
    pub reason: DeadReason,
    /// How many times it was redriven before (its errors keep every attempt's).
    pub redrive_count: i32,
}

/// Which dead-letter jobs an action applies to. An action over the dead-letter queue needs at
/// least one filter, or [`DeadFilter::all`]: a call with neither is refused, so that a forgotten
/// filter never redrives or purges every dead job.
///
/// # Examples
///
/// ```
/// use pgmill::JobId;
/// use pgmill::admin::DeadFilter;
///
/// let mailers = DeadFilter::new().queues(["mailers"]).kinds(["send_email"]);
/// let two = DeadFilter::new().ids([JobId(7), JobId(9)]);
/// let every = DeadFilter::all();
/// assert!(mailers.is_bounded() && two.is_bounded() && every.is_bounded());
/// assert!(!DeadFilter::new().is_bounded());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadFilter {
    /// Only jobs of these queues.
    pub queues: Option<Vec<String>>,
    /// Only jobs of these kinds.
    pub kinds: Option<Vec<String>>,
    /// Only these jobs.
    pub ids: Option<Vec<JobId>>,
    /// Every dead job, when no other filter is given.
    pub all: bool,
}

impl DeadFilter {
    /// No filter yet: give one, or ask for [`DeadFilter::all`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Every job in the dead-letter queue.
    pub fn all() -> Self {
        DeadFilter {
            all: true,
            ..Self::default()
        }
    }

    /// Only jobs of these queues.
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

    /// True when an action may run on it: it has a filter, or asks for every job.
    pub fn is_bounded(&self) -> bool {
        self.all || self.queues.is_some() || self.kinds.is_some() || self.ids.is_some()
    }
}

/// Filters and cursor of a listing of the dead-letter queue, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadListParams {
    /// Only these queues, kinds or ids (no filter lists every dead job).
    pub filter: DeadFilter,
    /// Only jobs that entered before this position: the [`DeadListPage::next_cursor`] of the
    /// previous page.
    pub before: Option<DeadCursor>,
    /// Page size (default 50, at most 1,000).
    pub limit: Option<usize>,
}

impl DeadListParams {
    /// Every dead job, first page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only the jobs `filter` matches.
    pub fn filter(mut self, filter: DeadFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Continue below this cursor.
    pub fn before(mut self, cursor: DeadCursor) -> Self {
        self.before = Some(cursor);
        self
    }

    /// Page size (clamped to 1..=1,000).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The page size asked for, within its bounds.
    pub(crate) fn page_size(&self) -> usize {
        self.limit.unwrap_or(50).clamp(1, 1_000)
    }
}

/// A position in the dead-letter queue's newest-first order: when a job entered it, and its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadCursor {
    /// When the job entered the dead-letter queue.
    pub dead_at: DateTime<Utc>,
    /// Its id.
    pub id: JobId,
}

/// One page of the dead-letter queue, newest first.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeadListPage {
    /// The jobs.
    pub jobs: Vec<DeadJob>,
    /// The cursor of the next (older) page, `None` when this page was the last.
    pub next_cursor: Option<DeadCursor>,
}

/// What a redrive did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedriveReport {
    /// The jobs put back into the job table, available now, under their own ids.
    pub redriven: Vec<JobId>,
    /// The jobs left in the dead-letter queue because their unique key is held by another job
    /// now: redriving them would make a second job under the key.
    pub conflicts: Vec<JobId>,
}
