-- Inserts one job per element of $1 and returns them. State is decided with the database clock:
-- pending when asked, scheduled when due in the future, available otherwise.
-- With a channel in $2, the statement also notifies it once of each queue in $3 (queues with jobs
-- due now among $1), as job_notify_insert.sql would, so the notifications leave with the insert's
-- own commit instead of taking a statement of their own.
-- Every row also carries the inserting transaction's id (xact_id; see job_insert_plain_one.sql).
-- $1: one JSON object per job with keys queue, kind, args, metadata, priority, max_attempts, tags
--     (a JSON array of strings), pending (boolean), and optionally scheduled_at (RFC 3339) or
--     schedule_in_us (microseconds from now)
-- $2: the insert channel, '<schema>.pgmill_insert', or NULL for no notification
-- $3: the queues to notify
WITH inserted AS (
    INSERT INTO {schema}.pgmill_job AS j
        (state, queue, kind, args, metadata, priority, max_attempts, scheduled_at, tags)
    SELECT
        CASE
            WHEN (p->>'pending')::boolean THEN 'pending'
            WHEN s.at > now() THEN 'scheduled'
            ELSE 'available'
        END::{schema}.pgmill_job_state,
        p->>'queue',
        p->>'kind',
        p->'args',
        p->'metadata',
        (p->>'priority')::smallint,
        (p->>'max_attempts')::smallint,
        s.at,
        ARRAY(SELECT jsonb_array_elements_text(p->'tags'))
    FROM unnest($1::jsonb[]) WITH ORDINALITY AS u(p, ord)
    CROSS JOIN LATERAL (
        SELECT coalesce(
            (p->>'scheduled_at')::timestamptz,
            now() + coalesce((p->>'schedule_in_us')::bigint, 0) * interval '1 microsecond'
        ) AS at
    ) AS s
    ORDER BY u.ord
    RETURNING j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
        j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
        j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
        j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
        j.claim_token AS claim_token
)
SELECT inserted.*, pg_current_xact_id()::text::bigint AS xact_id
FROM inserted
CROSS JOIN (
    SELECT count(pg_notify($2::text, q)) AS num_notified
    FROM unnest($3::text[]) AS q
    WHERE $2::text IS NOT NULL
) AS n
