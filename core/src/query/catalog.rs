//! The catalog of engine queries: one [`Query`] per SQL file under `core/sql/`, loaded with
//! `include_str!`. [`Schema`](crate::Schema) renders every template into its schema once; the
//! functions in `query/` bind their parameters.

use std::sync::OnceLock;

use crate::query::sql_text::compact;

macro_rules! queries {
    ($($variant:ident => $file:literal,)*) => {
        /// One SQL statement of `core/sql/`, by file.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Query {
            $($variant,)*
        }

        impl Query {
            /// Every query, in declaration order (the order of [`Query`]'s discriminants).
            pub(crate) const ALL: &'static [Query] = &[$(Query::$variant,)*];

            /// The SQL template, with the schema marker still in it.
            pub(crate) fn template(self) -> &'static str {
                match self {
                    $(Query::$variant => include_str!(concat!("../../sql/", $file)),)*
                }
            }

            /// The file the template is in, under `core/sql/`.
            fn file(self) -> &'static str {
                match self {
                    $(Query::$variant => $file,)*
                }
            }
        }
    };
}

queries! {
    ClientDelete => "client/client_delete.sql",
    ClientDeleteExpired => "client/client_delete_expired.sql",
    ClientHeartbeat => "client/client_heartbeat.sql",
    ClientList => "client/client_list.sql",
    ClientNextTimeout => "client/client_next_timeout.sql",
    ClientRegister => "client/client_register.sql",
    JobDeleteFinalized => "job/job_delete_finalized.sql",
    JobGetRunningClients => "job/job_get_running_clients.sql",
    JobReassertRunning => "job/job_reassert_running.sql",
    JobReleaseOrphaned => "job/job_release_orphaned.sql",
    JobRescue => "job/job_rescue.sql",
    LeaderAttemptElect => "leader/leader_attempt_elect.sql",
    LeaderAttemptReelect => "leader/leader_attempt_reelect.sql",
    LeaderGet => "leader/leader_get.sql",
    LeaderGetLive => "leader/leader_get_live.sql",
    LeaderResign => "leader/leader_resign.sql",
    PeriodicAdvance => "periodic/periodic_advance.sql",
    LeaderDbNow => "leader/leader_db_now.sql",
    PeriodicGetDue => "periodic/periodic_get_due.sql",
    PeriodicList => "periodic/periodic_list.sql",
    PeriodicSetPaused => "periodic/periodic_set_paused.sql",
    PeriodicUpsert => "periodic/periodic_upsert.sql",
    QueueDeleteExpired => "queue/queue_delete_expired.sql",
    JobCancel => "job/job_cancel.sql",
    JobBulk => "job/job_bulk.sql",
    JobCopyAvailable => "job/job_copy_available.sql",
    JobCount => "job/job_count.sql",
    JobCopyAvailablePlain => "job/job_copy_available_plain.sql",
    JobDelete => "job/job_delete.sql",
    JobGetAvailable => "job/job_get_available.sql",
    JobGetAvailableAfter => "job/job_get_available_after.sql",
    JobGetAvailableBetween => "job/job_get_available_between.sql",
    JobGetCancelRequested => "job/job_get_cancel_requested.sql",
    JobGetById => "job/job_get_by_id.sql",
    JobInsertMany => "job/job_insert_many.sql",
    JobInsertOne => "job/job_insert_one.sql",
    JobInsertPlainAlike => "job/job_insert_plain_alike.sql",
    JobInsertPlainMany => "job/job_insert_plain_many.sql",
    JobInsertPlainOne => "job/job_insert_plain_one.sql",
    JobInsertPlainOneNotify => "job/job_insert_plain_one_notify.sql",
    JobInsertUniqueMany => "job/job_insert_unique_many.sql",
    JobList => "job/job_list.sql",
    JobListNewest => "job/job_list_newest.sql",
    JobCountRecentByQueue => "job/job_count_recent_by_queue.sql",
    JobNotifyCommitted => "job/job_notify_committed.sql",
    JobNotifyInsert => "job/job_notify_insert.sql",
    JobReleasePending => "job/job_release_pending.sql",
    JobRetry => "job/job_retry.sql",
    JobSchedule => "job/job_schedule.sql",
    JobSetCompletedMany => "job/job_set_completed_many.sql",
    JobSetCompletedManyCount => "job/job_set_completed_many_count.sql",
    JobSetStateIfRunningMany => "job/job_set_state_if_running_many.sql",
    JobTableGrowth => "job/job_table_growth.sql",
    JobAnalyze => "job/job_analyze.sql",
    QueueControlNotify => "queue/queue_control_notify.sql",
    QueueList => "queue/queue_list.sql",
    QueueOverview => "queue/queue_overview.sql",
    QueueUnknownKinds => "queue/queue_unknown_kinds.sql",
    QueuePause => "queue/queue_pause.sql",
    QueueResume => "queue/queue_resume.sql",
    QueueUpsert => "queue/queue_upsert.sql",
    QueueStatJitOff => "stat/queue_stat_jit_off.sql",
    QueueStatPending => "stat/queue_stat_pending.sql",
    QueueStatQueues => "stat/queue_stat_queues.sql",
    QueueStatRollup => "stat/queue_stat_rollup.sql",
    QueueStatSeries => "stat/queue_stat_series.sql",
    QueueStatTrim => "stat/queue_stat_trim.sql",
    MigrationDelete => "migration/migration_delete.sql",
    MigrationGetAll => "migration/migration_get_all.sql",
    MigrationInsert => "migration/migration_insert.sql",
    MigrationLock => "migration/migration_lock.sql",
    MigrationTableExists => "migration/migration_table_exists.sql",
    JobDeadList => "job/job_dead_list.sql",
    JobDeadRedrive => "job/job_dead_redrive.sql",
    JobDeadPurge => "job/job_dead_purge.sql",
    JobDeadDeleteExpired => "job/job_dead_delete_expired.sql",
    JobDeadCountByQueue => "job/job_dead_count_by_queue.sql",
    StorageDoneTruncateExpired => "storage/storage_done_truncate_expired.sql",
    StorageSetDoneSlotSeconds => "storage/storage_set_done_slot_seconds.sql",
    StorageHorizon => "storage/storage_horizon.sql",
    JobDoneDeleteExpired => "job/job_done_delete_expired.sql",
    JobDeadDeleteExpiredByQueue => "job/job_dead_delete_expired_by_queue.sql",
    RetentionList => "retention/retention_list.sql",
    RetentionSet => "retention/retention_set.sql",
    RetentionDelete => "retention/retention_delete.sql",
}

impl Query {
    /// The query's name: its file's, without the area and the extension.
    pub(crate) fn name(self) -> &'static str {
        let file = self.file();
        let base = file.rsplit('/').next().unwrap_or(file);
        base.strip_suffix(".sql").unwrap_or(base)
    }

    /// The template as sent ([`compact`]: without its comments and indentation), compacted once
    /// per process.
    pub(crate) fn compacted(self) -> &'static str {
        static COMPACTED: OnceLock<Box<[String]>> = OnceLock::new();
        let all = COMPACTED.get_or_init(|| {
            Query::ALL
                .iter()
                .map(|q| compact(q.name(), q.template()))
                .collect()
        });
        &all[self as usize]
    }

    /// The parameters the query takes: the highest `$n` in its text (an upper bound, should
    /// quoted text ever hold one), counted once per process.
    pub(crate) fn param_count(self) -> usize {
        static COUNTS: OnceLock<Box<[usize]>> = OnceLock::new();
        let all = COUNTS.get_or_init(|| {
            Query::ALL
                .iter()
                .map(|q| highest_parameter(q.compacted()))
                .collect()
        });
        all[self as usize]
    }
}

/// The highest `$n` in `sql`, 0 for none.
fn highest_parameter(sql: &str) -> usize {
    let bytes = sql.as_bytes();
    let mut highest = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        let digits = bytes[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if let Ok(n) = sql[i + 1..i + 1 + digits].parse::<usize>() {
            highest = highest.max(n);
        }
        i += 1 + digits;
    }
    highest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discriminants_follow_declaration_order() {
        for (i, q) in Query::ALL.iter().enumerate() {
            assert_eq!(*q as usize, i);
        }
    }

    #[test]
    fn every_sql_file_is_in_the_catalog_and_documents_its_parameters() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
        let mut files = Vec::new();
        for area in std::fs::read_dir(&root).unwrap() {
            for f in std::fs::read_dir(area.unwrap().path()).unwrap() {
                files.push(f.unwrap().path());
            }
        }
        assert_eq!(files.len(), Query::ALL.len(), "files: {files:?}");
        for q in Query::ALL {
            let sql = q.template();
            for n in 1..=20 {
                let placeholder = format!("${n}");
                let used = sql.match_indices(&placeholder).any(|(i, _)| {
                    !sql[i + placeholder.len()..].starts_with(|c: char| c.is_ascii_digit())
                });
                if used {
                    assert!(
                        sql.contains(&format!("-- {placeholder}:")),
                        "{q:?} does not document {placeholder}"
                    );
                }
            }
        }
    }

    /// The completion run for a count only is the one returning rows without its `RETURNING`:
    /// two files, so each is prepared as sent, kept in step here.
    #[test]
    fn the_counting_completion_is_the_returning_one_without_its_rows() {
        let body = |q: Query| {
            compact("", q.template())
                .split_once('\n')
                .unwrap()
                .1
                .to_owned()
        };
        let counting = body(Query::JobSetCompletedManyCount);
        let returning = body(Query::JobSetCompletedMany);
        let rest = returning
            .strip_prefix(counting.as_str())
            .unwrap_or_else(|| panic!("{returning:?} does not start with {counting:?}"));
        assert!(rest.trim_start().starts_with("RETURNING "), "{rest:?}");
    }

    #[test]
    fn a_query_takes_as_many_parameters_as_its_file_documents() {
        for q in Query::ALL {
            let documented = (1..=40)
                .take_while(|n| q.template().contains(&format!("-- ${n}:")))
                .count();
            assert_eq!(q.param_count(), documented, "{q:?}");
        }
        assert_eq!(highest_parameter("SELECT $2, $12, $$x$$, $1"), 12);
        assert_eq!(highest_parameter("SELECT 1 $"), 0);
    }

    /// `job_count.sql` and `job_bulk.sql` find their jobs state by state, the state written out
    /// in each arm so the planner sees how many jobs it holds: every job state has exactly one
    /// arm on the job table (or the view of every job), and the arms differ in nothing but their
    /// state; `job_bulk.sql` also has one arm per finished state on that state's own table.
    #[test]
    fn the_state_by_state_statements_have_one_arm_per_job_state() {
        use crate::job::JobState;
        let finished = [
            (
                Query::JobBulk,
                "WHERE d.state = '",
                &["cancelled", "completed"][..],
            ),
            (Query::JobBulk, "WHERE x.state = '", &["discarded"][..]),
        ];
        for (q, marker, expected) in finished {
            let mut states: Vec<&str> = q
                .template()
                .split(marker)
                .skip(1)
                .map(|arm| arm.split_once('\'').unwrap().0)
                .collect();
            states.sort_unstable();
            assert_eq!(states, expected, "{q:?}: {marker}");
        }
        for q in [Query::JobCount, Query::JobBulk] {
            let sql = q.template();
            let marker = "WHERE j.state = '";
            let arms: Vec<(String, String)> = sql
                .split(marker)
                .skip(1)
                .map(|arm| {
                    let (state, rest) = arm.split_once('\'').unwrap();
                    let body = rest.split("UNION ALL").next().unwrap();
                    let body = body.split("\n)").next().unwrap();
                    (state.to_owned(), body.trim_end().replace(state, "<state>"))
                })
                .collect();
            let mut states: Vec<&str> = arms.iter().map(|(s, _)| s.as_str()).collect();
            states.sort_unstable();
            let mut expected: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
            expected.sort_unstable();
            assert_eq!(states, expected, "{q:?}: one arm per job state");
            for (state, body) in &arms {
                assert!(
                    body.contains("'<state>' = ANY($1::text[])"),
                    "{q:?}: the {state} arm does not filter on its own state"
                );
                assert_eq!(body, &arms[0].1, "{q:?}: the {state} arm differs");
            }
        }
    }
}
