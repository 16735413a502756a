-- Inserts one job: job_insert_many.sql for a single job, with typed parameters instead of a JSON
-- document to take apart. State is decided with the database clock: pending when asked,
-- scheduled when due in the future, available otherwise. Returns only the columns the database
-- decides (id, state, created_at, scheduled_at); every other column of the new row is what was
-- bound here or the column's default, which the client fills in (InsertedRow::into_job).
-- With a channel in $11 (given only for a job due now: not pending, no scheduled_at and no
-- schedule_in), the statement also notifies it of the queue, as job_notify_insert.sql would, so
-- the notification leaves with the insert's own commit (see job_insert_plain_one_notify.sql).
-- Also returns the inserting transaction's id (xact_id), as job_insert_plain_one.sql does.
-- $1: queue
-- $2: kind
-- $3: args, as JSON text (written straight from the job's value; the server parses it as it
--     parses a jsonb value)
-- $4: metadata
-- $5: priority
-- $6: max_attempts
-- $7: tags
-- $8: pending
-- $9: scheduled_at, or NULL
-- $10: microseconds from now, or NULL (neither $9 nor $10 set means now)
-- $11: the insert channel, '<schema>.pgmill_insert', or NULL for no notification
INSERT INTO {schema}.pgmill_job AS j
    (state, queue, kind, args, metadata, priority, max_attempts, scheduled_at, tags)
SELECT
    CASE
        WHEN $8::boolean THEN 'pending'
        WHEN s.at > now() THEN 'scheduled'
        ELSE 'available'
    END::{schema}.pgmill_job_state,
    $1::text,
    $2::text,
    $3::text::jsonb,
    $4::jsonb,
    $5::smallint,
    $6::smallint,
    s.at,
    $7::text[]
FROM (
    SELECT coalesce(
        $9::timestamptz,
        now() + coalesce($10::bigint, 0) * interval '1 microsecond'
    ) AS at
) AS s
CROSS JOIN (SELECT CASE WHEN $11::text IS NOT NULL THEN pg_notify($11::text, $1::text) END) AS n
RETURNING j.id AS id, j.state::text AS state, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, pg_current_xact_id()::text::bigint AS xact_id
