//! Scenarios run on every driver.

use std::future::Future;

use chrono::{TimeDelta, Utc};
use pgmill::driver::{Driver, Executor, Transaction};
use pgmill::{Client, InsertOpts, Inserter, Job, JobArgs, JobError, JobState, Schema, Worker};
use pgmill_test::{Expected, drain, inserted, require_inserted, require_not_inserted, test_schema};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SendEmail {
    pub(crate) to: String,
    pub(crate) lang: String,
}

impl JobArgs for SendEmail {
    const KIND: &'static str = "send_email";
}

#[derive(Debug, Serialize, Deserialize)]
struct Cleanup {}

impl JobArgs for Cleanup {
    const KIND: &'static str = "cleanup";
}

fn email(to: &str) -> SendEmail {
    SendEmail {
        to: to.to_owned(),
        lang: "en".to_owned(),
    }
}

/// Discards e-mails without an `@`, completes the rest.
pub(crate) struct SendEmailWorker;

impl Worker<SendEmail> for SendEmailWorker {
    async fn work(&self, job: &Job<SendEmail>) -> Result<(), JobError> {
        if !job.args.to.contains('@') {
            return Err(JobError::discard("not an e-mail address"));
        }
        Ok(())
    }
}

async fn setup<D: Driver>(driver: &D) -> (Schema, Inserter) {
    let mut conn = driver.acquire().await.unwrap();
    let schema = test_schema(&mut conn).await.unwrap();
    (schema.clone(), Inserter::new(schema))
}

/// The panic message of `fut`, which must panic.
async fn panic_message(fut: impl Future<Output = ()> + Send + 'static) -> String {
    let panic = tokio::spawn(fut)
        .await
        .expect_err("the assertion fails")
        .into_panic();
    match panic.downcast::<String>() {
        Ok(message) => *message,
        Err(panic) => panic.downcast_ref::<&str>().unwrap_or(&"?").to_string(),
    }
}

pub(crate) async fn required_jobs_are_seen_inside_their_transaction_then_after_commit<D: Driver>(
    driver: D,
) {
    let (schema, inserter) = setup(&driver).await;
    let expected = Expected::kind::<SendEmail>().args(json!({"to": "ada@example.com"}));
    let mut conn = driver.acquire().await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    let job = inserter
        .insert(&mut tx, email("ada@example.com"))
        .await
        .unwrap();
    assert_eq!(
        require_inserted(&mut tx, &schema, &expected).await.id,
        job.id
    );
    let mut other = driver.acquire().await.unwrap();
    require_not_inserted(&mut other, &schema, &expected).await;
    // Outside the transaction, the failure says nothing was found.
    let (d, s, e) = (driver.clone(), schema.clone(), expected.clone());
    let message = panic_message(async move {
        require_inserted(&mut d.acquire().await.unwrap(), &s, &e).await;
    })
    .await;
    assert!(
        message.starts_with(&format!(
            "require_inserted: expected a job of kind \"send_email\" with args containing \
             {{\"to\":\"ada@example.com\"}} in schema {}; found no job at all",
            schema.name()
        )),
        "{message}"
    );
    tx.commit().await.unwrap();
    let found = require_inserted(&mut other, &schema, &expected).await;
    assert_eq!(found.id, job.id);
    assert_eq!(found.args, json!({"to": "ada@example.com", "lang": "en"}));
}

pub(crate) async fn rolled_back_jobs_are_not_inserted<D: Driver>(driver: D) {
    let (schema, inserter) = setup(&driver).await;
    let mut conn = driver.acquire().await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    inserter
        .insert(&mut tx, email("ada@example.com"))
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let expected = Expected::kind::<SendEmail>();
    require_not_inserted(&mut conn, &schema, &expected).await;
    // A committed one is reported when it should not be there.
    inserter
        .insert(&mut conn, email("bob@example.com"))
        .await
        .unwrap();
    let (d, s) = (driver.clone(), schema.clone());
    let message = panic_message(async move {
        require_not_inserted(&mut d.acquire().await.unwrap(), &s, &expected).await;
    })
    .await;
    assert!(
        message.starts_with(&format!(
            "require_not_inserted: expected no a job of kind \"send_email\" in schema {}; found 1:\n  job ",
            schema.name()
        )) && message.contains(r#"args {"lang":"en","to":"bob@example.com"}"#),
        "{message}"
    );
}

pub(crate) async fn expected_fields_narrow_the_match_and_failures_say_what_was_found<D: Driver>(
    driver: D,
) {
    let (schema, inserter) = setup(&driver).await;
    let mut conn = driver.acquire().await.unwrap();
    let at = Utc::now() + TimeDelta::hours(1);
    let opts = InsertOpts::new()
        .queue("mail")
        .priority(2)
        .scheduled_at(at)
        .max_attempts(5);
    inserter
        .insert_with(&mut conn, email("ada@example.com"), opts)
        .await
        .unwrap();
    inserter
        .insert(&mut conn, email("bob@example.com"))
        .await
        .unwrap();
    let exact = Expected::kind::<SendEmail>()
        .args(json!({"to": "ada@example.com"}))
        .queue("mail")
        .priority(2)
        .scheduled_at(at)
        .max_attempts(5)
        .state(JobState::Scheduled);
    let job = require_inserted(&mut conn, &schema, &exact).await;
    assert_eq!(job.args["to"], "ada@example.com");
    let all = inserted(&mut conn, &schema, &Expected::kind::<SendEmail>())
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
    require_not_inserted(
        &mut conn,
        &schema,
        &Expected::kind::<SendEmail>().queue("sms"),
    )
    .await;

    // Two jobs of the kind, neither in queue "sms" with priority 3: each says how it differs.
    let wrong = Expected::kind::<SendEmail>().queue("sms").priority(3);
    let (d, s, w) = (driver.clone(), schema.clone(), wrong.clone());
    let message = panic_message(async move {
        require_inserted(&mut d.acquire().await.unwrap(), &s, &w).await;
    })
    .await;
    assert!(
        message.contains("found 2 job(s) of that kind, none matching:")
            && message
                .contains(r#"queue: expected "sms", found "mail"; priority: expected 3, found 2"#)
            && message.contains(
                r#"queue: expected "sms", found "default"; priority: expected 3, found 1"#
            ),
        "{message}"
    );
    // No job of the kind: the jobs of other kinds are listed.
    let (d, s) = (driver.clone(), schema.clone());
    let message = panic_message(async move {
        require_inserted(
            &mut d.acquire().await.unwrap(),
            &s,
            &Expected::kind::<Cleanup>(),
        )
        .await;
    })
    .await;
    assert!(
        message.contains("found no job of that kind, only 2 of other kinds:")
            && message.contains(r#"kind "send_email""#),
        "{message}"
    );
    let message = {
        let (d, s) = (driver.clone(), schema.clone());
        let wrong_args = Expected::kind::<SendEmail>().args(json!({"lang": "fr"}));
        panic_message(async move {
            require_inserted(&mut d.acquire().await.unwrap(), &s, &wrong_args).await;
        })
        .await
    };
    assert!(
        message.contains(
            r#"args: expected to contain {"lang":"fr"}, found {"lang":"en","to":"ada@example.com"}"#
        ),
        "{message}"
    );
}

pub(crate) async fn drain_runs_the_due_jobs_and_leaves_scheduled_ones<D: Driver>(driver: D) {
    let (schema, inserter) = setup(&driver).await;
    let mut conn = driver.acquire().await.unwrap();
    inserter
        .insert(&mut conn, email("ada@example.com"))
        .await
        .unwrap();
    inserter.insert(&mut conn, email("nobody")).await.unwrap();
    let later = InsertOpts::new().schedule_in(TimeDelta::hours(1));
    inserter
        .insert_with(&mut conn, email("later@example.com"), later)
        .await
        .unwrap();
    let client = Client::builder(driver.clone())
        .schema(schema.clone())
        .queue("default", 2)
        .worker(SendEmailWorker)
        .build()
        .unwrap();
    let drained = drain(&client).await.unwrap();
    assert_eq!((drained.completed, drained.failed), (1, 1), "{drained:?}");
    let state = |to: &str, state| {
        Expected::kind::<SendEmail>()
            .args(json!({ "to": to }))
            .state(state)
    };
    require_inserted(
        &mut conn,
        &schema,
        &state("ada@example.com", JobState::Completed),
    )
    .await;
    require_inserted(&mut conn, &schema, &state("nobody", JobState::Discarded)).await;
    require_inserted(
        &mut conn,
        &schema,
        &state("later@example.com", JobState::Scheduled),
    )
    .await;
}
