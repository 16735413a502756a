-- Inserts one job per element of $1, some of them unique, and returns for each element, in input
-- order, the job it inserted or, for a unique job that has a duplicate, the existing job (locked
-- and returned as the unique index found it, even when committed after this statement's
-- snapshot). State and schedule are decided as in job_insert_many.sql. A unique job's key is the
-- SHA-256 of its unique_key text followed, when it has a unique period, by the number of the
-- period its scheduled time falls in, by the database clock. Duplicates within $1 are inserted
-- once: the first one, in input order; the others get its row.
-- Every row also carries the inserting transaction's id (xact_id; see job_insert_plain_one.sql).
-- $1: one JSON object per job with the keys of job_insert_many.sql and, for a unique job,
--     unique_key (text), unique_states (a bit(8) as text) and optionally unique_period_us
WITH input AS (
    SELECT u.ord AS ord, u.p AS p, s.at AS at,
        CASE WHEN u.p ? 'unique_key' THEN sha256(convert_to(
            (u.p->>'unique_key') || coalesce(
                '&period=' || floor(
                    extract(epoch FROM s.at) * 1000000 / (u.p->>'unique_period_us')::bigint
                )::bigint::text,
                ''),
            'UTF8'))
        END AS unique_key
    FROM unnest($1::jsonb[]) WITH ORDINALITY AS u(p, ord)
    CROSS JOIN LATERAL (
        SELECT coalesce(
            (u.p->>'scheduled_at')::timestamptz,
            now() + coalesce((u.p->>'schedule_in_us')::bigint, 0) * interval '1 microsecond'
        ) AS at
    ) AS s
),
first_of_key AS (
    SELECT DISTINCT ON (coalesce(i.unique_key, int8send(i.ord))) i.ord AS ord, i.p AS p,
        i.at AS at, i.unique_key AS unique_key
    FROM input AS i
    ORDER BY coalesce(i.unique_key, int8send(i.ord)), i.ord
),
inserted AS (
    INSERT INTO {schema}.pgmill_job AS j
        (state, queue, kind, args, metadata, priority, max_attempts, scheduled_at, tags,
         unique_key, unique_states)
    SELECT
        CASE
            WHEN (f.p->>'pending')::boolean THEN 'pending'
            WHEN f.at > now() THEN 'scheduled'
            ELSE 'available'
        END::{schema}.pgmill_job_state,
        f.p->>'queue',
        f.p->>'kind',
        f.p->'args',
        f.p->'metadata',
        (f.p->>'priority')::smallint,
        (f.p->>'max_attempts')::smallint,
        f.at,
        ARRAY(SELECT jsonb_array_elements_text(f.p->'tags')),
        f.unique_key,
        (f.p->>'unique_states')::bit(8)
    FROM first_of_key AS f
    ORDER BY f.ord
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL
        AND unique_states IS NOT NULL
        AND {schema}.pgmill_job_state_in_bitmask(unique_states, state)
    -- A no-op update, so the existing job is locked and returned; its new row version has a
    -- non-zero xmax, a fresh insert's has zero.
    DO UPDATE SET kind = EXCLUDED.kind
    RETURNING j.*, j.xmax::text <> '0' AS existed
),
-- Jobs without a key are matched to their input by order: their ids follow input order.
plain_input AS (
    SELECT i.ord AS ord, row_number() OVER (ORDER BY i.ord) AS rank
    FROM input AS i
    WHERE i.unique_key IS NULL
),
plain_inserted AS (
    SELECT ins.id AS id, row_number() OVER (ORDER BY ins.id) AS rank
    FROM inserted AS ins
    WHERE ins.unique_key IS NULL
),
matched AS (
    SELECT i.ord AS ord, ins.id AS id, ins.existed OR i.ord <> f.ord AS skipped
    FROM input AS i
    JOIN first_of_key AS f ON f.unique_key = i.unique_key
    JOIN inserted AS ins ON ins.unique_key = i.unique_key
    UNION ALL
    SELECT pi.ord AS ord, pin.id AS id, false AS skipped
    FROM plain_input AS pi
    JOIN plain_inserted AS pin ON pin.rank = pi.rank
)
SELECT m.ord AS ord, m.skipped AS skipped_as_duplicate,
    j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token, pg_current_xact_id()::text::bigint AS xact_id
FROM matched AS m
JOIN inserted AS j ON j.id = m.id
ORDER BY m.ord
