//! A small benchmark run: JSON lines parse and the exactly-once checks pass.

use std::collections::BTreeSet;
use std::process::Command;

use pgmill_testdb as testdb;

#[test]
fn bench_prints_one_json_line_per_result_after_checking_every_job() {
    let out = Command::new(env!("CARGO_BIN_EXE_pgmill-bench"))
        .args([
            "--database-url",
            &testdb::url(),
            "-n",
            "200",
            "--json",
            "--driver",
            "sqlx",
            "--latency-jobs",
            "20",
            "--workers",
            "4",
            "--batch-size",
            "50",
        ])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // Seven workloads for the ceiling and sqlx, plus the NOTIFY-per-insert reference of w2 and
    // the hand-written insert on sqlx of w2_insert_tx.
    assert_eq!(lines.len(), 16, "{stdout}");
    let mut seen = BTreeSet::new();
    for line in &lines {
        let driver = line["driver"].as_str().unwrap();
        let workload = line["workload"].as_str().unwrap();
        assert!(
            ["ceiling", "ceiling_notify", "sqlx", "sqlx_plain"].contains(&driver),
            "{line}"
        );
        assert!(line["n"].as_u64().unwrap() > 0, "{line}");
        assert!(line["ceiling_ratio"].as_f64().unwrap() > 0.0, "{line}");
        if ["w3_work", "w4_latency", "w5_burst"].contains(&workload) {
            assert_eq!(line["workers"], 4, "{line}");
        }
        if workload == "w4_latency" {
            assert_eq!(line["n"], 20);
            for key in ["p50_ms", "p95_ms", "p99_ms", "max_ms"] {
                assert!(line[key].as_f64().is_some(), "{key}: {line}");
            }
        } else {
            assert!(line["jobs_per_s"].as_f64().unwrap() > 0.0, "{line}");
            assert!(line["wal_bytes_per_job"].as_f64().unwrap() > 0.0, "{line}");
            assert!(line["xacts_per_job"].as_f64().is_some(), "{line}");
            // The throwaway test cluster runs on this machine: its processes' CPU is read (a
            // DATABASE_URL may name a server elsewhere).
            if std::env::var_os("DATABASE_URL").is_none() {
                assert!(line["server_cpu_us_per_job"].as_f64().is_some(), "{line}");
            }
        }
        seen.insert((driver.to_owned(), workload.to_owned()));
    }
    assert_eq!(seen.len(), 16, "{seen:?}");
    let w2 = lines
        .iter()
        .find(|l| l["workload"] == "w2_insert_single" && l["driver"] == "sqlx")
        .unwrap();
    assert_eq!(w2["n"], 20);
    assert!(w2["notify_ratio"].as_f64().unwrap() > 0.0, "{w2}");
    let in_tx = lines
        .iter()
        .find(|l| l["workload"] == "w2_insert_tx" && l["driver"] == "sqlx")
        .unwrap();
    assert!(in_tx["host_plain_ratio"].as_f64().unwrap() > 0.0, "{in_tx}");
    // Every benchmark schema was dropped.
    let leftover = sql("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgmill_bench_%'");
    assert!(leftover.is_empty(), "{} schemas left", leftover.len());
}

/// Runs SQL on the test database.
fn sql(statement: &str) -> Vec<tokio_postgres::Row> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&testdb::url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(conn);
        let rows = client.query(statement, &[]).await.unwrap();
        drop(client);
        let _ = driver.await;
        rows
    })
}
