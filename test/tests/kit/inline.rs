//! Workers run inline, without a client or a database.

use std::time::Duration;

use pgmill::{Job, JobArgs, JobError, JobId, Outcome, Worker};
use pgmill_test::{InlineWorker, JobBuilder};
use serde::{Deserialize, Serialize};

use crate::scenarios::{SendEmail, SendEmailWorker};

#[derive(Debug, Serialize, Deserialize)]
struct Flaky {
    fail_until: i16,
    mode: String,
}

impl JobArgs for Flaky {
    const KIND: &'static str = "flaky";
}

struct FlakyWorker;

impl Worker<Flaky> for FlakyWorker {
    async fn work(&self, job: &Job<Flaky>) -> Result<(), JobError> {
        match job.args.mode.as_str() {
            "panic" => panic!("boom"),
            "hang" => std::future::pending().await,
            "cancelled" if job.is_cancelled() => Err(JobError::cancel("saw the cancel")),
            _ if job.attempt() < job.args.fail_until => {
                Err(anyhow::anyhow!("down").context(format!("attempt {}", job.attempt())))?
            }
            _ => Ok(()),
        }
    }

    fn timeout(&self, job: &Job<Flaky>) -> Option<Duration> {
        (job.args.mode == "hang").then_some(Duration::from_millis(50))
    }
}

fn flaky(fail_until: i16, mode: &str) -> Flaky {
    Flaky {
        fail_until,
        mode: mode.to_owned(),
    }
}

#[tokio::test]
async fn inline_worker_turns_results_into_the_outcomes_a_client_records() {
    let worker = InlineWorker::new(FlakyWorker);
    assert!(matches!(
        worker.work(flaky(0, "")).await.unwrap(),
        Outcome::Completed { .. }
    ));
    match worker.work(flaky(3, "")).await.unwrap() {
        Outcome::Retry { error, .. } => assert_eq!(error, "attempt 1: down"),
        other => panic!("expected a retry, found {other:?}"),
    }
    let third = JobBuilder::new(flaky(3, "")).attempt(3);
    assert!(matches!(
        worker.work_job(third).await.unwrap(),
        Outcome::Completed { .. }
    ));
    match worker.work(flaky(0, "panic")).await.unwrap() {
        Outcome::Retry { error, panic, .. } => {
            assert_eq!(error, "panicked: boom");
            assert!(panic);
        }
        other => panic!("expected a caught panic, found {other:?}"),
    }
    match worker.work(flaky(0, "hang")).await.unwrap() {
        Outcome::Retry { error, .. } => assert_eq!(error, "timed out after 50ms"),
        other => panic!("expected a timeout, found {other:?}"),
    }
    let cancelled = JobBuilder::new(flaky(0, "cancelled")).cancelled();
    assert!(matches!(
        worker.work_job(cancelled).await.unwrap(),
        Outcome::Cancel { .. }
    ));
}

#[tokio::test]
async fn a_built_job_carries_what_the_builder_set() {
    let job = JobBuilder::new(SendEmail {
        to: "ada@example.com".into(),
        lang: "en".into(),
    })
    .id(JobId(42))
    .attempt(2)
    .max_attempts(3)
    .queue("mail")
    .priority(4)
    .tags(["welcome"])
    .build()
    .unwrap();
    assert_eq!((job.id(), job.attempt()), (JobId(42), 2));
    let row = job.row();
    assert_eq!(
        (row.kind.as_str(), row.queue.as_str()),
        ("send_email", "mail")
    );
    assert_eq!((row.priority, row.max_attempts), (4, 3));
    assert_eq!(row.tags, ["welcome"]);
    assert_eq!(row.args["to"], "ada@example.com");
    assert!(!job.is_cancelled());
    assert!(SendEmailWorker.work(&job).await.is_ok());
}
