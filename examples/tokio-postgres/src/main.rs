//! Run with: cargo run -p example-tokio-postgres
//!
//! Enqueues a job inside a tokio-postgres `Transaction` together with the application's own
//! write: commit and both exist, roll back and neither does. Uses `DATABASE_URL`, or a throwaway
//! cluster.

#![allow(clippy::print_stdout)] // An example reports what it did on stdout.

use pgmill::{Inserter, JobArgs, Migrator, Schema};
use pgmill_driver_tokio_postgres::GenericClientExt;
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
    let (mut client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Migrator::new(Schema::public())
        .up(&mut client.pgmill(), None)
        .await?;
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS orders (id bigint PRIMARY KEY)")
        .await?;
    let inserter = Inserter::new(Schema::public());

    for (order_id, commit) in [(1_i64, true), (2, false)] {
        let mut tx = client.transaction().await?;
        tx.execute("INSERT INTO orders (id) VALUES ($1)", &[&order_id])
            .await?;
        let job = tx.insert_job(&inserter, ShipOrder { order_id }).await?;
        if commit {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        let row = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pgmill_job_all WHERE id = $1)",
                &[&job.id.0],
            )
            .await?;
        let exists: bool = row.get(0);
        println!(
            "order {order_id}: committed={commit}, job {} exists afterwards: {exists}",
            job.id
        );
    }
    Ok(())
}
