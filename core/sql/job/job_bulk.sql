-- Applies one operator action to the next batch of jobs matching a filter, in id order after a
-- cursor, locking the batch first, wherever its jobs are (the job table, the history, the
-- dead-letter queue): retry (available now, one more attempt if they used them up; a finished job
-- moves back into the job table under its own id), cancel (at once when not running, and the job
-- leaves for the history unless its unique key is kept taken when cancelled; a running job is
-- marked, as job_cancel.sql does, and its client told by the caller) or delete. The caller narrows
-- the states to those the action applies to. A unique job whose key another job holds now (a
-- duplicate inserted after it finished) is not retried: it would be a second job under the key.
-- Returns the batch's size and last id (the next cursor), how many rows changed, the running jobs
-- marked for cancellation with their queues, and the queues that got available jobs. The batch's
-- candidates are found state by state and table by table (a finished state in the job table and
-- in its own table: the history for completed and cancelled, the dead-letter queue for
-- discarded), the state written out (as job_count.sql does), so a batch of a rare state reads
-- only its jobs however many finished jobs are kept; they are locked by id in their table with
-- the filter checked again, so a job that changed or moved meanwhile and no longer matches is
-- passed over. A new job state needs its own arm here.
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
    UNION ALL
    (SELECT d.id AS id
    FROM {schema}.pgmill_job_done AS d
    WHERE d.state = 'completed'
        AND ($1::text[] IS NULL OR 'completed' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR d.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR d.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR d.id = ANY($4::bigint[]))
        AND d.id > $5::bigint
    ORDER BY d.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT d.id AS id
    FROM {schema}.pgmill_job_done AS d
    WHERE d.state = 'cancelled'
        AND ($1::text[] IS NULL OR 'cancelled' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR d.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR d.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR d.id = ANY($4::bigint[]))
        AND d.id > $5::bigint
    ORDER BY d.id
    LIMIT $6::bigint)
    UNION ALL
    (SELECT x.id AS id
    FROM {schema}.pgmill_job_dead AS x
    WHERE x.state = 'discarded'
        AND ($1::text[] IS NULL OR 'discarded' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR x.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR x.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR x.id = ANY($4::bigint[]))
        AND x.id > $5::bigint
    ORDER BY x.id
    LIMIT $6::bigint)
),
page AS (
    SELECT c.id AS id FROM candidate AS c ORDER BY c.id LIMIT $6::bigint
),
batch AS (
    SELECT x.*,
        x.state <> 'running' AND NOT (x.unique_key IS NOT NULL AND x.unique_states IS NOT NULL
            AND {schema}.pgmill_job_state_in_bitmask(x.unique_states, 'cancelled'))
            AS cancel_leaves
    FROM {schema}.pgmill_job AS x
    JOIN page AS p ON p.id = x.id
    WHERE ($1::text[] IS NULL OR x.state::text = ANY($1::text[]))
        AND ($2::text[] IS NULL OR x.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR x.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR x.id = ANY($4::bigint[]))
    ORDER BY x.id
    FOR UPDATE OF x
),
batch_done AS (
    SELECT x.id, x.state, x.queue, x.kind, x.args, x.metadata, x.priority, x.attempt, x.max_attempts, x.attempted_at, x.attempted_by, x.created_at, x.scheduled_at, x.finalized_at, x.errors, x.tags, x.unique_key, x.unique_states
    FROM {schema}.pgmill_job_done AS x
    JOIN page AS p ON p.id = x.id
    WHERE ($1::text[] IS NULL OR x.state::text = ANY($1::text[]))
        AND ($2::text[] IS NULL OR x.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR x.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR x.id = ANY($4::bigint[]))
    FOR UPDATE OF x
),
batch_dead AS (
    SELECT x.id, x.state, x.queue, x.kind, x.args, x.metadata, x.priority, x.attempt, x.max_attempts, x.attempted_at, x.attempted_by, x.created_at, x.scheduled_at, x.finalized_at, x.errors, x.tags, x.unique_key, x.unique_states
    FROM {schema}.pgmill_job_dead AS x
    JOIN page AS p ON p.id = x.id
    WHERE ($1::text[] IS NULL OR x.state::text = ANY($1::text[]))
        AND ($2::text[] IS NULL OR x.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR x.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR x.id = ANY($4::bigint[]))
    FOR UPDATE OF x
),
finished AS (
    SELECT * FROM batch_done
    UNION ALL
    SELECT * FROM batch_dead
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
brought_back AS (
    INSERT INTO {schema}.pgmill_job (id, state, queue, kind, args, metadata, priority, attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at, errors, tags, unique_key, unique_states)
    OVERRIDING SYSTEM VALUE
    SELECT f.id, 'available', f.queue, f.kind, f.args, f.metadata, f.priority, f.attempt,
        CASE WHEN f.attempt >= f.max_attempts THEN f.attempt + 1 ELSE f.max_attempts END,
        f.attempted_at, f.attempted_by, f.created_at, now(), NULL, f.errors, f.tags,
        f.unique_key, f.unique_states
    FROM finished AS f
    WHERE $7::text = 'retry'
    ON CONFLICT DO NOTHING
    RETURNING id AS id, queue AS queue
),
left_done AS (
    DELETE FROM {schema}.pgmill_job_done AS d
    USING batch_done AS b
    WHERE d.id = b.id
        AND (($7::text = 'retry' AND b.id IN (SELECT r.id FROM brought_back AS r))
            OR $7::text = 'delete')
    RETURNING d.id AS id
),
left_dead AS (
    DELETE FROM {schema}.pgmill_job_dead AS d
    USING batch_dead AS b
    WHERE d.id = b.id
        AND (($7::text = 'retry' AND b.id IN (SELECT r.id FROM brought_back AS r))
            OR $7::text = 'delete')
    RETURNING d.id AS id
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
    WHERE $7::text = 'cancel' AND j.id = batch.id AND NOT batch.cancel_leaves
        AND j.state IN ('available', 'scheduled', 'pending', 'retryable', 'running')
    RETURNING j.id AS id, j.state::text AS state, j.queue AS queue
),
cancel_moved AS (
    INSERT INTO {schema}.pgmill_job_done (id, state, queue, kind, args, metadata, priority, attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at, errors, tags, unique_key, unique_states, slot)
    SELECT b.id, 'cancelled', b.queue, b.kind, b.args, b.metadata, b.priority, b.attempt,
        b.max_attempts, b.attempted_at, b.attempted_by, b.created_at, b.scheduled_at, now(),
        array_append(b.errors, $8::jsonb || jsonb_build_object('at', now())), b.tags,
        b.unique_key, b.unique_states,
        {schema}.pgmill_job_done_slot(now(), (SELECT s.done_slot_seconds
            FROM {schema}.pgmill_storage AS s WHERE s.name = 'default'))
    FROM batch AS b
    WHERE $7::text = 'cancel' AND b.cancel_leaves
        AND b.state IN ('available', 'scheduled', 'pending', 'retryable')
    RETURNING id AS id
),
deleted AS (
    DELETE FROM {schema}.pgmill_job AS j
    USING batch
    WHERE $7::text = 'delete' AND j.id = batch.id AND j.state <> 'running'
    RETURNING j.id AS id
),
cancel_gone AS (
    DELETE FROM {schema}.pgmill_job AS j
    USING batch
    WHERE $7::text = 'cancel' AND j.id = batch.id AND batch.cancel_leaves
        AND batch.state IN ('available', 'scheduled', 'pending', 'retryable')
)
SELECT (SELECT count(*) FROM page) AS num_matched,
    (SELECT max(p.id) FROM page AS p) AS last_id,
    (SELECT count(*) FROM retried) + (SELECT count(*) FROM brought_back)
        + (SELECT count(*) FROM cancelled) + (SELECT count(*) FROM cancel_moved)
        + (SELECT count(*) FROM deleted)
        + (SELECT count(*) FROM left_done WHERE $7::text = 'delete')
        + (SELECT count(*) FROM left_dead WHERE $7::text = 'delete') AS num_changed,
    coalesce((SELECT array_agg(c.id ORDER BY c.id) FROM cancelled AS c
        WHERE c.state = 'running'), '{}') AS running_ids,
    coalesce((SELECT array_agg(c.queue ORDER BY c.id) FROM cancelled AS c
        WHERE c.state = 'running'), '{}') AS running_queues,
    coalesce((SELECT array_agg(DISTINCT r.queue)
        FROM (SELECT queue FROM retried UNION ALL SELECT queue FROM brought_back) AS r),
        '{}') AS available_queues
