//! The newest-first job listing the dashboard shows: jobs cut to summaries.

use chrono::{DateTime, Utc};

use crate::admin::JobFilter;
use crate::job::{JobId, JobState};

/// Page size when [`JobSummaryParams::limit`] is not set.
const DEFAULT_LIMIT: usize = 50;

/// Largest page.
const MAX_LIMIT: usize = 1_000;

/// Preview length when [`JobSummaryParams::preview_chars`] is not set.
pub(crate) const DEFAULT_PREVIEW_CHARS: usize = 200;

/// Filters and cursor of a newest-first job listing ([`Client::job_list_newest`]).
///
/// [`Client::job_list_newest`]: crate::Client::job_list_newest
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobSummaryParams {
    /// Which jobs: by state, queue and kind.
    pub filter: JobFilter,
    /// Only jobs with ids below this cursor: the [`JobSummaryPage::next_cursor`] of the previous
    /// page.
    pub before: Option<JobId>,
    /// Page size (default 50, at most 1,000).
    pub limit: Option<usize>,
    /// Most characters of args and of the last error kept in a summary (default 200).
    pub preview_chars: Option<usize>,
}

impl JobSummaryParams {
    /// No filter, first page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only the jobs `filter` matches (replacing any filter set before).
    pub fn filter(mut self, filter: JobFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Only jobs in these states ([`JobFilter::states`]).
    pub fn states(mut self, states: impl IntoIterator<Item = JobState>) -> Self {
        self.filter = self.filter.states(states);
        self
    }

    /// Only jobs in these queues ([`JobFilter::queues`]).
    pub fn queues<S: Into<String>>(mut self, queues: impl IntoIterator<Item = S>) -> Self {
        self.filter = self.filter.queues(queues);
        self
    }

    /// Only jobs of these kinds ([`JobFilter::kinds`]).
    pub fn kinds<S: Into<String>>(mut self, kinds: impl IntoIterator<Item = S>) -> Self {
        self.filter = self.filter.kinds(kinds);
        self
    }

    /// Continue below this cursor.
    pub fn before(mut self, cursor: JobId) -> Self {
        self.before = Some(cursor);
        self
    }

    /// Page size (clamped to 1..=1,000).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Most characters of args and of the last error kept in a summary.
    pub fn preview_chars(mut self, chars: usize) -> Self {
        self.preview_chars = Some(chars);
        self
    }

    /// The page size asked for, within its bounds.
    pub(crate) fn page_size(&self) -> usize {
        self.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
    }
}

/// A job cut to what a list shows: its args and last error only as previews.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JobSummary {
    /// The id.
    pub id: JobId,
    /// The state.
    pub state: JobState,
    /// The queue.
    pub queue: String,
    /// The kind.
    pub kind: String,
    /// The args as JSON text, cut to the preview length.
    pub args_preview: String,
    /// The length of the whole args text, in characters.
    pub args_chars: i64,
    /// Priority, 1 (first) to 4 (last).
    pub priority: i16,
    /// Attempts made so far.
    pub attempt: i16,
    /// Attempts allowed.
    pub max_attempts: i16,
    /// When it was inserted.
    pub created_at: DateTime<Utc>,
    /// When it may run next.
    pub scheduled_at: DateTime<Utc>,
    /// When the latest attempt started.
    pub attempted_at: Option<DateTime<Utc>>,
    /// When it reached a final state.
    pub finalized_at: Option<DateTime<Utc>>,
    /// How many errors are recorded.
    pub error_count: i64,
    /// The latest error's message, cut to the preview length.
    pub last_error: Option<String>,
    /// Tags given at insert.
    pub tags: Vec<String>,
}

impl JobSummary {
    /// True when the args preview is cut.
    pub fn args_truncated(&self) -> bool {
        i64::try_from(self.args_preview.chars().count()).unwrap_or(i64::MAX) < self.args_chars
    }
}

/// One page of a newest-first job listing.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JobSummaryPage {
    /// The jobs, newest (highest id) first.
    pub jobs: Vec<JobSummary>,
    /// The cursor for the next (older) page, `None` when this page was the last.
    pub next_cursor: Option<JobId>,
}
