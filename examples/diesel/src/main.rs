//! Run with: cargo run -p example-diesel
//!
//! Enqueues a job inside diesel's `conn.transaction(|conn| ..)` together with the application's
//! own write: the closure succeeds and both exist, it fails and neither does. Enqueueing is
//! blocking, like the closure. Uses `DATABASE_URL`, or a throwaway cluster.

#![allow(clippy::print_stdout)] // An example reports what it did on stdout.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool};
use pgmill::{Inserter, JobArgs, Schema};
use pgmill_driver_diesel::PgConnectionExt;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct ShipOrder {
    order_id: i64,
}

impl JobArgs for ShipOrder {
    const KIND: &'static str = "ship_order";
}

/// The closure's error: anything diesel or pgmill reports, or a deliberate rollback.
#[derive(Debug)]
enum AppError {
    Diesel(diesel::result::Error),
    Pgmill(pgmill::Error),
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Diesel(e) => write!(f, "diesel: {e}"),
            AppError::Pgmill(e) => write!(f, "pgmill: {e}"),
        }
    }
}

impl From<diesel::result::Error> for AppError {
    fn from(e: diesel::result::Error) -> Self {
        AppError::Diesel(e)
    }
}

impl From<pgmill::Error> for AppError {
    fn from(e: pgmill::Error) -> Self {
        AppError::Pgmill(e)
    }
}

#[derive(QueryableByName)]
struct Exists {
    #[diesel(sql_type = Bool)]
    exists: bool,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = std::env::var("DATABASE_URL")
        .is_err()
        .then(pgmill_testdb::Cluster::start)
        .transpose()?;
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| cluster.as_ref().unwrap().url());
    // The engine side migrates (async); the app's own diesel connection is blocking.
    let driver = pgmill_driver_diesel::DieselDriver::connect(&url, 2).await?;
    let client = pgmill::Client::builder(driver).build()?;
    client.migrate().await?;
    let inserter = Inserter::new(Schema::public());

    tokio::task::spawn_blocking(move || -> Result<(), String> {
        let mut conn = PgConnection::establish(&url).map_err(|e| e.to_string())?;
        diesel::sql_query("CREATE TABLE IF NOT EXISTS orders (id bigint PRIMARY KEY)")
            .execute(&mut conn)
            .map_err(|e| e.to_string())?;
        for (order_id, commit) in [(1_i64, true), (2, false)] {
            let mut job_id = None;
            let result = conn.transaction::<(), AppError, _>(|conn| {
                diesel::sql_query("INSERT INTO orders (id) VALUES ($1)")
                    .bind::<BigInt, _>(order_id)
                    .execute(conn)?;
                job_id = Some(conn.insert_job(&inserter, ShipOrder { order_id })?.id);
                if commit {
                    Ok(())
                } else {
                    Err(AppError::Diesel(diesel::result::Error::RollbackTransaction))
                }
            });
            if commit {
                result.map_err(|e| e.to_string())?;
            }
            let id = job_id.expect("inserted").0;
            let found: Exists = diesel::sql_query(
                "SELECT EXISTS (SELECT 1 FROM pgmill_job_all WHERE id = $1) AS exists",
            )
            .bind::<BigInt, _>(id)
            .get_result(&mut conn)
            .map_err(|e| e.to_string())?;
            println!(
                "order {order_id}: committed={commit}, job {id} exists afterwards: {}",
                found.exists
            );
        }
        Ok(())
    })
    .await??;
    Ok(())
}
