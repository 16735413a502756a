//! Unique jobs: [`UniqueOpts`] says what makes two jobs the same, and which of their states keep
//! a second one out.
//!
//! A unique job carries a key (a SHA-256 of its kind and, as asked, its args or some of their
//! fields, its queue and the period its scheduled time falls in) and the set of states in which
//! it holds that key. A partial unique index on `pgmill_job` allows one job per key among the jobs
//! holding it, so an insert of a duplicate, from any process and in any transaction, finds the
//! existing job instead, and the insert result says so
//! ([`InsertResult::skipped_as_duplicate`](crate::InsertResult::skipped_as_duplicate)). The
//! period is computed in the insert statement from the database clock, so every process agrees on
//! its boundaries.

use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::job::JobState;

/// The states every unique job holds its key in: every state before it finishes. Moving between
/// them (retried, snoozed, rescued, released) then never meets a duplicate.
const REQUIRED_STATES: [JobState; 5] = [
    JobState::Available,
    JobState::Scheduled,
    JobState::Pending,
    JobState::Running,
    JobState::Retryable,
];

/// What makes two jobs duplicates, for [`InsertOpts::unique`](crate::InsertOpts::unique).
///
/// Two jobs of one kind are duplicates when every part asked for is equal: their args (all of
/// them, or only some top-level fields), their queue, and the period their scheduled time falls
/// in. With nothing asked for, every job of the kind is a duplicate of every other. A job holds
/// its key while it is in one of [`UniqueOpts::by_state`]'s states: by default every state but
/// `cancelled` and `discarded`, so a completed job keeps blocking duplicates until the cleaner
/// deletes it (or its period ends), and a running job is never duplicated.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use pgmill::{InsertOpts, JobArgs, UniqueOpts};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct SyncAccount {
///     account_id: i64,
///     requested_by: String,
/// }
///
/// impl JobArgs for SyncAccount {
///     const KIND: &'static str = "sync_account";
///
///     // At most one sync per account and hour, whoever asked for it.
///     fn insert_opts(&self) -> InsertOpts {
///         InsertOpts::new().unique(
///             UniqueOpts::new()
///                 .by_args_fields(["account_id"])
///                 .by_period(Duration::from_secs(3600)),
///         )
///     }
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UniqueOpts {
    /// Compare args: all of them (`Some` of an empty list) or these top-level fields.
    pub by_args: Option<Vec<String>>,
    /// Compare queues.
    pub by_queue: bool,
    /// Compare the period (of this length, counted from the Unix epoch) the job's scheduled time
    /// falls in.
    pub by_period: Option<Duration>,
    /// The states in which a job keeps duplicates out. They must include every state before a
    /// job finishes (available, scheduled, pending, running, retryable); the final ones
    /// (completed, cancelled, discarded) are optional. Default: all but cancelled and discarded.
    pub by_state: Option<Vec<JobState>>,
}

impl UniqueOpts {
    /// Unique by kind alone, in the default states.
    pub fn new() -> Self {
        Self::default()
    }

    /// Jobs with different args are not duplicates.
    pub fn by_args(mut self) -> Self {
        self.by_args = Some(Vec::new());
        self
    }

    /// Jobs whose args differ in one of these top-level fields are not duplicates; other fields
    /// do not count. A field missing from the args counts as absent.
    pub fn by_args_fields<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.by_args = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// Jobs in different queues are not duplicates.
    pub fn by_queue(mut self) -> Self {
        self.by_queue = true;
        self
    }

    /// Jobs scheduled in different periods of `period` (from the Unix epoch, by the database
    /// clock for jobs due now) are not duplicates.
    pub fn by_period(mut self, period: Duration) -> Self {
        self.by_period = Some(period);
        self
    }

    /// The states in which a job keeps duplicates out (see [`UniqueOpts::by_state`]'s field).
    pub fn by_state(mut self, states: impl IntoIterator<Item = JobState>) -> Self {
        self.by_state = Some(states.into_iter().collect());
        self
    }

    /// Checks the options.
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(states) = &self.by_state
            && let Some(missing) = REQUIRED_STATES.iter().find(|s| !states.contains(s))
        {
            return Err(Error::InvalidConfig(format!(
                "unique states must include every state before a job finishes \
                 (available, scheduled, pending, running, retryable); {} is missing",
                missing.as_str()
            )));
        }
        if let Some(p) = self.by_period
            && (p.is_zero() || i64::try_from(p.as_micros()).is_err())
        {
            return Err(Error::InvalidConfig(format!(
                "unique period {p:?} must be positive and under 290,000 years"
            )));
        }
        if let Some(fields) = &self.by_args
            && fields.iter().any(String::is_empty)
        {
            return Err(Error::InvalidConfig(
                "unique args fields must not be empty".into(),
            ));
        }
        Ok(())
    }

    /// The key's text without its period, which the insert statement appends (database clock)
    /// before hashing.
    pub(crate) fn key_text(&self, kind: &str, args: &Value, queue: &str) -> String {
        let mut key = String::from("kind=");
        key.push_str(kind);
        if let Some(fields) = &self.by_args {
            key.push_str("&args=");
            if fields.is_empty() {
                canonical(args, &mut key);
            } else {
                let mut picked = serde_json::Map::new();
                let mut sorted: Vec<&String> = fields.iter().collect();
                sorted.sort();
                sorted.dedup();
                for f in sorted {
                    if let Some(v) = args.get(f.as_str()) {
                        picked.insert(f.clone(), v.clone());
                    }
                }
                canonical(&Value::Object(picked), &mut key);
            }
        }
        if self.by_queue {
            key.push_str("&queue=");
            key.push_str(queue);
        }
        key
    }

    /// The period in microseconds, as the insert statement takes it.
    pub(crate) fn period_us(&self) -> Option<i64> {
        self.by_period
            .map(|p| i64::try_from(p.as_micros()).unwrap_or(i64::MAX))
    }

    /// The states as the `bit(8)` text `pgmill_job_state_in_bitmask` reads: one character per
    /// state, available the rightmost, then scheduled, pending, running, retryable, completed,
    /// cancelled, and discarded the leftmost.
    pub(crate) fn states_mask(&self) -> String {
        let default: Vec<JobState> = JobState::ALL
            .into_iter()
            .filter(|s| !matches!(s, JobState::Cancelled | JobState::Discarded))
            .collect();
        let states: &[JobState] = self.by_state.as_deref().unwrap_or(&default);
        JobState::ALL
            .iter()
            .rev()
            .map(|s| if states.contains(s) { '1' } else { '0' })
            .collect()
    }
}

/// Writes `v` as JSON with object keys sorted at every level, so equal args give equal keys
/// whatever order their fields were serialized in.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_ignore_field_order_and_unselected_fields() {
        let by_args = UniqueOpts::new().by_args();
        let a = by_args.key_text("k", &json!({"a": 1, "b": {"y": 2, "x": 1}}), "q");
        let b = by_args.key_text("k", &json!({"b": {"x": 1, "y": 2}, "a": 1}), "other");
        assert_eq!(a, b);
        assert_eq!(a, r#"kind=k&args={"a":1,"b":{"x":1,"y":2}}"#);
        let fields = UniqueOpts::new().by_args_fields(["a"]).by_queue();
        assert_eq!(
            fields.key_text("k", &json!({"a": 1, "b": 2}), "q"),
            fields.key_text("k", &json!({"a": 1, "b": 3}), "q")
        );
        assert_ne!(
            fields.key_text("k", &json!({"a": 1}), "q"),
            fields.key_text("k", &json!({"a": 1}), "r")
        );
        assert_eq!(
            UniqueOpts::new().key_text("k", &json!({"a": 1}), "q"),
            "kind=k"
        );
    }

    #[test]
    fn states_mask_puts_available_rightmost() {
        assert_eq!(UniqueOpts::new().states_mask(), "00111111");
        let all = UniqueOpts::new().by_state(JobState::ALL);
        assert_eq!(all.states_mask(), "11111111");
        let live = UniqueOpts::new().by_state(REQUIRED_STATES);
        assert_eq!(live.states_mask(), "00011111");
    }

    #[test]
    fn states_must_cover_every_unfinished_state() {
        let err = UniqueOpts::new()
            .by_state([JobState::Available, JobState::Running])
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("scheduled is missing"), "{err}");
        assert!(
            UniqueOpts::new()
                .by_period(Duration::ZERO)
                .validate()
                .is_err()
        );
        assert!(
            UniqueOpts::new()
                .by_state(REQUIRED_STATES)
                .validate()
                .is_ok()
        );
    }
}
