-- A page of jobs newest first (id descending) below a keyset cursor, filtered, with args and the
-- last error cut to a preview: the dashboard's job list. Without a kind filter it walks the
-- (state, queue, id) index: the (state, queue) pairs that hold jobs are found by skipping through
-- it, each pair gives its newest ids below the cursor, and only the page's rows are read, so a page
-- costs about the same at any table size and any rarity of state or queue. With a kind filter (no
-- index has kinds) it walks ids newest first instead: cheap for common kinds, a longer walk for
-- rare ones. A NULL filter matches everything.
-- $1: states (text), or NULL
-- $2: queues, or NULL
-- $3: kinds, or NULL
-- $4: return only ids below this (the cursor), or NULL for the first page
-- $5: page size
-- $6: most characters of args and of the last error to return
WITH RECURSIVE wanted_state AS (
    SELECT s AS state
    FROM unnest(enum_range(NULL::{schema}.pgmill_job_state)) AS s
    WHERE $1::text[] IS NULL OR s::text = ANY($1::text[])
),
found_queue AS (
    SELECT w.state AS state,
        (SELECT min(j.queue) FROM {schema}.pgmill_job_all AS j WHERE j.state = w.state) AS queue
    FROM wanted_state AS w
    WHERE $2::text[] IS NULL
    UNION ALL
    SELECT f.state AS state,
        (SELECT min(j.queue) FROM {schema}.pgmill_job_all AS j
         WHERE j.state = f.state AND j.queue > f.queue) AS queue
    FROM found_queue AS f
    WHERE f.queue IS NOT NULL
),
pair AS (
    SELECT f.state AS state, f.queue AS queue FROM found_queue AS f WHERE f.queue IS NOT NULL
    UNION
    SELECT w.state AS state, q.queue AS queue
    FROM wanted_state AS w CROSS JOIN unnest($2::text[]) AS q(queue)
),
by_pair AS (
    SELECT newest.id AS id
    FROM pair AS p
    CROSS JOIN LATERAL (
        SELECT j.id AS id
        FROM {schema}.pgmill_job_all AS j
        WHERE j.state = p.state
            AND j.queue = p.queue
            AND j.id < coalesce($4::bigint, 9223372036854775807)
        ORDER BY j.id DESC
        LIMIT $5::bigint
    ) AS newest
    WHERE $3::text[] IS NULL
    ORDER BY newest.id DESC
    LIMIT $5::bigint
),
by_id AS (
    SELECT j.id AS id
    FROM {schema}.pgmill_job_all AS j
    WHERE $3::text[] IS NOT NULL
        AND j.kind = ANY($3::text[])
        AND ($1::text[] IS NULL OR j.state::text = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND j.id < coalesce($4::bigint, 9223372036854775807)
    ORDER BY j.id DESC
    LIMIT $5::bigint
),
page AS (
    SELECT b.id AS id FROM by_pair AS b
    UNION ALL
    SELECT b.id AS id FROM by_id AS b
)
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind,
    left(a.text, $6::integer) AS args_preview, length(a.text)::bigint AS args_chars,
    j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.created_at AS created_at, j.scheduled_at AS scheduled_at, j.attempted_at AS attempted_at,
    j.finalized_at AS finalized_at, coalesce(cardinality(j.errors), 0)::bigint AS error_count,
    left(j.errors[array_upper(j.errors, 1)] ->> 'error', $6::integer) AS last_error,
    j.tags AS tags
FROM page
JOIN {schema}.pgmill_job_all AS j ON j.id = page.id
CROSS JOIN LATERAL (SELECT j.args::text AS text) AS a
ORDER BY j.id DESC
