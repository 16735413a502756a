//! One combined fault scenario per driver (or the long plan, with `PGMILL_FAULTS_LONG=1`): worker
//! processes killed, frozen, cut off and their database crash-restarted; then nothing may be
//! lost, stuck, overwritten or rescued late.

use pgmill_faults::{DriverKind, Scenario};

async fn run(driver: DriverKind) {
    let report = Scenario::new(driver, env!("CARGO_BIN_EXE_fault-worker"))
        .run()
        .await
        .expect("the scenario runs to its end");
    eprintln!("{report}");
    let violations = report.violations();
    assert!(
        violations.is_empty(),
        "{driver}: {}\n{report}",
        violations.join("; ")
    );
}

#[tokio::test]
async fn sqlx_workers_keep_every_guarantee_under_faults() {
    run(DriverKind::Sqlx).await;
}

#[tokio::test]
async fn tokio_postgres_workers_keep_every_guarantee_under_faults() {
    run(DriverKind::TokioPostgres).await;
}

#[tokio::test]
async fn diesel_workers_keep_every_guarantee_under_faults() {
    run(DriverKind::Diesel).await;
}
