//! The notification topics the engine's statements send on. A topic is scoped to its schema by
//! [`Schema::channel`](crate::Schema); the notifier listens on all three.

/// Topic of insert notifications; the payload is the queue name.
pub(crate) const TOPIC_INSERT: &str = "pgmill_insert";
/// Topic of control messages (pause, resume, cancel), JSON payloads.
pub(crate) const TOPIC_CONTROL: &str = "pgmill_control";
/// Topic of leadership changes.
pub(crate) const TOPIC_LEADERSHIP: &str = "pgmill_leadership";
