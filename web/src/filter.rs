//! The jobs page's filter, as it travels in the query string: parsed and checked here, bound as
//! parameters by core, never written into SQL.

use pgmill::admin::{self, JobListParams, JobSummaryParams};
use pgmill::{JobId, JobState};
use serde::Deserialize;

use crate::error::{Error, Result};

/// Longest queue or kind name accepted in a filter (the schema's limit).
const MAX_NAME_CHARS: usize = 128;

/// The query string of the jobs page: `?state=&queue=&kind=&before=`; empty fields mean no
/// filter.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct FilterQuery {
    #[serde(default)]
    state: String,
    #[serde(default)]
    queue: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    before: String,
}

/// A checked filter of the jobs page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JobFilter {
    /// Only this state.
    pub(crate) state: Option<JobState>,
    /// Only this queue.
    pub(crate) queue: Option<String>,
    /// Only this kind.
    pub(crate) kind: Option<String>,
}

/// A filter and the page cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JobPage {
    /// The filter.
    pub(crate) filter: JobFilter,
    /// Show jobs below this id.
    pub(crate) before: Option<JobId>,
}

fn name(field: &str, value: String) -> Result<Option<String>> {
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Ok(None);
    }
    if value.chars().count() > MAX_NAME_CHARS {
        return Err(Error::BadRequest(format!(
            "{field} filter is longer than {MAX_NAME_CHARS} characters"
        )));
    }
    Ok(Some(value))
}

impl FilterQuery {
    /// The checked filter and cursor.
    ///
    /// # Errors
    ///
    /// [`Error::BadRequest`] for an unknown state, an overlong name or a bad cursor.
    pub(crate) fn parse(self) -> Result<JobPage> {
        let state = match self.state.trim() {
            "" => None,
            s => Some(
                s.parse::<JobState>()
                    .map_err(|_| Error::BadRequest(format!("unknown job state {s:?}")))?,
            ),
        };
        let before = match self.before.trim() {
            "" => None,
            b => Some(JobId(b.parse::<i64>().map_err(|_| {
                Error::BadRequest(format!("bad page cursor {b:?}"))
            })?)),
        };
        Ok(JobPage {
            filter: JobFilter {
                state,
                queue: name("queue", self.queue)?,
                kind: name("kind", self.kind)?,
            },
            before,
        })
    }
}

impl JobFilter {
    /// True when nothing is filtered.
    pub(crate) fn is_empty(&self) -> bool {
        self.state.is_none() && self.queue.is_none() && self.kind.is_none()
    }

    /// The core listing parameters for this filter.
    pub(crate) fn summary_params(&self) -> JobSummaryParams {
        JobSummaryParams::new().filter(self.core_filter())
    }

    /// The core parameters of a bulk action on this filter.
    pub(crate) fn list_params(&self) -> JobListParams {
        JobListParams::new().filter(self.core_filter())
    }

    /// The core filter: each part given narrows it.
    fn core_filter(&self) -> admin::JobFilter {
        let mut f = admin::JobFilter::new();
        if let Some(s) = self.state {
            f = f.states([s]);
        }
        if let Some(q) = &self.queue {
            f = f.queues([q.clone()]);
        }
        if let Some(k) = &self.kind {
            f = f.kinds([k.clone()]);
        }
        f
    }

    /// The filter's query string (without `?`), with `before` when given.
    pub(crate) fn query_string(&self, before: Option<JobId>) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(s) = self.state {
            pairs.push(("state", s.as_str().to_owned()));
        }
        if let Some(q) = &self.queue {
            pairs.push(("queue", q.clone()));
        }
        if let Some(k) = &self.kind {
            pairs.push(("kind", k.clone()));
        }
        if let Some(b) = before {
            pairs.push(("before", b.0.to_string()));
        }
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// A sentence naming the filter: `state discarded, queue "mail"`.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.state {
            parts.push(format!("state {s}"));
        }
        if let Some(q) = &self.queue {
            parts.push(format!("queue {q:?}"));
        }
        if let Some(k) = &self.kind {
            parts.push(format!("kind {k:?}"));
        }
        if parts.is_empty() {
            "all jobs".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// Percent-encodes a query string value (everything but unreserved characters).
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(state: &str, queue: &str, kind: &str, before: &str) -> FilterQuery {
        FilterQuery {
            state: state.into(),
            queue: queue.into(),
            kind: kind.into(),
            before: before.into(),
        }
    }

    #[test]
    fn filters_parse_check_and_round_trip_through_the_query_string() {
        let page = query("discarded", " mail ", "", "42").parse().unwrap();
        assert_eq!(page.filter.state, Some(JobState::Discarded));
        assert_eq!(page.filter.queue.as_deref(), Some("mail"));
        assert_eq!(page.filter.kind, None);
        assert_eq!(page.before, Some(JobId(42)));
        assert_eq!(
            page.filter.query_string(page.before),
            "state=discarded&queue=mail&before=42"
        );
        assert!(query("", "", "", "").parse().unwrap().filter.is_empty());
        assert!(query("done", "", "", "").parse().is_err());
        assert!(query("", "", "", "x").parse().is_err());
        assert!(query("", &"q".repeat(129), "", "").parse().is_err());
        let odd = JobFilter {
            kind: Some("a&b=c d/é".into()),
            ..JobFilter::default()
        };
        assert_eq!(odd.query_string(None), "kind=a%26b%3Dc%20d%2F%C3%A9");
        assert_eq!(odd.describe(), "kind \"a&b=c d/é\"");
    }
}
