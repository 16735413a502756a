-- Applies one operator action to the next batch of jobs matching a filter, in id order after a
-- cursor, locking the batch first: retry (available now, one more attempt if they used them up),
-- cancel (at once when not running; a running job is marked, as job_cancel.sql does, and its
-- client told by the caller) or delete. The caller narrows the states to those the action applies
-- to. A unique job whose key another job holds now (a duplicate inserted after it finished) is
-- not retried: it would be a second job under the key. Returns the batch's size and last id (the
-- next cursor), how many rows changed, the running jobs marked for cancellation with their queues,
-- and the queues that got available jobs. The batch's candidates are found state by state, the
-- state written out (as job_count.sql does), so a batch of a rare state reads only its jobs
-- however many finished jobs the table keeps; they are locked by id with the filter checked
-- again, so a job that changed meanwhile and no longer matches is passed over. A new job state
-- needs its own arm here.
-- $1: states (text), or NULL
-- $2: queues, or NULL
-- $3: kinds, or NULL
-- $4: ids, or NULL
-- $5: only ids greater than this (the cursor; 0 for the first batch)
-- $6: batch size
-- $7: the action: retry, cancel or delete
-- $8: the error recorded with a cancellation (a JSON object; its "at" is set to now())
WITH candidate AS (
    (SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'available'
        AND ($1::text[] IS NULL OR 'available' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'scheduled'
        AND ($1::text[] IS NULL OR 'scheduled' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'pending'
        AND ($1::text[] IS NULL OR 'pending' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'running'
        AND ($1::text[] IS NULL OR 'running' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'retryable'
        AND ($1::text[] IS NULL OR 'retryable' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'completed'
        AND ($1::text[] IS NULL OR 'completed' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'cancelled'
        AND ($1::text[] IS NULL OR 'cancelled' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'discarded'
        AND ($1::text[] IS NULL OR 'discarded' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
        AND j.id > $5::bigint
    ORDER BY j.id
    LIMIT $6::bigint)
),
page AS (
    SELECT c.id AS id FROM candidate AS c ORDER BY c.id LIMIT $6::bigint
),
batch AS (
    SELECT j.id AS id
    FROM {schema}.pgmill_job AS j
    JOIN page AS p ON p.id = j.id
    WHERE ($1::text[] IS NULL OR j.state::text = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    ORDER BY j.id
    FOR UPDATE OF j
),
retried AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = 'available',
        scheduled_at = now(),
        finalized_at = NULL,
        max_attempts = CASE
            WHEN j.attempt >= j.max_attempts THEN j.attempt + 1
            ELSE j.max_attempts
        END
    FROM batch
    WHERE $7::text = 'retry' AND j.id = batch.id AND j.state <> 'running'
        AND NOT EXISTS (
            SELECT 1
            FROM {schema}.pgmill_job AS o
            WHERE j.unique_key IS NOT NULL
                AND j.unique_states IS NOT NULL
                AND o.unique_key = j.unique_key
                AND o.id <> j.id
                AND o.unique_states IS NOT NULL
                AND {schema}.pgmill_job_state_in_bitmask(o.unique_states, o.state)
        )
    RETURNING j.id AS id, j.queue AS queue
),
cancelled AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = CASE WHEN j.state = 'running' THEN j.state ELSE 'cancelled' END,
        finalized_at = CASE WHEN j.state = 'running' THEN NULL ELSE now() END,
        errors = CASE
            WHEN j.state = 'running' THEN j.errors
            ELSE array_append(j.errors, $8::jsonb || jsonb_build_object('at', now()))
        END,
        metadata = CASE
            WHEN j.state = 'running'
                THEN j.metadata || jsonb_build_object('cancel_attempted_at', now())
            ELSE j.metadata
        END
    FROM batch
    WHERE $7::text = 'cancel' AND j.id = batch.id
        AND j.state IN ('available', 'scheduled', 'pending', 'retryable', 'running')
    RETURNING j.id AS id, j.state::text AS state, j.queue AS queue
),
deleted AS (
    DELETE FROM {schema}.pgmill_job AS j
    USING batch
    WHERE $7::text = 'delete' AND j.id = batch.id AND j.state <> 'running'
    RETURNING j.id AS id
)
SELECT (SELECT count(*) FROM page) AS num_matched,
    (SELECT max(p.id) FROM page AS p) AS last_id,
    (SELECT count(*) FROM retried) + (SELECT count(*) FROM cancelled)
        + (SELECT count(*) FROM deleted) AS num_changed,
    coalesce((SELECT array_agg(c.id ORDER BY c.id) FROM cancelled AS c
        WHERE c.state = 'running'), '{}') AS running_ids,
    coalesce((SELECT array_agg(c.queue ORDER BY c.id) FROM cancelled AS c
        WHERE c.state = 'running'), '{}') AS running_queues,
    coalesce((SELECT array_agg(DISTINCT r.queue) FROM retried AS r), '{}') AS available_queues
