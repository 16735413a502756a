-- Deletes finalized jobs still in the job table past their retention, at most $4 per call. A
-- job's retention is its queue's own rule for its state, else the rule for every queue ('*'),
-- else the clients' retention ($1 to $3, NULL keeping that state forever).
-- Each state is its own range of pgmill_job_finalized_idx (state, finalized_at, id), oldest
-- first, up to the youngest retention any queue has for the state, so a call reads only the rows
-- it deletes and those of queues kept longer, however many finished jobs are still retained and
-- whatever the statistics say. (One scan with the three states OR-ed together let the planner
-- walk the whole index and filter, every retained row read on every call, when the statistics
-- predated the finished rows.)
-- The candidates are locked by a join on (id, state, finalized_at), so a row that changed after
-- it was read (retried, say) is rechecked on its new version and left alone.
-- $1: the clients' retention of completed jobs in microseconds, or NULL
-- $2: the clients' retention of cancelled jobs in microseconds, or NULL
-- $3: the clients' retention of discarded jobs in microseconds, or NULL
-- $4: most jobs per call
WITH defaults AS MATERIALIZED (
    -- Per final state: the time before which a job of a queue without its own rule may go, and
    -- the latest such time of any queue (the end of the range read).
    SELECT s.state,
        CASE
            WHEN every.queue IS NOT NULL THEN now() - every.keep_seconds * interval '1 second'
            ELSE now() - s.keep_us * interval '1 microsecond'
        END AS before
    FROM (VALUES ('completed', $1::bigint), ('cancelled', $2::bigint), ('discarded', $3::bigint))
        AS s(state, keep_us)
    LEFT JOIN {schema}.pgmill_retention AS every
        ON every.queue = '*' AND every.state = s.state::{schema}.pgmill_job_state
),
bounds AS MATERIALIZED (
    SELECT d.state,
        greatest(d.before, (SELECT max(now() - r.keep_seconds * interval '1 second')
            FROM {schema}.pgmill_retention AS r
            WHERE r.queue <> '*' AND r.state = d.state::{schema}.pgmill_job_state)) AS latest
    FROM defaults AS d
),
candidates AS (
    (SELECT j.id, j.state, j.finalized_at
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'completed'
        AND j.finalized_at < (SELECT b.latest FROM bounds AS b WHERE b.state = 'completed')
        AND j.finalized_at < coalesce(
            (SELECT coalesce(now() - r.keep_seconds * interval '1 second', '-infinity')
                FROM {schema}.pgmill_retention AS r
                WHERE r.queue = j.queue AND r.state = 'completed'),
            (SELECT d.before FROM defaults AS d WHERE d.state = 'completed'))
    ORDER BY j.finalized_at
    LIMIT $4::bigint)
    UNION ALL
    (SELECT j.id, j.state, j.finalized_at
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'cancelled'
        AND j.finalized_at < (SELECT b.latest FROM bounds AS b WHERE b.state = 'cancelled')
        AND j.finalized_at < coalesce(
            (SELECT coalesce(now() - r.keep_seconds * interval '1 second', '-infinity')
                FROM {schema}.pgmill_retention AS r
                WHERE r.queue = j.queue AND r.state = 'cancelled'),
            (SELECT d.before FROM defaults AS d WHERE d.state = 'cancelled'))
    ORDER BY j.finalized_at
    LIMIT $4::bigint)
    UNION ALL
    (SELECT j.id, j.state, j.finalized_at
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'discarded'
        AND j.finalized_at < (SELECT b.latest FROM bounds AS b WHERE b.state = 'discarded')
        AND j.finalized_at < coalesce(
            (SELECT coalesce(now() - r.keep_seconds * interval '1 second', '-infinity')
                FROM {schema}.pgmill_retention AS r
                WHERE r.queue = j.queue AND r.state = 'discarded'),
            (SELECT d.before FROM defaults AS d WHERE d.state = 'discarded'))
    ORDER BY j.finalized_at
    LIMIT $4::bigint)
    LIMIT $4::bigint
),
doomed AS (
    SELECT j.id
    FROM candidates AS c
    JOIN {schema}.pgmill_job AS j
        ON j.id = c.id AND j.state = c.state AND j.finalized_at = c.finalized_at
    FOR UPDATE OF j SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.pgmill_job AS j USING doomed WHERE j.id = doomed.id RETURNING j.id
)
SELECT count(*) AS num_deleted FROM deleted
