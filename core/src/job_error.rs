//! [`JobError`], the typed outcome of a failed attempt: retried by default, or cancelling,
//! discarding or snoozing the job.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

/// A boxed error, as workers return them.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a failed attempt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobAction {
    Retry,
    Cancel,
    Discard,
    Snooze(Duration),
}

/// The error a worker returns: retried by default, or cancelling, discarding or snoozing the job.
///
/// Everything that converts into a [`BoxError`] converts into a retryable `JobError`, so `?` works
/// in [`Worker::work`](crate::Worker::work) on any `std::error::Error`, on an [`anyhow::Error`], on an
/// [`eyre::Report`], and on a `String` or `&str`. No feature is needed: anyhow and eyre convert
/// into a `BoxError` themselves, so pgmill depends on neither.
///
/// The attempt's recorded error (in [`JobRow::errors`](crate::JobRow::errors)) is the whole chain of causes, outermost
/// first, joined by `": "`, as anyhow's `{:#}` prints it: `loading the invoice: connection
/// refused`. A cause whose message the error before it already ends with is not repeated.
///
/// [`anyhow::Error`]: https://docs.rs/anyhow/1/anyhow/struct.Error.html
/// [`eyre::Report`]: https://docs.rs/eyre/0.6/eyre/struct.Report.html
///
/// # Examples
///
/// ```
/// use pgmill::JobError;
///
/// fn parse(input: &str) -> Result<u32, JobError> {
///     let n: u32 = input.parse()?; // a std error: retried
///     if n == 0 {
///         return Err(JobError::discard("zero is never valid")); // never retried
///     }
///     Ok(n)
/// }
///
/// assert_eq!(parse("7").unwrap(), 7);
/// assert_eq!(parse("x").unwrap_err().message(), "invalid digit found in string");
/// ```
pub struct JobError {
    action: JobAction,
    error: Option<BoxError>,
}

impl JobError {
    /// Fails this attempt; the job is retried with backoff until its attempts are used up.
    pub fn retry(error: impl Into<BoxError>) -> Self {
        JobError {
            action: JobAction::Retry,
            error: Some(error.into()),
        }
    }

    /// Cancels the job: it ends `cancelled` and is never retried.
    pub fn cancel(error: impl Into<BoxError>) -> Self {
        JobError {
            action: JobAction::Cancel,
            error: Some(error.into()),
        }
    }

    /// Discards the job: it ends `discarded` and is never retried.
    pub fn discard(error: impl Into<BoxError>) -> Self {
        JobError {
            action: JobAction::Discard,
            error: Some(error.into()),
        }
    }

    /// Runs the job again after `delay`, without using up an attempt.
    pub fn snooze(delay: Duration) -> Self {
        JobError {
            action: JobAction::Snooze(delay),
            error: None,
        }
    }

    pub(crate) fn action(&self) -> JobAction {
        self.action
    }

    /// The error's message with its chain of causes, as the attempt records it (empty for a
    /// snooze): each cause after the first joined by `": "`.
    pub fn message(&self) -> String {
        self.error
            .as_deref()
            .map(|e| error_chain(e))
            .unwrap_or_default()
    }
}

impl fmt::Debug for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobError")
            .field("action", &self.action)
            .field("error", &self.error)
            .finish()
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.action, &self.error) {
            (JobAction::Snooze(d), _) => write!(f, "snoozed for {d:?}"),
            (_, Some(e)) => e.fmt(f),
            (_, None) => f.write_str("job failed"),
        }
    }
}

/// Every error (`std::error::Error`, `anyhow::Error`, `eyre::Report`, `String`, `&str`) fails
/// the attempt, to be retried.
impl<E: Into<BoxError>> From<E> for JobError {
    fn from(e: E) -> Self {
        JobError::retry(e)
    }
}

/// `error` and its chain of sources, outermost first, joined by `": "`; a source whose message
/// the text so far already ends with (an error that prints its cause itself) is not repeated.
fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let message = cause.to_string();
        if !message.is_empty() && !text.ends_with(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_convert_and_keep_their_action() {
        let e: JobError = std::io::Error::other("disk full").into();
        assert_eq!(e.action(), JobAction::Retry);
        assert_eq!(e.message(), "disk full");
        assert_eq!(JobError::cancel("stop").action(), JobAction::Cancel);
        assert_eq!(JobError::discard("bad").action(), JobAction::Discard);
        let s = JobError::snooze(Duration::from_secs(5));
        assert_eq!(s.action(), JobAction::Snooze(Duration::from_secs(5)));
        assert_eq!(s.to_string(), "snoozed for 5s");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("loading invoice 7")]
    struct Loading(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("sending the e-mail: {0}")]
    struct SaysItsCause(#[source] std::io::Error);

    fn anyhow_fails() -> Result<(), JobError> {
        let root = anyhow::anyhow!("connection refused");
        Err(root
            .context("loading invoice 7")
            .context("sending the e-mail"))?;
        Ok(())
    }

    fn eyre_fails() -> Result<(), JobError> {
        let root = eyre::eyre!("connection refused");
        Err(root.wrap_err("loading invoice 7"))?;
        Ok(())
    }

    #[test]
    fn anyhow_and_eyre_convert_with_question_mark_keeping_the_chain() {
        let e = anyhow_fails().unwrap_err();
        assert_eq!(e.action(), JobAction::Retry);
        assert_eq!(
            e.message(),
            "sending the e-mail: loading invoice 7: connection refused"
        );
        let e = eyre_fails().unwrap_err();
        assert_eq!(e.action(), JobAction::Retry);
        assert_eq!(e.message(), "loading invoice 7: connection refused");
    }

    #[test]
    fn std_error_chains_are_recorded_without_repeating_a_cause() {
        let e: JobError = Loading(std::io::Error::other("disk full")).into();
        assert_eq!(e.message(), "loading invoice 7: disk full");
        let e: JobError = SaysItsCause(std::io::Error::other("timed out")).into();
        assert_eq!(e.message(), "sending the e-mail: timed out");
        let e: JobError = "plain text".into();
        assert_eq!(e.message(), "plain text");
        let e = JobError::cancel(Loading(std::io::Error::other("gone")));
        assert_eq!(e.message(), "loading invoice 7: gone");
    }
}
