//! Working a queue: the claim-run-record pipeline. A producer per queue claims jobs into its
//! buffer, a slot pool hands them to the executor, the executor runs one attempt and hands its
//! outcome to the completer, which records outcomes in batches fenced on their claim.

pub(crate) mod claim_tokens;
pub(crate) mod completer;
pub(crate) mod host_completion;
pub(crate) mod in_flight;
pub(crate) mod job_executor;
pub(crate) mod producer;
pub(crate) mod queue_handle;
pub(crate) mod slot_pool;
pub(crate) mod timeout_overrun;
