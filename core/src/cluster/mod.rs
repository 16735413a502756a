//! A client among others: the notifier (one `LISTEN` connection), the heartbeat (the client's
//! liveness row, and failover detection), the elector (the leader lease), and the health they
//! report.

pub(crate) mod elector;
pub(crate) mod health;
pub(crate) mod heartbeat;
pub(crate) mod notifier;
