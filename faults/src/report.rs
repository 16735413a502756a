//! What a scenario found, checked in SQL after the workers stopped: the figures to quote and the
//! violations of pgmill's guarantees.

use std::fmt;
use std::process::ExitStatus;

use pgmill_models::trace::{self, Event, JobImage, LeaseImage, StatementId, TraceReport};
use tokio_postgres::Row;

use crate::driver_kind::DriverKind;
use crate::error::Error;
use crate::plan::RESCUE_BOUND;
use crate::probe::Probe;

/// One kill, freeze or soft stop: the running jobs the process held (working or buffered), and
/// how long after the fault (by the database clock) each next started on another claim.
#[derive(Debug, Clone)]
pub struct FaultFigures {
    /// `kill`, `freeze` or `stop`.
    pub kind: String,
    /// The client hit.
    pub client_id: String,
    /// Seconds from the start of the faults (by the database clock).
    pub at_s: f64,
    /// Whether the rescue bound applies ([`Plan::bounded`](crate::Plan::bounded)).
    pub bounded: bool,
    /// Whether the process hit was the leader at that moment.
    pub was_leader: bool,
    /// Running jobs it held at the fault.
    pub held: i64,
    /// Of those, jobs that started again under a later claim.
    pub rerun: i64,
    /// Fastest, median and slowest time from the fault to the next start, in seconds.
    pub delay_s: (f64, f64, f64),
    /// Of the held jobs, those the rescuer gave back after the fault (a soft stop gives its
    /// buffered jobs back itself, without a rescue).
    pub rescued: i64,
    /// Fastest, median and slowest time from the fault to the rescue (the first one after it),
    /// in seconds, by the rescue's own `now()` in the job's errors.
    pub rescue_s: (f64, f64, f64),
    /// Held jobs rescued more than once after the fault: the client that claimed them next was
    /// hit by a later fault before it started them, so their next start says nothing of this
    /// fault's rescue.
    pub hit_again: i64,
    /// The slowest next start of the held jobs that were not hit again, in seconds.
    pub delay_once_max_s: f64,
}

/// The findings of one scenario run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The driver the workers ran on.
    pub driver: DriverKind,
    /// The plan's name.
    pub plan: &'static str,
    /// The seed of the victim choices (`PGMILL_FAULTS_SEED` repeats it).
    pub seed: u64,
    /// Seconds of faults.
    pub fault_s: f64,
    /// Seconds from the end of the faults until every job had finished.
    pub drain_s: f64,
    /// Distinct jobs inserted (their `n`).
    pub inserted: u64,
    /// Job rows, by state.
    pub states: Vec<(String, i64)>,
    /// Inserted numbers with no job row: lost jobs.
    pub lost: i64,
    /// Jobs finished without any attempt recorded by a worker.
    pub never_run: i64,
    /// Attempts started (runs of `Worker::work`).
    pub attempts: i64,
    /// Jobs whose work started more than once.
    pub started_twice: i64,
    /// Jobs whose work finished more than once.
    pub finished_twice: i64,
    /// Failed attempts recorded on the rows (timeouts of frozen work, mostly).
    pub errored_attempts: i64,
    /// Claims (job, fencing token) whose work ran twice.
    pub claim_run_twice: i64,
    /// Attempts whose job showed no fencing token.
    pub without_token: i64,
    /// Completed jobs whose latest claim had not finished its work when the job was completed:
    /// an older claim's outcome landed.
    pub stale_outcomes: i64,
    /// Late outcomes dropped by the fence, summed over the workers that exited cleanly (a
    /// worker killed later takes its count with it).
    pub superseded: i64,
    /// Work that finished under a claim that was no longer its job's latest: outcomes the fence
    /// had to drop (or that died with their process before they were sent).
    pub stale_work: i64,
    /// Per kill, freeze and soft stop.
    pub faults: Vec<FaultFigures>,
    /// Backends terminated, per sweep (one `TerminateBackends` step).
    pub terminated: Vec<i64>,
    /// Seconds each crash restart took.
    pub restarts_s: Vec<f64>,
    /// Every worker process that was still running at the end, and how it exited on SIGTERM
    /// (`None`: not within the wait, then killed).
    pub exits: Vec<(String, Option<ExitStatus>)>,
    /// Every worker soft-stopped under load: how it exited, and how many seconds it took.
    pub stops: Vec<(String, Option<ExitStatus>, f64)>,
    /// The last lines of every worker's log.
    pub log_tails: Vec<(String, String)>,
    /// The run's recorded trace, replayed through the models' statement functions.
    pub trace: TraceReport,
}

impl Report {
    /// Reads the figures from the database after the run.
    pub(crate) async fn gather(probe: &mut Probe, mut report: Report) -> Result<Report, Error> {
        let rows = probe
            .query(
                "SELECT state::text AS state, count(*) AS n FROM {schema}.pgmill_job_all \
                 GROUP BY 1 ORDER BY 1",
                &[],
            )
            .await?;
        report.states = rows.iter().map(|r| (r.get("state"), r.get("n"))).collect();
        let inserted = i64::try_from(report.inserted).unwrap_or(i64::MAX);
        report.lost = probe
            .count(
                "SELECT count(*) FROM generate_series(0::bigint, $1::bigint - 1) AS g(n) \
                 WHERE NOT EXISTS (SELECT 1 FROM {schema}.pgmill_job_all j \
                 WHERE j.kind = 'fault_job' AND (j.args->>'n')::bigint = g.n)",
                &[&inserted],
            )
            .await?;
        report.never_run = probe
            .count(
                "SELECT count(*) FROM {schema}.pgmill_job_all j WHERE NOT EXISTS \
                 (SELECT 1 FROM {schema}.fault_attempt a WHERE a.job_id = j.id)",
                &[],
            )
            .await?;
        report.attempts = probe
            .count("SELECT count(*) FROM {schema}.fault_attempt", &[])
            .await?;
        report.started_twice = probe
            .count(
                "SELECT count(*) FROM (SELECT job_id FROM {schema}.fault_attempt \
                 GROUP BY job_id HAVING count(*) > 1) AS d",
                &[],
            )
            .await?;
        report.finished_twice = probe
            .count(
                "SELECT count(*) FROM (SELECT job_id FROM {schema}.fault_attempt \
                 WHERE finished_at IS NOT NULL GROUP BY job_id HAVING count(*) > 1) AS d",
                &[],
            )
            .await?;
        report.errored_attempts = probe
            .count(
                "SELECT coalesce(sum(cardinality(errors)), 0)::bigint FROM {schema}.pgmill_job_all",
                &[],
            )
            .await?;
        report.claim_run_twice = probe
            .count(
                "SELECT count(*) FROM (SELECT 1 FROM {schema}.fault_attempt \
                 WHERE claim_token IS NOT NULL \
                 GROUP BY job_id, claim_token HAVING count(*) > 1) AS d",
                &[],
            )
            .await?;
        report.without_token = probe
            .count(
                "SELECT count(*) FROM {schema}.fault_attempt WHERE claim_token IS NULL",
                &[],
            )
            .await?;
        // The completion of a job must come from its latest claim: that claim's work finished
        // (and was recorded) before the job was finalized. An older claim's outcome landing
        // instead shows as a latest claim still working, or never finishing, at finalization.
        report.stale_outcomes = probe
            .count(
                "SELECT count(*) FROM {schema}.pgmill_job_all j
                 CROSS JOIN LATERAL (
                     SELECT a.finished_at FROM {schema}.fault_attempt a
                     WHERE a.job_id = j.id
                     ORDER BY a.attempted_at DESC, a.started_at DESC
                     LIMIT 1
                 ) AS latest
                 WHERE j.state = 'completed'
                     AND (latest.finished_at IS NULL OR latest.finished_at > j.finalized_at)",
                &[],
            )
            .await?;
        report.superseded = probe
            .count(
                "SELECT coalesce(sum(superseded_results), 0)::bigint FROM {schema}.fault_exit",
                &[],
            )
            .await?;
        report.stale_work = probe
            .count(
                "SELECT count(*) FROM {schema}.fault_attempt a
                 WHERE a.finished_at IS NOT NULL
                     AND a.attempted_at < (SELECT max(b.attempted_at)
                         FROM {schema}.fault_attempt b WHERE b.job_id = a.job_id)",
                &[],
            )
            .await?;
        let rows = probe
            .query(
                "SELECT e.kind AS kind, e.client_id AS client_id, e.bounded AS bounded,
                     coalesce(e.leader_id = e.client_id, false) AS was_leader,
                     count(h.job_id) AS held,
                     count(r.first_start) AS rerun,
                     coalesce(extract(epoch FROM min(r.first_start - e.at)), 0)::float8 AS min_s,
                     coalesce(extract(epoch FROM percentile_cont(0.5)
                         WITHIN GROUP (ORDER BY r.first_start - e.at)), 0)::float8 AS median_s,
                     coalesce(extract(epoch FROM max(r.first_start - e.at)), 0)::float8 AS max_s,
                     count(x.first_rescue) AS rescued,
                     coalesce(extract(epoch FROM min(x.first_rescue - e.at)), 0)::float8
                         AS rescue_min_s,
                     coalesce(extract(epoch FROM percentile_cont(0.5)
                         WITHIN GROUP (ORDER BY x.first_rescue - e.at)), 0)::float8
                         AS rescue_median_s,
                     coalesce(extract(epoch FROM max(x.first_rescue - e.at)), 0)::float8
                         AS rescue_max_s,
                     count(*) FILTER (WHERE x.rescues > 1) AS hit_again,
                     coalesce(extract(epoch FROM max(r.first_start - e.at)
                         FILTER (WHERE x.rescues <= 1)), 0)::float8 AS max_once_s,
                     extract(epoch FROM e.at - (SELECT min(at) FROM {schema}.fault_event
                         WHERE kind = 'start'))::float8
                         AS at_s
                 FROM {schema}.fault_event e
                 LEFT JOIN {schema}.fault_held h ON h.event_id = e.id
                 LEFT JOIN LATERAL (
                     SELECT min(a.started_at) AS first_start FROM {schema}.fault_attempt a
                     WHERE a.job_id = h.job_id AND a.attempted_at > e.at
                 ) AS r ON true
                 LEFT JOIN {schema}.pgmill_job_all j ON j.id = h.job_id
                 LEFT JOIN LATERAL (
                     SELECT min((err->>'at')::timestamptz) AS first_rescue,
                         count(*) AS rescues
                     FROM unnest(j.errors) AS err
                     WHERE err->>'error' LIKE 'rescued:%'
                         AND (err->>'at')::timestamptz > e.at
                 ) AS x ON true
                 WHERE e.kind IN ('kill', 'freeze', 'stop')
                 GROUP BY e.id
                 ORDER BY e.id",
                &[],
            )
            .await?;
        report.trace = gather_trace(probe).await?;
        report.faults = rows
            .iter()
            .map(|r| FaultFigures {
                kind: r.get("kind"),
                client_id: r.get("client_id"),
                at_s: r.get("at_s"),
                bounded: r.get("bounded"),
                was_leader: r.get("was_leader"),
                held: r.get("held"),
                rerun: r.get("rerun"),
                delay_s: (r.get("min_s"), r.get("median_s"), r.get("max_s")),
                rescued: r.get("rescued"),
                rescue_s: (
                    r.get("rescue_min_s"),
                    r.get("rescue_median_s"),
                    r.get("rescue_max_s"),
                ),
                hit_again: r.get("hit_again"),
                delay_once_max_s: r.get("max_once_s"),
            })
            .collect();
        Ok(report)
    }

    /// Every guarantee the run broke, in words; empty when it kept them all.
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        let unfinished: Vec<_> = self
            .states
            .iter()
            .filter(|(s, _)| s != "completed")
            .collect();
        if !unfinished.is_empty() {
            v.push(format!("jobs not completed: {unfinished:?}"));
        }
        if self.lost > 0 {
            v.push(format!("{} inserted jobs are gone (lost)", self.lost));
        }
        if self.never_run > 0 {
            v.push(format!(
                "{} jobs finished without their work running",
                self.never_run
            ));
        }
        if self.claim_run_twice > 0 {
            v.push(format!(
                "{} claims (job, fencing token) ran their work twice",
                self.claim_run_twice
            ));
        }
        if self.without_token > 0 {
            v.push(format!(
                "{} attempts saw no fencing token",
                self.without_token
            ));
        }
        if self.stale_outcomes > 0 {
            v.push(format!(
                "{} jobs were completed by an older claim's outcome while a newer claim ran",
                self.stale_outcomes
            ));
        }
        let t = &self.trace;
        for (what, n) in [
            ("claims", t.claims),
            ("outcomes", t.outcomes),
            ("rescues", t.rescues),
            ("terms", t.terms),
        ] {
            if n == 0 {
                v.push(format!(
                    "the trace recorded no {what}: the recorder missed the run"
                ));
            }
        }
        if !t.violations.is_empty() {
            v.push(format!(
                "{} recorded steps are not behaviours the models allow, first: {}",
                t.violations.len(),
                t.violations
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        let bound = RESCUE_BOUND.as_secs_f64();
        for f in self.faults.iter().filter(|f| f.bounded) {
            if f.rescue_s.2 > bound {
                v.push(format!(
                    "the jobs of {} ({} at {:.1} s) were rescued {:.1} s after it, over the {bound} s bound",
                    f.client_id, f.kind, f.at_s, f.rescue_s.2
                ));
            }
            if f.delay_once_max_s > bound {
                v.push(format!(
                    "the jobs of {} ({} at {:.1} s) ran again {:.1} s after it, over the {bound} s bound",
                    f.client_id, f.kind, f.at_s, f.delay_once_max_s
                ));
            }
        }
        if !self.faults.iter().any(|f| f.kind == "kill" && f.rerun > 0) {
            v.push("no kill hit a running job: the rescue bound was not measured".into());
        }
        if !self.terminated.is_empty() && self.terminated.iter().sum::<i64>() == 0 {
            v.push("the terminations found no backend of the workers".into());
        }
        let stops = self.stops.iter().map(|(id, status, _)| (id, status));
        for (id, status) in self.exits.iter().map(|(id, s)| (id, s)).chain(stops) {
            match status {
                Some(s) if s.success() => {}
                Some(s) => v.push(format!("{id} exited with {s} on SIGTERM")),
                None => v.push(format!("{id} did not exit on SIGTERM")),
            }
        }
        v
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "fault scenario {} on {} (seed {}): {:.0} s of faults, drained {:.1} s later",
            self.plan, self.driver, self.seed, self.fault_s, self.drain_s
        )?;
        writeln!(
            f,
            "  jobs: {} inserted, states {:?}, lost {}, never run {}",
            self.inserted, self.states, self.lost, self.never_run
        )?;
        writeln!(
            f,
            "  attempts: {} started; jobs started twice {}, finished twice {}; failed attempts {}",
            self.attempts, self.started_twice, self.finished_twice, self.errored_attempts
        )?;
        writeln!(
            f,
            "  fence: claims run twice {}, attempts without token {}, stale outcomes landed {}; \
             work finished under a superseded claim {}, late outcomes dropped {} (by workers \
             that exited)",
            self.claim_run_twice,
            self.without_token,
            self.stale_outcomes,
            self.stale_work,
            self.superseded
        )?;
        let t = &self.trace;
        writeln!(
            f,
            "  trace replayed through the models: claims {}, outcomes {}, rescues {}, releases {}, \
             re-asserts {}, scheduled {}, cancels {}, retries {}, attempts {}; jobs written {}, \
             moved between tables {}, removed {}; lease terms {} ({} before expiry), renewals {}, \
             resignations {}; steps the models do not allow {}",
            t.claims,
            t.outcomes,
            t.rescues,
            t.releases,
            t.reasserts,
            t.schedules,
            t.cancels,
            t.retries,
            t.attempts,
            t.inserts,
            t.moves,
            t.removals,
            t.terms,
            t.early_takeovers,
            t.renewals,
            t.resignations,
            t.violations.len()
        )?;
        for x in &self.faults {
            writeln!(
                f,
                "  {} {}{} at {:.1} s{}: held {} running; {} rescued after {:.1} / {:.1} / {:.1} s, \
                 {} ran again after {:.1} / {:.1} / {:.1} s (min / median / max); {} hit again by a \
                 later fault, {} finished before the fault took hold",
                x.kind,
                x.client_id,
                if x.was_leader { " (leader)" } else { "" },
                x.at_s,
                if x.bounded {
                    ""
                } else {
                    " (not bounded: a restart or the leader's death follows)"
                },
                x.held,
                x.rescued,
                x.rescue_s.0,
                x.rescue_s.1,
                x.rescue_s.2,
                x.rerun,
                x.delay_s.0,
                x.delay_s.1,
                x.delay_s.2,
                x.hit_again,
                x.held - x.rerun
            )?;
        }
        for (id, status, secs) in &self.stops {
            let how = match status {
                Some(s) if s.success() => "exited cleanly".to_owned(),
                Some(s) => format!("exited with {s}"),
                None => "did not exit".to_owned(),
            };
            writeln!(f, "  soft stop of {id} under load: {how} after {secs:.1} s")?;
        }
        writeln!(f, "  backends terminated per sweep: {:?}", self.terminated)?;
        writeln!(
            f,
            "  crash restarts took: {:?} s",
            self.restarts_s
                .iter()
                .map(|s| (s * 10.0).round() / 10.0)
                .collect::<Vec<_>>()
        )?;
        let clean = self
            .exits
            .iter()
            .filter(|(_, s)| s.is_some_and(|s| s.success()))
            .count();
        writeln!(
            f,
            "  workers at the end: {} of {} exited cleanly on SIGTERM",
            clean,
            self.exits.len()
        )?;
        if !self.violations().is_empty() {
            for (id, tail) in &self.log_tails {
                writeln!(f, "  --- last lines of {id}'s log ---\n{tail}")?;
            }
        }
        Ok(())
    }
}

/// Reads the run's trace and the workers' attempts, and replays them through the models.
async fn gather_trace(probe: &mut Probe) -> Result<TraceReport, Error> {
    const US: &str = "* 1000000)::bigint";
    let sql = format!(
        "SELECT seq, source, job_id, xact, \
         (extract(epoch FROM statement_at) {US} AS statement_at, \
         old_table, old_state, old_attempt, old_max_attempts, old_token, old_owner, \
         (extract(epoch FROM old_attempted_at) {US} AS old_attempted_at, old_kept_in, \
         old_errors, old_last_error, \
         new_table, new_state, new_attempt, new_max_attempts, new_token, new_owner, \
         (extract(epoch FROM new_attempted_at) {US} AS new_attempted_at, new_kept_in, \
         new_errors, new_last_error, \
         (extract(epoch FROM created_at) {US} AS created_at, \
         (extract(epoch FROM at) {US} AS at, \
         old_leader, (extract(epoch FROM old_elected_at) {US} AS old_elected_at, \
         (extract(epoch FROM old_expires_at) {US} AS old_expires_at, \
         new_leader, (extract(epoch FROM new_elected_at) {US} AS new_elected_at, \
         (extract(epoch FROM new_expires_at) {US} AS new_expires_at \
         FROM {{schema}}.fault_trace"
    );
    let rows = probe.query(&sql, &[]).await?;
    let mut events: Vec<Event> = rows.iter().filter_map(trace_event).collect();
    let attempts = probe
        .query(
            "SELECT job_id, claim_token, start_seq, finish_seq FROM {schema}.fault_attempt",
            &[],
        )
        .await?;
    for a in &attempts {
        let job: i64 = a.get("job_id");
        let token: Option<i64> = a.get("claim_token");
        events.push(Event::AttemptStart {
            seq: a.get("start_seq"),
            job,
            token,
        });
        if let Some(seq) = a.get::<_, Option<i64>>("finish_seq") {
            events.push(Event::AttemptFinish { seq, job, token });
        }
    }
    Ok(trace::check(&mut events))
}

fn job_image(r: &Row, side: &str) -> Option<JobImage> {
    let col = |name: &str| format!("{side}_{name}");
    Some(JobImage {
        table: r.get::<_, Option<String>>(col("table").as_str())?,
        state: r.get(col("state").as_str()),
        attempt: r.get(col("attempt").as_str()),
        max_attempts: r.get(col("max_attempts").as_str()),
        token: r.get(col("token").as_str()),
        owner: r.get(col("owner").as_str()),
        attempted_at: r.get(col("attempted_at").as_str()),
        created_at: r.get("created_at"),
        kept_in: r.get(col("kept_in").as_str()),
        errors: r.get::<_, Option<i32>>(col("errors").as_str()).unwrap_or(0),
        last_error: r.get(col("last_error").as_str()),
    })
}

fn lease_image(r: &Row, side: &str) -> Option<LeaseImage> {
    Some(LeaseImage {
        leader: r.get::<_, Option<String>>(format!("{side}_leader").as_str())?,
        elected_at: r.get(format!("{side}_elected_at").as_str()),
        expires_at: r.get(format!("{side}_expires_at").as_str()),
    })
}

fn trace_event(r: &Row) -> Option<Event> {
    let seq: i64 = r.get("seq");
    let source: String = r.get("source");
    if source == "lease" {
        return Some(Event::Lease {
            seq,
            at: r.get("at"),
            old: lease_image(r, "old"),
            new: lease_image(r, "new"),
        });
    }
    let job = r.get("job_id");
    let statement = StatementId {
        xact: r.get("xact"),
        at: r.get("statement_at"),
    };
    match source.as_str() {
        "left" => Some(Event::Left {
            seq,
            job,
            statement,
            old: job_image(r, "old")?,
        }),
        "entered" => Some(Event::Entered {
            seq,
            job,
            statement,
            new: job_image(r, "new")?,
        }),
        _ => Some(Event::Job {
            seq,
            job,
            old: job_image(r, "old")?,
            new: job_image(r, "new")?,
        }),
    }
}
