//! pgmill-test's own tests, against real Postgres on every driver (sqlx, tokio-postgres and diesel).

mod inline;
mod scenarios;

/// One `#[tokio::test]` per scenario and driver.
macro_rules! on_every_driver {
    ($($scenario:ident),* $(,)?) => {
        mod sqlx_driver {
            $(
                #[tokio::test]
                async fn $scenario() {
                    let url = pgmill_test::testdb::url();
                    let driver = pgmill_driver_sqlx::SqlxDriver::connect(&url, 4).await.unwrap();
                    crate::scenarios::$scenario(driver).await;
                }
            )*
        }
        mod tokio_postgres_driver {
            $(
                #[tokio::test]
                async fn $scenario() {
                    let url = pgmill_test::testdb::url();
                    let driver = pgmill_driver_tokio_postgres::TokioPostgresDriver::connect(&url, 4)
                        .await
                        .unwrap();
                    crate::scenarios::$scenario(driver).await;
                }
            )*
        }
        mod diesel_driver {
            $(
                #[tokio::test]
                async fn $scenario() {
                    let url = pgmill_test::testdb::url();
                    let driver = pgmill_driver_diesel::DieselDriver::connect(&url, 4)
                        .await
                        .unwrap();
                    crate::scenarios::$scenario(driver).await;
                }
            )*
        }
    };
}

on_every_driver!(
    required_jobs_are_seen_inside_their_transaction_then_after_commit,
    rolled_back_jobs_are_not_inserted,
    expected_fields_narrow_the_match_and_failures_say_what_was_found,
    drain_runs_the_due_jobs_and_leaves_scheduled_ones,
);
