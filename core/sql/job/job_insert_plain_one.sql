-- Inserts one job due now with no metadata and no tags: job_insert_one.sql's lean form for the
-- common case. Every other column takes its default (state available, metadata, tags, and
-- created_at and scheduled_at both now()), so the server decides nothing and parses no JSON or
-- array beyond the args. Returns what job_insert_one.sql returns: the id, the state (available, as
-- a constant), and the two times the defaults gave.
-- With a channel in $6, the statement also notifies it of the queue, as job_notify_insert.sql
-- would: the notification then leaves with the insert's own commit (a client committing its own
-- insert after a quiet moment, so that listeners hear of the job without a second round trip).
-- The subquery runs once: its volatile call keeps it from being flattened or dropped.
-- Also returns the inserting transaction's id (xact_id), which the commit watcher asks the
-- database about when it is to announce the job after that transaction commits.
-- $1: queue
-- $2: kind
-- $3: args, as JSON text (written straight from the job's value; the server parses it as it
--     parses a jsonb value)
-- $4: priority
-- $5: max_attempts
-- $6: the insert channel, '<schema>.pgmill_insert', or NULL for no notification
INSERT INTO {schema}.pgmill_job AS j (queue, kind, args, priority, max_attempts)
SELECT $1::text, $2::text, $3::text::jsonb, $4::smallint, $5::smallint
FROM (SELECT CASE WHEN $6::text IS NOT NULL THEN pg_notify($6::text, $1::text) END) AS n
RETURNING j.id AS id, 'available'::text AS state, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, pg_current_xact_id()::text::bigint AS xact_id
