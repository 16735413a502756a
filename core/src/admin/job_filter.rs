//! The filter every job listing, count and bulk action shares.

use crate::job::JobState;

/// Which jobs a listing, a count or a bulk action looks at, by state, queue and kind. A part
/// left `None` matches every job; the parts given must all match.
///
/// # Examples
///
/// ```
/// use pgmill::JobState;
/// use pgmill::admin::{JobFilter, JobListParams};
///
/// let failed_emails = JobFilter::new()
///     .states([JobState::Discarded])
///     .kinds(["send_email"]);
/// let params = JobListParams::new().filter(failed_emails.clone()).limit(50);
/// assert_eq!(params.filter, failed_emails);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobFilter {
    /// Only jobs in these states.
    pub states: Option<Vec<JobState>>,
    /// Only jobs in these queues.
    pub queues: Option<Vec<String>>,
    /// Only jobs of these kinds.
    pub kinds: Option<Vec<String>>,
}

impl JobFilter {
    /// Every job.
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

    /// The states' names, as the statements bind them.
    pub(crate) fn state_names(&self) -> Option<Vec<String>> {
        self.states
            .as_ref()
            .map(|s| s.iter().map(|s| s.as_str().to_owned()).collect())
    }
}
