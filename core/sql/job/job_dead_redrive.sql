-- Redrives the next batch of dead-letter jobs matching a filter, in id order after a cursor: each
-- goes back into the job table under its own id, available now, with one more attempt than it
-- used (its errors and attempts kept, metadata.redrive_count counting the redrives), and leaves
-- the dead-letter queue only once written there. A job whose unique key another job holds now
-- stays in the dead-letter queue and is reported as a conflict. The caller has refused a call
-- with no filter that did not ask for every job.
-- Returns the batch's size and last id (the next cursor), the jobs redriven with their queues (to
-- announce), and the conflicts.
-- $1: queues, or NULL
-- $2: kinds, or NULL
-- $3: ids, or NULL
-- $4: only ids greater than this (the cursor; 0 for the first batch)
-- $5: batch size
WITH page AS (
    SELECT x.*
    FROM {schema}.pgmill_job_dead AS x
    WHERE ($1::text[] IS NULL OR x.queue = ANY($1::text[]))
        AND ($2::text[] IS NULL OR x.kind = ANY($2::text[]))
        AND ($3::bigint[] IS NULL OR x.id = ANY($3::bigint[]))
        AND x.id > $4::bigint
    ORDER BY x.id
    LIMIT $5::bigint
    FOR UPDATE SKIP LOCKED
),
back AS (
    INSERT INTO {schema}.pgmill_job (id, state, queue, kind, args, metadata, priority, attempt,
        max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at, errors,
        tags, unique_key, unique_states)
    OVERRIDING SYSTEM VALUE
    SELECT p.id, 'available', p.queue, p.kind, p.args,
        p.metadata || jsonb_build_object('redrive_count', p.redrive_count + 1), p.priority,
        p.attempt, p.attempt + 1, p.attempted_at, p.attempted_by, p.created_at, now(), NULL,
        p.errors, p.tags, p.unique_key, p.unique_states
    FROM page AS p
    ON CONFLICT DO NOTHING
    RETURNING id, queue
),
left_dead AS (
    DELETE FROM {schema}.pgmill_job_dead AS x USING back AS b WHERE x.id = b.id
)
SELECT (SELECT count(*) FROM page) AS num_matched,
    (SELECT max(p.id) FROM page AS p) AS last_id,
    coalesce((SELECT array_agg(b.id ORDER BY b.id) FROM back AS b), '{}') AS redriven_ids,
    coalesce((SELECT array_agg(b.queue ORDER BY b.id) FROM back AS b), '{}') AS redriven_queues,
    coalesce((SELECT array_agg(p.id ORDER BY p.id) FROM page AS p
        WHERE NOT EXISTS (SELECT 1 FROM back AS b WHERE b.id = p.id)), '{}') AS conflict_ids
