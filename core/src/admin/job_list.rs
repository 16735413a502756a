//! The job listing in id order, which counts and bulk actions filter the same way.

use crate::admin::JobFilter;
use crate::job::{JobId, JobRow, JobState};

/// Filters and cursor of a job listing.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct JobListParams {
    /// Which jobs: by state, queue and kind.
    pub filter: JobFilter,
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

    /// The page size asked for, or the default.
    pub(crate) fn page_size(&self) -> usize {
        self.limit.unwrap_or(DEFAULT_LIST_LIMIT).max(1)
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

/// Page size when [`JobListParams::limit`] is not set.
const DEFAULT_LIST_LIMIT: usize = 100;
