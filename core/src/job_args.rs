//! What users insert: [`JobArgs`] (a kind plus serde), [`InsertOpts`], and the validated
//! [`InsertParams`] core turns them into.

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::error::{Error, Result};
use crate::ident::validate_name;
use crate::unique::UniqueOpts;

/// The default queue.
pub(crate) const DEFAULT_QUEUE: &str = "default";
/// The default priority (the highest).
pub(crate) const DEFAULT_PRIORITY: i16 = 1;
/// The lowest priority.
pub(crate) const MIN_PRIORITY: i16 = 4;
/// The default number of attempts before a job is discarded.
pub(crate) const DEFAULT_MAX_ATTEMPTS: i16 = 25;

/// A job's arguments: a kind name plus serde.
///
/// The kind names the worker that runs it and is stored with the job, so keep it stable across
/// renames of the Rust type. Per-kind insert defaults come from [`JobArgs::insert_opts`].
///
/// # Examples
///
/// ```
/// use pgmill::{InsertOpts, JobArgs};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct SendEmail {
///     to: String,
/// }
///
/// impl JobArgs for SendEmail {
///     const KIND: &'static str = "send_email";
///
///     fn insert_opts(&self) -> InsertOpts {
///         InsertOpts::new().queue("mailers").max_attempts(5)
///     }
/// }
/// ```
pub trait JobArgs: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The kind name: 1 to 128 ASCII letters, digits and `_ - . : /`.
    const KIND: &'static str;

    /// Default insert options for jobs of this kind; options given at insert take precedence.
    fn insert_opts(&self) -> InsertOpts {
        InsertOpts::default()
    }
}

/// Options for one insert. Unset fields fall back to the kind's [`JobArgs::insert_opts`], then to
/// pgmill's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct InsertOpts {
    /// Queue (default `default`).
    pub queue: Option<String>,
    /// Priority from 1 (first) to 4 (last); default 1. Jobs are fetched by priority, then
    /// `scheduled_at`, then id.
    pub priority: Option<i16>,
    /// Run no earlier than this time.
    pub scheduled_at: Option<DateTime<Utc>>,
    /// Run no earlier than this long after the insert, measured by the database clock.
    pub schedule_in: Option<TimeDelta>,
    /// Attempts before the job is discarded (default 25).
    pub max_attempts: Option<i16>,
    /// Tags, for finding jobs later.
    pub tags: Option<Vec<String>>,
    /// Metadata: a JSON object stored with the job.
    pub metadata: Option<serde_json::Value>,
    /// Insert as `pending`: never fetched until moved to available or scheduled.
    pub pending: Option<bool>,
    /// Make the job unique: an insert that finds a duplicate returns the existing job instead
    /// (see [`UniqueOpts`]).
    pub unique: Option<UniqueOpts>,
}

impl InsertOpts {
    /// Options with nothing set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Sets the priority (1 first to 4 last).
    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Runs the job no earlier than `at`.
    pub fn scheduled_at(mut self, at: DateTime<Utc>) -> Self {
        self.scheduled_at = Some(at);
        self
    }

    /// Runs the job no earlier than `delay` after the insert, by the database clock.
    pub fn schedule_in(mut self, delay: TimeDelta) -> Self {
        self.schedule_in = Some(delay);
        self
    }

    /// Sets the number of attempts before the job is discarded.
    pub fn max_attempts(mut self, max_attempts: i16) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    /// Sets the tags.
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = Some(tags.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the metadata (a JSON object).
    pub fn metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Inserts the job as pending.
    pub fn pending(mut self) -> Self {
        self.pending = Some(true);
        self
    }

    /// Makes the job unique by `unique` (see [`UniqueOpts`]).
    pub fn unique(mut self, unique: UniqueOpts) -> Self {
        self.unique = Some(unique);
        self
    }

    /// These options, with unset fields taken from `defaults`.
    fn or(self, defaults: InsertOpts) -> InsertOpts {
        InsertOpts {
            queue: self.queue.or(defaults.queue),
            priority: self.priority.or(defaults.priority),
            scheduled_at: self.scheduled_at.or(defaults.scheduled_at),
            schedule_in: self.schedule_in.or(defaults.schedule_in),
            max_attempts: self.max_attempts.or(defaults.max_attempts),
            tags: self.tags.or(defaults.tags),
            metadata: self.metadata.or(defaults.metadata),
            pending: self.pending.or(defaults.pending),
            unique: self.unique.or(defaults.unique),
        }
    }
}

/// One validated job ready to insert.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertParams {
    pub(crate) kind: String,
    pub(crate) args: serde_json::Value,
    pub(crate) queue: String,
    pub(crate) priority: i16,
    pub(crate) scheduled_at: Option<DateTime<Utc>>,
    pub(crate) schedule_in: Option<TimeDelta>,
    pub(crate) max_attempts: i16,
    pub(crate) tags: Vec<String>,
    pub(crate) metadata: serde_json::Value,
    pub(crate) pending: bool,
    pub(crate) unique: Option<UniqueOpts>,
}

impl InsertParams {
    /// Validates typed args with optional options (merged over the kind's defaults).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for a bad queue or kind; [`Error::InvalidConfig`] for an option out
    /// of range or args that do not serialize to a JSON object or array.
    pub fn from_args<A: JobArgs>(args: &A, opts: Option<InsertOpts>) -> Result<Self> {
        let defaults = args.insert_opts();
        let opts = opts.map_or(defaults.clone(), |o| o.or(defaults));
        let json = serde_json::to_value(args).map_err(|e| {
            Error::InvalidConfig(format!("args of {} do not serialize: {e}", A::KIND))
        })?;
        Self::new(A::KIND, json, opts)
    }

    /// Validates an untyped job: a kind, its JSON args and options.
    ///
    /// # Errors
    ///
    /// As [`InsertParams::from_args`].
    pub fn new(kind: &str, args: serde_json::Value, opts: InsertOpts) -> Result<Self> {
        validate_name("kind", kind)?;
        let queue = opts.queue.unwrap_or_else(|| DEFAULT_QUEUE.to_owned());
        validate_name("queue", &queue)?;
        if !(args.is_object() || args.is_array()) {
            return Err(Error::InvalidConfig(format!(
                "args of {kind} must serialize to a JSON object or array"
            )));
        }
        let priority = opts.priority.unwrap_or(DEFAULT_PRIORITY);
        if !(DEFAULT_PRIORITY..=MIN_PRIORITY).contains(&priority) {
            return Err(Error::InvalidConfig(format!(
                "priority {priority} is outside 1..=4"
            )));
        }
        let max_attempts = opts.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS);
        if max_attempts < 1 {
            return Err(Error::InvalidConfig(format!(
                "max_attempts {max_attempts} must be at least 1"
            )));
        }
        if opts.scheduled_at.is_some() && opts.schedule_in.is_some() {
            return Err(Error::InvalidConfig(
                "set scheduled_at or schedule_in, not both".into(),
            ));
        }
        if let Some(d) = opts.schedule_in
            && (d < TimeDelta::zero() || d.num_microseconds().is_none())
        {
            return Err(Error::InvalidConfig(format!(
                "schedule_in {d} must be positive and under 290,000 years"
            )));
        }
        let metadata = opts.metadata.unwrap_or_else(|| json!({}));
        if !metadata.is_object() {
            return Err(Error::InvalidConfig(
                "metadata must be a JSON object".into(),
            ));
        }
        let tags = opts.tags.unwrap_or_default();
        for tag in &tags {
            validate_name("tag", tag)?;
        }
        if let Some(unique) = &opts.unique {
            unique.validate()?;
            if unique.by_args.as_ref().is_some_and(|f| !f.is_empty()) && !args.is_object() {
                return Err(Error::InvalidConfig(format!(
                    "args of {kind} must be a JSON object to be unique by some of their fields"
                )));
            }
        }
        Ok(InsertParams {
            kind: kind.to_owned(),
            args,
            queue,
            priority,
            scheduled_at: opts.scheduled_at,
            schedule_in: opts.schedule_in,
            max_attempts,
            tags,
            metadata,
            pending: opts.pending.unwrap_or(false),
            unique: opts.unique,
        })
    }

    /// The unique options, when the job is unique.
    pub fn unique(&self) -> Option<&UniqueOpts> {
        self.unique.as_ref()
    }

    /// The kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The queue.
    pub fn queue(&self) -> &str {
        &self.queue
    }

    /// The args, as JSON.
    pub fn args(&self) -> &serde_json::Value {
        &self.args
    }

    /// The priority (1 first to 4 last).
    pub fn priority(&self) -> i16 {
        self.priority
    }

    /// The metadata (a JSON object).
    pub fn metadata(&self) -> &serde_json::Value {
        &self.metadata
    }

    /// The metadata object, to change; [middleware](crate::middleware::Middleware::insert) adds
    /// keys here.
    pub fn metadata_mut(&mut self) -> &mut serde_json::Map<String, serde_json::Value> {
        if !self.metadata.is_object() {
            self.metadata = serde_json::Value::Object(serde_json::Map::new());
        }
        match &mut self.metadata {
            serde_json::Value::Object(map) => map,
            _ => unreachable!("metadata was just made an object"),
        }
    }

    /// True when the job will be due at once (not pending, no schedule given).
    pub(crate) fn is_due_now(&self) -> bool {
        !self.pending && self.scheduled_at.is_none() && self.schedule_in.is_none()
    }

    /// The JSON object `job_insert_many.sql` reads.
    pub(crate) fn to_insert_json(&self) -> serde_json::Value {
        let mut o = json!({
            "queue": self.queue,
            "kind": self.kind,
            "args": self.args,
            "metadata": self.metadata,
            "priority": self.priority,
            "max_attempts": self.max_attempts,
            "tags": self.tags,
            "pending": self.pending,
        });
        if let Some(at) = self.scheduled_at {
            o["scheduled_at"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
        }
        if let Some(d) = self.schedule_in {
            o["schedule_in_us"] = json!(d.num_microseconds().unwrap_or(i64::MAX));
        }
        if let Some(u) = &self.unique {
            // The key is computed from the job as finally inserted (after insert hooks).
            o["unique_key"] = json!(u.key_text(&self.kind, &self.args, &self.queue));
            o["unique_states"] = json!(u.states_mask());
            if let Some(period) = u.period_us() {
                o["unique_period_us"] = json!(period);
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Email {
        to: String,
    }

    impl JobArgs for Email {
        const KIND: &'static str = "email";
        fn insert_opts(&self) -> InsertOpts {
            InsertOpts::new().queue("mail").priority(2)
        }
    }

    #[test]
    fn explicit_options_win_over_kind_defaults() {
        let args = Email { to: "a@b".into() };
        let p = InsertParams::from_args(&args, None).unwrap();
        assert_eq!((p.queue.as_str(), p.priority), ("mail", 2));
        let p = InsertParams::from_args(&args, Some(InsertOpts::new().priority(3))).unwrap();
        assert_eq!((p.queue.as_str(), p.priority), ("mail", 3));
    }

    #[test]
    fn bad_options_are_typed_errors() {
        let args = Email { to: "a".into() };
        let bad = [
            InsertOpts::new().priority(0),
            InsertOpts::new().priority(5),
            InsertOpts::new().max_attempts(0),
            InsertOpts::new().metadata(json!([1])),
            InsertOpts::new().schedule_in(TimeDelta::seconds(-1)),
        ];
        for opts in bad {
            let err = InsertParams::from_args(&args, Some(opts.clone())).unwrap_err();
            assert!(matches!(err, Error::InvalidConfig(_)), "{opts:?}: {err}");
        }
        let err = InsertParams::from_args(&args, Some(InsertOpts::new().queue("a b"))).unwrap_err();
        assert!(matches!(err, Error::InvalidName { kind: "queue", .. }));
        let err = InsertParams::new("k", json!(1), InsertOpts::new()).unwrap_err();
        assert!(matches!(err, Error::InvalidConfig(_)));
    }
}
