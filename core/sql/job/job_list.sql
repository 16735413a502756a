-- A page of jobs in id order after a cursor, filtered; a NULL filter matches everything.
-- Without a kind or id filter it walks the (state, queue, id) index, as job_list_newest.sql does
-- newest first: the (state, queue) pairs that hold jobs are found by skipping through it, each
-- pair gives its oldest ids after the cursor, and only the page's rows are read, so a page of a
-- rare state or queue costs the same however many finished jobs the table keeps. (One scan in id
-- order with the state compared as text read every row of the table to list a state that has
-- none.) With ids it reads those ids; with kinds alone (no index has
-- kinds) it walks ids in order instead. The planner picks the index walk from the table's
-- statistics: on statistics taken before most of the table's rows changed state (until
-- autovacuum's next ANALYZE) it may walk ids in order instead, as before.
-- $1: states (text), or NULL
-- $2: queues, or NULL
-- $3: kinds, or NULL
-- $4: ids, or NULL
-- $5: return only ids greater than this (the cursor; 0 for the first page)
-- $6: page size
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
    SELECT oldest.id AS id
    FROM pair AS p
    CROSS JOIN LATERAL (
        SELECT j.id AS id
        FROM {schema}.pgmill_job_all AS j
        WHERE j.state = p.state
            AND j.queue = p.queue
            AND j.id > $5::bigint
        ORDER BY j.id
        LIMIT $6::bigint
    ) AS oldest
    WHERE $3::text[] IS NULL AND $4::bigint[] IS NULL
    ORDER BY oldest.id
    LIMIT $6::bigint
),
by_filter AS (
    SELECT j.id AS id
    FROM {schema}.pgmill_job_all AS j
    WHERE ($3::text[] IS NOT NULL OR $4::bigint[] IS NOT NULL)
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($1::text[] IS NULL OR j.state::text = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint
),
page AS (
    SELECT b.id AS id FROM by_pair AS b
    UNION ALL
    SELECT b.id AS id FROM by_filter AS b
)
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM page
JOIN {schema}.pgmill_job_all AS j ON j.id = page.id
ORDER BY j.id
