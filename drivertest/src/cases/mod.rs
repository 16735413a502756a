//! The conformance cases, one module per area, each case generic over a [`Harness`](crate::Harness).
//!
//! Cases panic on failure, like tests; [`conformance_suite!`](crate::conformance_suite) wraps each
//! in a `#[tokio::test]`.

pub mod client_admin;
pub mod client_browse;
pub mod client_bulk;
pub mod client_control;
pub mod client_health;
pub mod client_insert;
pub mod client_metrics;
pub mod client_middleware;
pub mod client_notify;
pub mod client_stop;
pub mod client_tracing;
pub mod client_unique;
pub mod client_work;
pub mod copy_in;
pub mod error_sqlstate;
pub mod failover;
pub mod fencing;
pub mod host_transaction;
pub mod job_scheduler;
pub mod leadership;
pub mod listener;
pub mod maintenance;
pub mod migrator;
pub mod periodic;
pub mod producer_prefetch;
pub mod queue_names;
pub mod queue_stats;
pub mod rescue;
pub mod retention;
pub mod row_decode;
pub mod shared_schema;
pub mod storage;
pub mod transaction;
pub mod value_round_trip;
