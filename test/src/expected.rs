//! [`Expected`]: what a test expects of an enqueued job.

use std::fmt::{self, Write as _};

use chrono::{DateTime, SubsecRound, Utc};
use pgmill::{JobArgs, JobRow, JobState};
use serde_json::Value;

/// A job a test expects to find (or not): of a kind, optionally with some of its args, its
/// queue, priority, scheduled time, attempts allowed or state. Fields left unset match anything.
///
/// # Examples
///
/// ```
/// use pgmill_test::Expected;
/// # #[derive(serde::Serialize, serde::Deserialize)] struct SendEmail { to: String }
/// # impl pgmill::JobArgs for SendEmail { const KIND: &'static str = "send_email"; }
///
/// let expected = Expected::kind::<SendEmail>()
///     .args(serde_json::json!({"to": "ada@example.com"})) // a subset of the args
///     .queue("mail")
///     .priority(2);
/// assert_eq!(
///     expected.to_string(),
///     r#"a job of kind "send_email" with args containing {"to":"ada@example.com"}, queue "mail", priority 2"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    kind: String,
    args: Option<Value>,
    queue: Option<String>,
    priority: Option<i16>,
    scheduled_at: Option<DateTime<Utc>>,
    max_attempts: Option<i16>,
    state: Option<JobState>,
}

impl Expected {
    /// A job of the kind of `A`.
    pub fn kind<A: JobArgs>() -> Self {
        Self::kind_named(A::KIND)
    }

    /// A job of the kind named `kind`.
    pub fn kind_named(kind: &str) -> Self {
        Expected {
            kind: kind.to_owned(),
            args: None,
            queue: None,
            priority: None,
            scheduled_at: None,
            max_attempts: None,
            state: None,
        }
    }

    /// Whose args contain `subset`: every field of an object must be present with a matching
    /// value (objects inside are matched the same way); any other value must be equal.
    pub fn args(mut self, subset: Value) -> Self {
        self.args = Some(subset);
        self
    }

    /// In this queue.
    pub fn queue(mut self, queue: &str) -> Self {
        self.queue = Some(queue.to_owned());
        self
    }

    /// With this priority.
    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Scheduled at this time, to the microsecond (Postgres's precision).
    pub fn scheduled_at(mut self, at: DateTime<Utc>) -> Self {
        self.scheduled_at = Some(at.trunc_subsecs(6));
        self
    }

    /// With this many attempts allowed.
    pub fn max_attempts(mut self, max_attempts: i16) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    /// In this state (e.g. [`JobState::Scheduled`] for a job scheduled ahead).
    pub fn state(mut self, state: JobState) -> Self {
        self.state = Some(state);
        self
    }

    /// The kind expected.
    pub fn kind_name(&self) -> &str {
        &self.kind
    }

    /// How `job` differs from what is expected, one line per field (`queue: expected "mail",
    /// found "default"`); empty when it matches.
    pub fn mismatches(&self, job: &JobRow) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |field: &str, expected: Option<String>, found: String| {
            if let Some(expected) = expected
                && expected != found
            {
                out.push(format!("{field}: expected {expected}, found {found}"));
            }
        };
        check(
            "kind",
            Some(format!("{:?}", self.kind)),
            format!("{:?}", job.kind),
        );
        check(
            "queue",
            self.queue.as_ref().map(|q| format!("{q:?}")),
            format!("{:?}", job.queue),
        );
        check(
            "priority",
            self.priority.map(|p| p.to_string()),
            job.priority.to_string(),
        );
        check(
            "scheduled_at",
            self.scheduled_at.map(|t| t.to_rfc3339()),
            job.scheduled_at.to_rfc3339(),
        );
        check(
            "max_attempts",
            self.max_attempts.map(|m| m.to_string()),
            job.max_attempts.to_string(),
        );
        check(
            "state",
            self.state.map(|s| s.to_string()),
            job.state.to_string(),
        );
        if let Some(subset) = &self.args
            && !contains(&job.args, subset)
        {
            out.push(format!(
                "args: expected to contain {subset}, found {}",
                job.args
            ));
        }
        out
    }

    /// True when `job` matches.
    pub fn matches(&self, job: &JobRow) -> bool {
        self.mismatches(job).is_empty()
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut with = Vec::new();
        if let Some(args) = &self.args {
            with.push(format!("args containing {args}"));
        }
        if let Some(q) = &self.queue {
            with.push(format!("queue {q:?}"));
        }
        if let Some(p) = self.priority {
            with.push(format!("priority {p}"));
        }
        if let Some(t) = self.scheduled_at {
            with.push(format!("scheduled_at {}", t.to_rfc3339()));
        }
        if let Some(m) = self.max_attempts {
            with.push(format!("max_attempts {m}"));
        }
        if let Some(s) = self.state {
            with.push(format!("state {s}"));
        }
        write!(f, "a job of kind {:?}", self.kind)?;
        if !with.is_empty() {
            write!(f, " with {}", with.join(", "))?;
        }
        Ok(())
    }
}

/// True when `value` contains `subset` (objects field by field, recursively; anything else equal).
fn contains(value: &Value, subset: &Value) -> bool {
    match (value, subset) {
        (Value::Object(value), Value::Object(subset)) => subset
            .iter()
            .all(|(k, s)| value.get(k).is_some_and(|v| contains(v, s))),
        _ => value == subset,
    }
}

/// One line per job: its id, state, queue, priority, scheduled time and args.
pub(crate) fn describe_jobs(jobs: &[JobRow], out: &mut String) {
    for job in jobs {
        let _ = writeln!(
            out,
            "  job {} ({}, queue {:?}, priority {}, scheduled_at {}, max_attempts {}): args {}",
            job.id,
            job.state,
            job.queue,
            job.priority,
            job.scheduled_at.to_rfc3339(),
            job.max_attempts,
            job.args
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn args_match_as_a_subset_recursively() {
        let args = json!({"to": "ada", "opts": {"lang": "en", "html": true}, "ids": [1, 2]});
        assert!(contains(&args, &json!({})));
        assert!(contains(&args, &json!({"to": "ada"})));
        assert!(contains(&args, &json!({"opts": {"lang": "en"}})));
        assert!(contains(&args, &json!({"ids": [1, 2]})));
        assert!(
            !contains(&args, &json!({"ids": [1]})),
            "arrays are equal or not"
        );
        assert!(!contains(&args, &json!({"to": "bob"})));
        assert!(!contains(&args, &json!({"cc": "bob"})));
    }
}
