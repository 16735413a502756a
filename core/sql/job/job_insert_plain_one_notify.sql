-- Inserts one job due now with no metadata and no tags, as job_insert_plain_one.sql does, and
-- notifies the insert channel of its queue, as job_notify_insert.sql would: the notification
-- then leaves with the insert's own commit (a client committing its own insert after a quiet
-- moment, so that listeners hear of the job without a second round trip; or the insert in an
-- application's transaction that is to notify its queue).
-- The subquery runs once: its volatile call keeps it from being flattened or dropped.
-- Returns what job_insert_plain_one.sql returns.
-- $1: queue
-- $2: kind
-- $3: args, as JSON text
-- $4: priority
-- $5: max_attempts
-- $6: the insert channel, '<schema>.pgmill_insert'
INSERT INTO {schema}.pgmill_job AS j (queue, kind, args, priority, max_attempts)
SELECT $1::text, $2::text, $3::text::jsonb, $4::smallint, $5::smallint
FROM (SELECT pg_notify($6::text, $1::text)) AS n
RETURNING j.id AS id, j.created_at AS created_at, pg_current_xact_id()::text::bigint AS xact_id
