-- Inserts one job per element of $1 and returns them. State is decided with the database clock:
-- pending when asked, scheduled when due in the future, available otherwise.
-- $1: one JSON object per job with keys queue, kind, args, metadata, priority, max_attempts, tags
--     (a JSON array of strings), pending (boolean), and optionally scheduled_at (RFC 3339) or
--     schedule_in_us (microseconds from now)
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
