//! Putting jobs in: the inserter every insert path goes through, and what announces committed
//! jobs to the workers (the debouncer of in-transaction notifications, the commit watcher of
//! transactions whose notification was debounced away, the post-commit notifier of a client's
//! own inserts).

pub(crate) mod commit_watcher;
pub(crate) mod debouncer;
pub(crate) mod inserter;
pub(crate) mod post_commit_notifier;
