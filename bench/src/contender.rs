//! What runs the workloads (pgmill on a driver, or the hand-written ceiling), and how one run is
//! measured and checked.

use std::sync::Arc;

use pgmill::Schema;

use crate::bench_database::BenchDatabase;
use crate::bench_error::BenchError;
use crate::bench_result::Measurement;
use crate::execution_ledger::ExecutionLedger;
use crate::workload::{BenchOptions, Scenario, Workload};

/// What one contender's run of one scenario produced.
#[derive(Debug)]
pub(crate) struct Run {
    /// The measurement.
    pub(crate) measurement: Measurement,
    /// The workers' execution counts, for the workloads that run jobs.
    pub(crate) ledger: Option<Arc<ExecutionLedger>>,
}

impl Run {
    /// A run that ran no jobs (the insert workloads).
    pub(crate) fn throughput(measurement: Measurement) -> Self {
        Run {
            measurement,
            ledger: None,
        }
    }
}

/// Something that runs the workloads: pgmill on a driver, or a hand-written reference.
///
/// Another way to claim jobs (a claim mode) joins the benchmark as one more contender: a type
/// implementing this trait, named in results by [`Contender::name`], run next to the others in
/// [`crate::run`].
pub(crate) trait Contender {
    /// The name in results.
    fn name(&self) -> &'static str;

    /// Runs `scenario` in `schema` (fresh and migrated) and measures it.
    async fn run(
        &self,
        scenario: &Scenario,
        schema: &Schema,
        opts: &BenchOptions,
    ) -> Result<Run, BenchError>;
}

/// Runs one scenario for one contender in a fresh schema: preload (w3), a checkpoint, the run,
/// exactly-once checks, and the schema dropped whatever happened.
pub(crate) async fn measure(
    db: &BenchDatabase,
    contender: &impl Contender,
    scenario: &Scenario,
    opts: &BenchOptions,
) -> Result<Measurement, BenchError> {
    let workload = scenario.workload;
    let schema = db.fresh_schema().await?;
    let measured = async {
        if workload == Workload::W3Work && opts.preload_completed > 0 {
            db.preload_completed(&schema, opts.preload_completed)
                .await?;
        }
        db.checkpoint().await;
        let run = contender.run(scenario, &schema, opts).await?;
        let expected = scenario.jobs;
        let checked = if workload.works() {
            let ledger = run
                .ledger
                .as_ref()
                .map_or(Err("no execution counts".to_owned()), |l| l.check());
            match ledger {
                Ok(()) => db.verify_completed(&schema, expected).await,
                Err(e) => Err(BenchError::new(e)),
            }
        } else {
            db.verify_inserted(&schema, expected).await
        };
        checked.map_err(|e| {
            BenchError::new(format!(
                "exactly-once check failed for {} {scenario}: {e}",
                contender.name()
            ))
        })?;
        Ok::<Measurement, BenchError>(run.measurement)
    }
    .await;
    let dropped = db.drop_schema(&schema).await;
    let figure = measured?;
    dropped?;
    Ok(figure)
}
