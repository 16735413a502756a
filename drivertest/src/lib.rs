//! The conformance suite every pgmill driver passes.
//!
//! A driver crate joins the suite in its `tests/conformance.rs`, in two parts:
//!
//! - a [`Harness`] on a unit struct: how to build its driver, and how to open a transaction of
//!   the application's own connection type, in which [`run_host_work!`] runs the suite's
//!   [`HostWork`] through the driver's extension trait;
//! - one line, `conformance_suite!(Harness)`, that expands to a `#[tokio::test]` per case.
//!
//! ```text
//! struct Harness;
//! impl pgmill_drivertest::Harness for Harness { /* connect, run_host_transaction */ }
//! pgmill_drivertest::conformance_suite!(Harness);
//! ```
//!
//! That is 28 lines for sqlx and tokio-postgres, and 68 for diesel, whose host transaction is a
//! blocking closure with an error type of its own. Cases that only one driver can have (diesel's
//! blocking transactions and cancelled `interact` calls, deadpool's pooled objects) follow in the
//! same file.
//!
//! Every driver runs the same cases under the same names (`module::behaviour`), each against
//! real Postgres in a fresh schema: [`testdb`] (the `pgmill-testdb` crate) provides
//! `DATABASE_URL` or a throwaway cluster. This crate's own tests check the suite's list against
//! the `pub async fn`s in `src/cases/`, so a case written is a case every driver runs.

pub mod cases;
mod context;
pub mod doomed;
mod harness;
pub mod log_capture;
pub mod metrics_probe;
mod pooler;
pub mod prepared;
pub mod scripted;

pub use context::{TestContext, migrated};
pub use harness::{Harness, HostDone, HostWork, harness_error};
pub use pgmill_testdb as testdb;
pub use pooler::{PollOnly, pgbouncer_url};

#[doc(hidden)]
pub mod __private {
    pub use pgmill::driver::{BlockingExecutor, Executor};
    pub use tokio;
}

/// Expands to one `#[tokio::test]` per conformance case, grouped in modules named after the
/// case modules, all run against the driver of `$harness`.
#[macro_export]
macro_rules! conformance_suite {
    ($harness:ty) => {
        $crate::__conformance_cases! { [$crate::__conformance_modules] $harness }
    };
}

/// Expands to one `#[tokio::test]` per case of the pooler run: the engine (inserts in the
/// application's transaction, work, retries, stops, leadership, maintenance, pause and resume)
/// and the driver primitives it rests on, on `$harness`, whose [`Harness::url`] is a
/// transaction-mode PgBouncer ([`pgbouncer_url`]).
///
/// Cases that kill backends by name, restart the server or read session state are left out: a
/// pooler's server connections are not the client's.
#[macro_export]
macro_rules! pooler_suite {
    ($harness:ty) => {
        $crate::__pooler_cases! { [$crate::__conformance_modules] $harness }
    };
}

/// Expands to the cases of the pooler run that need no listener: for a driver built through the
/// pooler without a direct listener connection, so that the client works in poll-only mode.
#[macro_export]
macro_rules! pooler_poll_only_suite {
    ($harness:ty) => {
        $crate::__pooler_poll_only_cases! { [$crate::__conformance_modules] $harness }
    };
}

/// The cases of [`pooler_suite!`], in the list format of `__conformance_cases!`.
#[doc(hidden)]
#[macro_export]
macro_rules! __pooler_cases {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! { $($args)*;
            client_work {
                retry_then_success, attempts_exhausted_are_discarded_with_every_error,
                snooze_runs_again_without_using_an_attempt, timeout_drops_the_work_and_is_recorded,
                completion_inside_the_worker_transaction,
            }
            storage {
                finished_jobs_leave_the_job_table,
                dead_letter_redrive_keeps_the_job_and_reports_conflicts,
                expired_history_slots_are_truncated_and_younger_ones_kept,
            }
            client_insert {
                rolled_back_host_insert_never_runs, committed_host_insert_runs_once,
                insert_many_returns_rows_in_input_order,
                bulk_insert_of_ten_thousand_jobs_runs_each_once,
                single_insert_keeps_every_option, single_insert_returns_the_row_as_stored,
                enqueue_needs_only_an_executor,
            }
            queue_names {
                pausing_an_unknown_queue_is_an_error_unless_asked_to_create_it,
                queue_name_check_applies_under_running_clients_and_keeps_bad_rows,
            }
            client_stop {
                ten_thousand_jobs_over_three_queues_run_exactly_once,
                two_clients_share_work_without_running_a_job_twice,
                hard_stop_interrupts_and_gives_back_the_attempt,
            }
            client_notify {
                insert_notification_wakes_an_idle_producer,
                rolled_back_insert_sends_no_notification,
                a_quiet_insert_carries_its_own_notification,
            }
            client_control {
                pause_stops_fetching_and_resume_restarts,
                cancel_a_running_job_from_another_process,
            }
            leadership { a_lone_client_leads_and_resigns_on_stop, resignation_hands_over_at_once }
            maintenance {
                live_jobs_are_rescued_only_past_the_hard_deadline,
                cleaner_deletes_finalized_jobs_past_retention,
            }
            job_scheduler { due_jobs_become_available_and_keep_their_time }
            periodic { each_tick_is_enqueued_once_with_several_clients }
            transaction {
                commit_makes_rows_visible_to_others, rollback_discards_rows,
                savepoint_rollback_keeps_outer_work, error_then_rollback_leaves_connection_usable,
            }
            host_transaction { committed_statements_are_visible, rolled_back_statements_are_gone }
            copy_in {
                ten_thousand_rows_are_copied_or_inserted_by_fallback,
                copy_in_a_transaction_commits_or_rolls_back_with_it,
            }
            migrator { up_creates_every_table, two_migrators_racing_apply_each_version_once }
            error_sqlstate { unique_violation_keeps_its_sqlstate, aborted_transaction_keeps_its_sqlstate }
            value_round_trip { jsonb_round_trips_nested_values, fifty_parameters_bind_in_order }
        }
    };
}

/// The cases of [`pooler_poll_only_suite!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __pooler_poll_only_cases {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! { $($args)*;
            client_work { retry_then_success }
            client_insert { committed_host_insert_runs_once }
            client_notify { poll_only_mode_works_by_polling }
            client_control {
                pause_stops_fetching_and_resume_restarts, pause_all_and_start_paused,
                cancel_a_running_job_from_another_process,
            }
            leadership { a_lone_client_leads_and_resigns_on_stop }
        }
    };
}

/// The list of cases, module by module, handed to the macro `[$callback]` after `$args;`.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! { $($args)*;
            queue_names {
                pausing_an_unknown_queue_is_an_error_unless_asked_to_create_it,
                queue_name_check_applies_under_running_clients_and_keeps_bad_rows,
            }
            client_work {
                retry_then_success, anyhow_and_eyre_errors_are_recorded_with_their_chain,
                attempts_exhausted_are_discarded_with_every_error,
                snooze_runs_again_without_using_an_attempt, long_snooze_schedules_the_job,
                cancel_from_the_worker_cancels_the_job, discard_from_the_worker_discards_the_job,
                timeout_drops_the_work_and_is_recorded, panic_is_caught_and_recorded,
                blocking_worker_past_its_timeout_is_warned_once_and_recorded,
                undecodable_args_are_discarded_at_once_keeping_the_args,
                unknown_kind_is_never_claimed_and_is_reported,
                jobs_run_by_priority_then_schedule_then_id, events_report_outcomes_with_timings,
                job_inserted_behind_the_claim_position_is_not_left_for_last,
                completion_inside_the_worker_transaction, a_claimed_row_is_the_row_as_stored,
                claims_keep_one_generic_plan,
            }
            client_insert {
                rolled_back_host_insert_never_runs, committed_host_insert_runs_once,
                insert_many_returns_rows_in_input_order,
                bulk_insert_of_ten_thousand_jobs_runs_each_once, bulk_insert_keeps_each_jobs_options,
                bulk_insert_of_alike_jobs_keeps_their_kinds_args_and_options,
                single_insert_keeps_every_option,
                single_insert_returns_the_row_as_stored,
                scheduled_job_waits_for_its_time, pending_job_is_never_fetched,
                unknown_kind_is_refused_unless_allowed, invalid_insert_options_are_typed_errors,
                enqueue_needs_only_an_executor,
            }
            client_unique {
                concurrent_inserts_of_one_unique_job_create_exactly_one,
                many_and_bulk_inserts_skip_duplicates_of_each_other_and_of_existing_jobs,
                period_boundary_separates_unique_jobs,
                finished_jobs_block_duplicates_only_in_their_unique_states,
                unique_keys_compare_only_what_they_are_asked_to,
                retrying_a_finished_unique_job_whose_key_is_taken_is_a_conflict,
            }
            client_stop {
                ten_thousand_jobs_over_three_queues_run_exactly_once,
                soft_stop_waits_for_running_jobs, hard_stop_interrupts_and_gives_back_the_attempt,
                two_clients_share_work_without_running_a_job_twice,
                superseded_attempt_reporting_late_changes_nothing,
                superseded_attempt_reporting_late_success_changes_nothing,
                stop_start_cycles_are_safe,
                soft_stop_stops_fetching_on_every_queue_at_once,
                hard_stop_works_during_a_soft_stop,
                stop_with_grace_interrupts_only_after_the_grace,
            }
            client_health {
                health_follows_the_client_from_start_to_stop,
                health_of_poll_only_and_insert_only_clients,
                readiness_fails_on_each_missing_part,
            }
            client_tracing {
                worker_lines_carry_the_job_span_fields,
                failed_attempts_warn_with_the_error_and_what_happens_next,
                trace_context_survives_a_retry, engine_steps_run_in_debug_spans_with_batch_sizes,
            }
            client_middleware {
                middleware_wraps_attempts_in_registration_order_and_sees_outcomes,
                kind_middleware_runs_only_for_its_kind, middleware_can_short_circuit_the_worker,
                a_panicking_middleware_fails_the_attempt_and_the_client_goes_on,
                insert_hooks_run_on_every_insert_path,
            }
            client_metrics {
                every_metric_is_emitted_with_its_labels,
                queue_gauges_follow_depth_and_reset_when_leadership_ends,
                served_and_listener_gauges_follow_the_cluster,
            }
            client_notify {
                insert_notification_wakes_an_idle_producer,
                rolled_back_insert_sends_no_notification,
                ten_thousand_inserts_in_three_queues_send_three_notifications,
                notifications_are_debounced_and_skip_future_jobs,
                losing_the_listener_mid_run_recovers, poll_only_mode_works_by_polling,
                client_committed_inserts_are_each_announced,
                a_burst_of_client_committed_inserts_is_announced_in_few_notifications,
                a_quiet_insert_carries_its_own_notification,
                a_burst_of_held_back_inserts_is_announced_in_few_looks,
                an_application_transactions_single_insert_carries_its_notification,
                an_application_transactions_insert_many_carries_its_notifications,
                a_quiet_insert_many_carries_its_notifications,
                rolled_back_insert_leaves_the_next_commit_its_wake_up,
                interleaved_transactions_each_get_a_wake_up,
                a_rolled_back_held_back_insert_is_looked_at_no_more,
                the_commit_watchers_look_tells_open_transactions_from_ended_ones,
            }
            client_control {
                queues_are_registered_and_listed_with_counts,
                queue_counts_cover_live_states_and_leave_finished_jobs_out,
                pause_stops_fetching_and_resume_restarts, pause_all_and_start_paused,
                running_jobs_finish_while_paused, cancel_a_running_job_from_another_process,
                cancelled_job_that_errors_ends_cancelled, pending_jobs_run_only_when_released,
            }
            producer_prefetch {
                soft_stop_gives_buffered_jobs_back_without_using_an_attempt,
                cancel_reaches_a_buffered_job, pause_gives_buffered_jobs_back,
                buffered_jobs_time_out_from_their_start,
                a_dead_client_leaves_its_buffered_jobs_rescuable, overlapped_claims_hand_out_each_job_once,
            }
            job_scheduler {
                due_jobs_become_available_and_keep_their_time,
                batches_are_bounded_and_repeated, client_runs_a_job_scheduled_ahead,
            }
            leadership {
                a_lone_client_leads_and_resigns_on_stop, resignation_hands_over_at_once,
                five_clients_never_overlap_and_a_dead_leader_is_replaced,
                a_cut_off_leader_steps_down_before_its_lease_ends,
            }
            rescue {
                a_killed_leaders_jobs_are_rescued_before_its_lease_ends,
                rescued_and_released_jobs_keep_their_place_in_the_queue,
                rescue_meets_its_bound_with_defaults_when_the_leader_dies,
                a_fetch_that_timed_out_after_its_claim_committed_is_reconciled,
                an_expired_client_missed_by_a_pass_is_rescued_at_the_next,
                a_client_claims_nothing_before_its_row_exists,
            }
            maintenance {
                jobs_of_a_killed_worker_are_rescued,
                live_jobs_are_rescued_only_past_the_hard_deadline,
                missing_client_rows_get_a_grace_period,
                cleaner_deletes_finalized_jobs_past_retention,
                cleaner_reads_only_the_jobs_it_deletes, queue_cleaner_removes_stale_queues,
                rows_of_long_dead_clients_are_deleted_once_their_jobs_are_rescued,
                failing_services_recover_and_the_client_keeps_working,
                analyzer_replans_statements_once_the_table_outgrew_its_statistics,
                a_large_insert_analyzes_the_table_it_outgrew,
                the_database_owner_analyzes_a_table_it_does_not_own,
            }
            periodic {
                each_tick_is_enqueued_once_with_several_clients,
                missed_ticks_are_caught_up_once_or_skipped, run_on_start_and_pause_resume,
                statistics_count_failures_and_reset_the_streak,
                concurrent_completions_update_statistics_exactly,
                a_zoned_schedule_ticks_once_at_its_zone_s_instant,
                leaders_of_version_9_leave_zoned_schedules_alone,
                missed_ticks_are_caught_up_each_up_to_the_bound,
            }
            failover {
                crash_restart_while_jobs_run_loses_nothing,
                read_only_server_makes_the_client_reopen_connections,
                promoted_replica_that_missed_acknowledged_commits_loses_only_those,
            }
            fencing {
                late_outcome_after_the_attempt_was_given_back_and_claimed_again_is_dropped,
                late_outcome_beside_its_jobs_new_claim_in_one_batch_is_dropped,
                lost_claim_is_reasserted_with_its_token_and_its_outcome_lands,
                claim_that_ended_on_this_database_is_not_reasserted,
                a_lost_jobs_id_handed_out_again_is_not_taken_over_by_its_claim,
                every_claim_has_a_token_of_its_own, attempted_by_keeps_the_last_ten_clients,
                version_1_claims_survive_the_upgrade_and_are_fenced_from_version_2_outcomes,
            }
            client_admin {
                get_returns_the_job_or_none, list_filters_and_paginates_with_a_cursor,
                list_of_a_rare_state_or_queue_reads_only_its_jobs,
                queue_depth_reads_no_finished_job,
                cancel_only_cancels_jobs_not_running,
                retry_makes_a_finished_job_available_again,
                delete_removes_only_jobs_not_running,
            }
            client_bulk {
                bulk_retry_counts_first_and_pages_through_matching_jobs,
                bulk_cancel_cancels_waiting_jobs_and_tells_running_ones,
                bulk_delete_leaves_running_jobs, client_list_shows_queues_liveness_and_the_leader,
                count_and_bulk_of_a_rare_state_or_queue_read_only_its_jobs,
                bulk_passes_over_a_job_that_stopped_matching_while_it_waited,
                unserved_queues_are_listed_with_their_counts_and_flagged_in_the_overview,
            }
            client_browse {
                list_newest_pages_backwards_through_every_filter,
                activity_counts_recent_outcomes_per_queue,
            }
            queue_stats {
                a_burst_of_outcomes_is_counted_once_in_its_buckets,
                leader_changes_leave_no_bucket_missed_or_counted_twice,
                rows_past_the_retention_are_trimmed_in_batches,
                the_series_bins_the_rollup_and_reads_nothing_else,
                the_rollup_reads_none_of_the_history,
            }
            value_round_trip {
                bool_round_trips, int2_round_trips, int4_round_trips, int8_round_trips,
                float8_round_trips_including_extremes, text_round_trips_non_ascii_and_empty,
                bytea_round_trips, jsonb_round_trips_nested_values,
                jsonb_of_one_megabyte_round_trips, timestamptz_round_trips_to_the_microsecond,
                interval_round_trips, text_array_round_trips_with_special_characters,
                int8_array_round_trips, jsonb_array_round_trips,
                timestamptz_array_round_trips, empty_arrays_round_trip,
                null_of_every_type_round_trips, fifty_parameters_bind_in_order,
            }
            row_decode {
                columns_keep_their_names_and_order, zero_rows_decode_as_empty,
                five_thousand_rows_decode, integer_widths_are_kept,
                varchar_name_and_bpchar_decode_as_text, json_decodes_as_jsonb,
                json_array_decodes_as_jsonb_array,
                interval_with_days_decodes, unsupported_type_is_a_decode_error,
                query_scalar_of_no_rows_is_an_error, held_rows_are_read_later_elsewhere_and_twice,
                rows_read_in_place_read_each_type_and_refuse_others,
            }
            error_sqlstate {
                unique_violation_keeps_its_sqlstate, syntax_error_keeps_its_sqlstate,
                undefined_table_keeps_its_sqlstate, check_violation_keeps_its_sqlstate,
                division_by_zero_keeps_its_sqlstate, read_only_transaction_keeps_its_sqlstate,
                aborted_transaction_keeps_its_sqlstate,
                terminated_backend_is_connection_lost_and_next_call_succeeds,
                statement_in_flight_on_a_terminated_backend_is_connection_lost,
                discarded_connection_is_never_reused,
            }
            transaction {
                commit_makes_rows_visible_to_others, rollback_discards_rows,
                uncommitted_rows_are_invisible_to_others, drop_without_commit_rolls_back,
                savepoint_rollback_keeps_outer_work,
                released_savepoint_is_discarded_by_outer_rollback,
                execute_returns_affected_rows, execute_script_runs_several_statements,
                error_then_rollback_leaves_connection_usable,
            }
            host_transaction {
                committed_statements_are_visible, rolled_back_statements_are_gone,
                rows_are_returned_inside_host_transaction,
            }
            copy_in {
                ten_thousand_rows_are_copied_or_inserted_by_fallback,
                copied_rows_keep_special_characters, streamed_chunks_are_copied_in_one_statement,
                malformed_row_fails_the_copy_and_keeps_the_connection,
                copy_in_a_transaction_commits_or_rolls_back_with_it,
                dropped_streamed_copy_copies_nothing,
            }
            listener {
                notification_is_delivered_on_a_schema_scoped_channel,
                non_ascii_payload_is_delivered, unlisten_stops_delivery,
                two_schemas_do_not_see_each_other,
                rolled_back_notification_is_not_delivered,
                notifications_arrive_in_order,
                reconnects_after_backend_terminated_and_reports_it,
                reconnect_is_reported_even_when_next_event_is_cancelled_midway,
            }
            shared_schema {
                two_applications_share_a_queue_each_running_its_own_kinds,
                a_leader_rescues_the_other_application_s_jobs,
            }
            retention {
                retention_rules_are_set_listed_and_cleared,
                queue_rules_delete_ahead_of_the_ring_and_hold_it_back,
                the_rule_for_every_queue_replaces_the_configuration,
                dead_letters_follow_their_queue_s_rule,
                finished_jobs_in_the_job_table_follow_the_rules,
                a_running_leader_applies_a_new_rule,
            }
            storage {
                finished_jobs_leave_the_job_table,
                a_unique_job_keeping_its_key_stays_in_the_job_table,
                retry_brings_a_finished_job_back_under_its_id,
                dead_letter_redrive_keeps_the_job_and_reports_conflicts,
                expired_history_slots_are_truncated_and_younger_ones_kept,
                the_vacuum_horizon_names_who_holds_it,
                version_9_applies_under_running_clients_and_reverts_losing_nothing,
            }
            migrator {
                up_creates_every_table, up_again_is_a_no_op,
                down_to_zero_removes_everything, up_down_up_again_works,
                every_down_restores_the_version_before,
                up_to_a_target_then_the_rest, status_reports_applied_and_pending,
                unknown_target_is_an_error, two_migrators_racing_apply_each_version_once,
                mixed_case_schema_is_quoted, finalized_at_check_is_enforced,
                row_rules_refuse_each_bad_row_by_name,
            }
        }
    };
}

/// One module of `#[tokio::test]`s per case module, each running its case on `$harness`.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_modules {
    ($harness:ty; $($module:ident { $($case:ident),* $(,)? })*) => {
        $(
            mod $module {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[$crate::__private::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $case() {
                        $crate::cases::$module::$case::<$harness>().await
                    }
                )*
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::fs;
    use std::path::Path;

    /// `module::case` for every case in the list `conformance_suite!` expands.
    macro_rules! listed_cases {
        (; $($module:ident { $($case:ident),* $(,)? })*) => {
            &[$($(concat!(stringify!($module), "::", stringify!($case)),)*)*]
        };
    }

    const LISTED: &[&str] = crate::__conformance_cases! { [listed_cases] };

    /// `module::case` for every `pub async fn` in `src/cases/<module>.rs`.
    fn written_cases() -> BTreeSet<String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cases");
        let mut cases = BTreeSet::new();
        for entry in fs::read_dir(&dir).expect("src/cases is readable") {
            let path = entry.expect("directory entry").path();
            let module = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("file name");
            if module == "mod" || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = fs::read_to_string(&path).expect("case file is readable");
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("pub async fn ") {
                    let name = rest
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or_default();
                    cases.insert(format!("{module}::{name}"));
                }
            }
        }
        cases
    }

    #[test]
    fn the_suite_runs_every_case_written_and_each_once() {
        let listed: BTreeSet<String> = LISTED.iter().map(|c| (*c).to_owned()).collect();
        assert_eq!(listed.len(), LISTED.len(), "a case is listed twice");
        let written = written_cases();
        let unlisted: Vec<_> = written.difference(&listed).collect();
        let unwritten: Vec<_> = listed.difference(&written).collect();
        assert!(
            unlisted.is_empty() && unwritten.is_empty(),
            "conformance_suite! in src/lib.rs is out of date: add {unlisted:?}, remove {unwritten:?}"
        );
    }
}
