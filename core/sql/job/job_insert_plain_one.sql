-- Inserts one job due now with no metadata and no tags: job_insert_one.sql's lean form for the
-- common case. Every other column takes its default (state available, metadata, tags, and
-- created_at and scheduled_at both now()), so the server decides nothing and parses no JSON or
-- array beyond the args. Returns what job_insert_one.sql returns: the id, the state (available, as
-- a constant), and the two times the defaults gave.
-- $1: queue
-- $2: kind
-- $3: args
-- $4: priority
-- $5: max_attempts
INSERT INTO {schema}.pgmill_job AS j (queue, kind, args, priority, max_attempts)
VALUES ($1::text, $2::text, $3::jsonb, $4::smallint, $5::smallint)
RETURNING j.id AS id, 'available'::text AS state, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at
