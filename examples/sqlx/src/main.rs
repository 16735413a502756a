//! Run with: cargo run -p example-sqlx
//!
//! Enqueues a job inside a sqlx `Transaction` together with the application's own write: commit
//! and both exist, roll back and neither does. Uses `DATABASE_URL`, or a throwaway cluster.

#![allow(clippy::print_stdout)] // An example reports what it did on stdout.

use pgmill::{Inserter, JobArgs, Migrator, Schema};
use pgmill_driver_sqlx::PgConnectionExt;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct ShipOrder {
    order_id: i64,
}

impl JobArgs for ShipOrder {
    const KIND: &'static str = "ship_order";
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = std::env::var("DATABASE_URL")
        .is_err()
        .then(pgmill_testdb::Cluster::start)
        .transpose()?;
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| cluster.as_ref().unwrap().url());
    let pool = sqlx::PgPool::connect(&url).await?;
    Migrator::new(Schema::public())
        .up(&mut pool.acquire().await?.pgmill(), None)
        .await?;
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS orders (id bigint PRIMARY KEY)")
        .execute(&pool)
        .await?;
    let inserter = Inserter::new(Schema::public());

    for (order_id, commit) in [(1_i64, true), (2, false)] {
        let mut tx = pool.begin().await?;
        sqlx::query("INSERT INTO orders (id) VALUES ($1)")
            .bind(order_id)
            .execute(&mut *tx)
            .await?;
        let job = tx.insert_job(&inserter, ShipOrder { order_id }).await?;
        if commit {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pgmill_job_all WHERE id = $1)")
                .bind(job.id.0)
                .fetch_one(&pool)
                .await?;
        println!(
            "order {order_id}: committed={commit}, job {} exists afterwards: {exists}",
            job.id
        );
    }
    Ok(())
}
