-- How many jobs match a filter (job_list.sql's, without the cursor); a NULL filter matches
-- everything. Operators count before acting on many jobs at once. Filtered by state or queue, it
-- counts each wanted state on its own, the state written out so that the planner sees how many
-- jobs that state holds: a rare state is counted along the (state, queue, id) index, reading only
-- its jobs however many finished jobs the table keeps, and a common one by the scan the planner
-- prefers. (One scan with the state compared as text read every row, however few jobs the
-- wanted state held.) Without a state or queue filter one scan counts every matching row. A
-- new job state needs its own arm here.
-- $1: states (text), or NULL
-- $2: queues, or NULL
-- $3: kinds, or NULL
-- $4: ids, or NULL
WITH by_state AS (
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE j.state = 'available'
        AND ($1::text[] IS NOT NULL OR $2::text[] IS NOT NULL)
        AND ($1::text[] IS NULL OR 'available' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    UNION ALL
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE j.state = 'scheduled'
        AND ($1::text[] IS NOT NULL OR $2::text[] IS NOT NULL)
        AND ($1::text[] IS NULL OR 'scheduled' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    UNION ALL
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE j.state = 'pending'
        AND ($1::text[] IS NOT NULL OR $2::text[] IS NOT NULL)
        AND ($1::text[] IS NULL OR 'pending' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    UNION ALL
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE j.state = 'running'
        AND ($1::text[] IS NOT NULL OR $2::text[] IS NOT NULL)
        AND ($1::text[] IS NULL OR 'running' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    UNION ALL
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE j.state = 'retryable'
        AND ($1::text[] IS NOT NULL OR $2::text[] IS NOT NULL)
        AND ($1::text[] IS NULL OR 'retryable' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    UNION ALL
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE j.state = 'completed'
        AND ($1::text[] IS NOT NULL OR $2::text[] IS NOT NULL)
        AND ($1::text[] IS NULL OR 'completed' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    UNION ALL
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE j.state = 'cancelled'
        AND ($1::text[] IS NOT NULL OR $2::text[] IS NOT NULL)
        AND ($1::text[] IS NULL OR 'cancelled' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
    UNION ALL
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE j.state = 'discarded'
        AND ($1::text[] IS NOT NULL OR $2::text[] IS NOT NULL)
        AND ($1::text[] IS NULL OR 'discarded' = ANY($1::text[]))
        AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
),
every_state AS (
    SELECT count(*) AS num_jobs
    FROM {schema}.pgmill_job_all AS j
    WHERE $1::text[] IS NULL AND $2::text[] IS NULL
        AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
        AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
)
SELECT ((SELECT sum(b.num_jobs) FROM by_state AS b)
    + (SELECT e.num_jobs FROM every_state AS e))::bigint AS num_jobs
