//! The notification topics the engine's statements send on. A topic is scoped to its schema by
//! [`Schema::channel`](crate::Schema); the notifier listens on every one.

/// Topic of insert notifications; the payload is the queue name.
pub(crate) const TOPIC_INSERT: &str = "pgmill_insert";
/// Topic of control messages (pause, resume, cancel), JSON payloads.
pub(crate) const TOPIC_CONTROL: &str = "pgmill_control";
/// Topic of leadership changes.
pub(crate) const TOPIC_LEADERSHIP: &str = "pgmill_leadership";
/// Topic of jobs made available behind where producers claim from (a rescue, a due retry, a
/// released claim): the payload is the earliest such job's position in its queue,
/// `queue<TAB>priority<TAB>scheduled_at in microseconds since the epoch<TAB>id`.
pub(crate) const TOPIC_REWIND: &str = "pgmill_rewind";
