//! Whether jobs were enqueued: [`require_inserted`], [`require_not_inserted`], [`inserted`].

use pgmill::admin::JobListParams;
use pgmill::driver::Executor;
use pgmill::testing::job_list;
use pgmill::{JobRow, Schema};

use crate::expected::{Expected, describe_jobs};

/// Jobs read per page.
const PAGE: usize = 1_000;

/// Every job of `schema` matching `expected`, oldest first, read through `exec`: a pooled
/// connection sees committed jobs; an open transaction also sees its own uncommitted inserts.
///
/// # Errors
///
/// The database error.
pub async fn inserted<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    expected: &Expected,
) -> pgmill::Result<Vec<JobRow>> {
    let jobs = jobs_of_kind(exec, schema, Some(expected.kind_name())).await?;
    Ok(jobs.into_iter().filter(|j| expected.matches(j)).collect())
}

/// Asserts that a job matching `expected` was inserted in `schema`, as `exec` sees it (see
/// [`inserted`]), and returns it (the newest, when several match).
///
/// # Panics
///
/// When no job matches, with what was expected and the jobs found instead; or on a database
/// error.
pub async fn require_inserted<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    expected: &Expected,
) -> JobRow {
    match check_inserted(exec, schema, expected).await {
        Ok(job) => job,
        Err(message) => panic!("{message}"),
    }
}

/// Asserts that no job matching `expected` was inserted in `schema`, as `exec` sees it (see
/// [`inserted`]).
///
/// # Panics
///
/// When a job matches, with what was not expected and the matching jobs; or on a database error.
pub async fn require_not_inserted<E: Executor>(exec: &mut E, schema: &Schema, expected: &Expected) {
    if let Err(message) = check_not_inserted(exec, schema, expected).await {
        panic!("{message}");
    }
}

async fn check_inserted<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    expected: &Expected,
) -> Result<JobRow, String> {
    let of_kind = jobs_of_kind(exec, schema, Some(expected.kind_name()))
        .await
        .map_err(|e| format!("require_inserted: cannot list jobs: {e}"))?;
    if let Some(job) = of_kind.iter().rev().find(|j| expected.matches(j)) {
        return Ok(job.clone());
    }
    let mut message = format!(
        "require_inserted: expected {expected} in schema {}; ",
        schema.name()
    );
    if of_kind.is_empty() {
        let all = jobs_of_kind(exec, schema, None)
            .await
            .map_err(|e| format!("require_inserted: cannot list jobs: {e}"))?;
        if all.is_empty() {
            message.push_str("found no job at all");
        } else {
            message.push_str(&format!(
                "found no job of that kind, only {} of other kinds:\n",
                all.len()
            ));
            describe_jobs_with_kind(&all, &mut message);
        }
    } else {
        message.push_str(&format!(
            "found {} job(s) of that kind, none matching:\n",
            of_kind.len()
        ));
        for job in &of_kind {
            message.push_str(&format!(
                "  job {}: {}\n",
                job.id,
                expected.mismatches(job).join("; ")
            ));
        }
    }
    Err(message)
}

async fn check_not_inserted<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    expected: &Expected,
) -> Result<(), String> {
    let matching = inserted(exec, schema, expected)
        .await
        .map_err(|e| format!("require_not_inserted: cannot list jobs: {e}"))?;
    if matching.is_empty() {
        return Ok(());
    }
    let mut message = format!(
        "require_not_inserted: expected no {expected} in schema {}; found {}:\n",
        schema.name(),
        matching.len()
    );
    describe_jobs(&matching, &mut message);
    Err(message)
}

fn describe_jobs_with_kind(jobs: &[JobRow], out: &mut String) {
    for job in jobs {
        out.push_str(&format!("  kind {:?}:", job.kind));
        describe_jobs(std::slice::from_ref(job), out);
    }
}

/// Every job of `schema` (of `kind`, when given), by id.
async fn jobs_of_kind<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    kind: Option<&str>,
) -> pgmill::Result<Vec<JobRow>> {
    let mut params = JobListParams::new().limit(PAGE);
    if let Some(kind) = kind {
        params = params.kinds([kind]);
    }
    let mut jobs = Vec::new();
    loop {
        let page = job_list(exec, schema, &params).await?;
        jobs.extend(page.jobs);
        match page.next_cursor {
            Some(cursor) => params = params.after(cursor),
            None => return Ok(jobs),
        }
    }
}
