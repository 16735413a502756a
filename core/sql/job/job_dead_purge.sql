-- Deletes the next batch of dead-letter jobs matching a filter, in id order after a cursor. The
-- caller has refused a call with no filter that did not ask for every job. Returns the batch's
-- size and last id (the next cursor) and how many were deleted.
-- $1: queues, or NULL
-- $2: kinds, or NULL
-- $3: ids, or NULL
-- $4: only ids greater than this (the cursor; 0 for the first batch)
-- $5: batch size
WITH page AS (
    SELECT x.id
    FROM {schema}.pgmill_job_dead AS x
    WHERE ($1::text[] IS NULL OR x.queue = ANY($1::text[]))
        AND ($2::text[] IS NULL OR x.kind = ANY($2::text[]))
        AND ($3::bigint[] IS NULL OR x.id = ANY($3::bigint[]))
        AND x.id > $4::bigint
    ORDER BY x.id
    LIMIT $5::bigint
    FOR UPDATE SKIP LOCKED
),
purged AS (
    DELETE FROM {schema}.pgmill_job_dead AS x USING page AS p WHERE x.id = p.id RETURNING x.id
)
SELECT (SELECT count(*) FROM page) AS num_matched,
    (SELECT max(p.id) FROM page AS p) AS last_id,
    (SELECT count(*) FROM purged) AS num_purged
