//! Every engine query: the catalog of SQL files under `core/sql/`, and one function per query,
//! generic over any [`Executor`](crate::driver::Executor), named after its file.
//!
//! This module is the bottom of the engine: it imports only the driver seam, the schema, errors
//! and plain types (the job model and the operator API's types in [`admin`](crate::admin)); the
//! components above it build statements here and run them.

pub(crate) mod catalog;
mod client;
mod job;
mod job_bulk;
mod job_claim;
mod job_complete;
mod job_dead;
mod job_insert;
mod job_summary;
mod leader;
mod migration;
mod periodic;
mod queue;
mod queue_activity;
mod queue_stat;
mod retention;
pub(crate) mod sql_text;
mod storage;
pub(crate) mod topic;

pub(crate) use client::{
    client_delete, client_delete_expired, client_heartbeat, client_list, client_next_timeout,
    client_register,
};
pub(crate) use job::{
    ClientIdRow, ExpiredRow, IdRow, QueueCountRow, RescuedRow, TableGrowthRow, job_analyze,
    job_cancel, job_delete, job_delete_finalized, job_done_delete_expired, job_get_by_id,
    job_get_cancel_requested, job_get_running_clients, job_list, job_list_page,
    job_release_pending, job_rescue, job_retry, job_schedule, job_table_growth,
};
pub(crate) use job_bulk::{JobBulkRow, job_bulk, job_count};
pub(crate) use job_claim::{
    FetchPosition, HeldClaim, claimed_jobs, claimed_position, job_get_available,
    job_reassert_running, job_release_orphaned,
};
pub(crate) use job_complete::{
    CompletedRow, SetStateParams, SetStateResult, job_set_completed_many,
    job_set_state_if_running_many,
};
pub(crate) use job_dead::{
    DeadDepthRow, PurgeRow, RedriveRow, job_dead_count_by_queue, job_dead_delete_expired,
    job_dead_delete_expired_by_queue, job_dead_list, job_dead_list_page, job_dead_purge,
    job_dead_redrive,
};
pub(crate) use job_insert::{
    CopyShape, InProgressRow, InsertedRow, WithXact, job_copy_available, job_insert_many,
    job_insert_one, job_insert_plain_many, job_insert_unique_many, job_notify_committed,
    job_notify_insert,
};
pub(crate) use job_summary::{job_list_newest, job_list_newest_page};
pub(crate) use leader::{
    ElectionRow, LeaderIdRow, leader_attempt_elect, leader_attempt_reelect, leader_db_now,
    leader_get, leader_get_live, leader_resign,
};
pub(crate) use migration::{
    migration_delete, migration_get_all, migration_insert, migration_lock, migration_table_exists,
};
pub(crate) use periodic::{
    DuePeriodic, periodic_advance, periodic_get_due, periodic_list, periodic_set_paused,
    periodic_upsert,
};
pub(crate) use queue::{
    QueueName, QueueUpsertRow, queue_control_notify, queue_delete_expired, queue_list,
    queue_overview, queue_pause, queue_resume, queue_unknown_kinds, queue_upsert,
};
pub(crate) use queue_activity::job_count_recent_by_queue;
pub(crate) use queue_stat::{
    QueueStatPendingRow, QueueStatRollupRow, QueueStatSeriesRow, queue_stat_jit_off,
    queue_stat_pending, queue_stat_queues, queue_stat_rollup, queue_stat_series, queue_stat_trim,
};
pub(crate) use retention::{retention_delete, retention_list, retention_set};
pub(crate) use storage::{
    SlotRow, storage_done_truncate_expired, storage_horizon, storage_set_done_slot_seconds,
};

/// A duration as the microseconds core's SQL takes for intervals (saturating).
fn micros(d: chrono::TimeDelta) -> i64 {
    d.num_microseconds().unwrap_or(i64::MAX)
}
