-- Claims up to $2 due available jobs of one queue by advisory lock (the advisory-lock claim mode),
-- writing nothing: walks the fetch index in priority, schedule, id order after the position
-- ($4, $5, $6), one row at a time (LIMIT 1 per step), and takes each row's session-level
-- pg_try_advisory_lock on its key until $2 are locked; returns exactly the rows it locked, in fetch order
-- of the walk. Runs on the client's locker session, which holds the locks until the outcomes are
-- recorded. It leaves out the ids this session already holds: a session's advisory locks are
-- re-entrant, so its own pg_try_advisory_lock on a held id would succeed again.
-- The rows' state was read from this statement's snapshot, taken before the locks: read them
-- again with job_advisory_get_locked before running them.
-- A job's lock key is its id with the hash of the schema's name in the high 32 bits (XOR): one
-- key per job within a schema, and jobs of two schemas in one database (ids below 2^32) never
-- share a key.
-- $1: queue
-- $2: how many jobs at most
-- $3: ids of the jobs this session already holds
-- $4: priority of the position (the last job claimed, or before every job)
-- $5: scheduled_at of the position
-- $6: id of the position
-- $7: the schema's name (the lock keys' high bits)
WITH RECURSIVE walk AS (
    SELECT (t.j).id AS id, (t.j).priority AS priority, (t.j).scheduled_at AS scheduled_at,
        l.locked AS locked, $2::bigint - l.locked::int AS remaining
    FROM (
        SELECT j FROM {schema}.pgmill_job AS j
        WHERE j.state = 'available' AND j.queue = $1::text AND j.scheduled_at <= now()
            AND NOT j.id = ANY($3::bigint[])
            AND (j.priority, j.scheduled_at, j.id) > ($4::smallint, $5::timestamptz, $6::bigint)
        ORDER BY j.priority, j.scheduled_at, j.id
        LIMIT 1
    ) AS t
    CROSS JOIN LATERAL (
        SELECT pg_try_advisory_lock((t.j).id # (hashtext($7::text)::bigint << 32)) AS locked
    ) AS l
    UNION ALL (
        SELECT (t.j).id, (t.j).priority, (t.j).scheduled_at, l.locked, t.remaining - l.locked::int
        FROM (
            SELECT walk.remaining, (
                SELECT j FROM {schema}.pgmill_job AS j
                WHERE j.state = 'available' AND j.queue = $1::text AND j.scheduled_at <= now()
                    AND NOT j.id = ANY($3::bigint[])
                    AND (j.priority, j.scheduled_at, j.id)
                        > (walk.priority, walk.scheduled_at, walk.id)
                ORDER BY j.priority, j.scheduled_at, j.id
                LIMIT 1
            ) AS j
            FROM walk
            WHERE walk.id IS NOT NULL AND walk.remaining > 0
            LIMIT 1
        ) AS t
        CROSS JOIN LATERAL (
        SELECT pg_try_advisory_lock((t.j).id # (hashtext($7::text)::bigint << 32)) AS locked
    ) AS l
    )
)
SELECT id AS id FROM walk WHERE locked
