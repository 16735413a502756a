-- How many jobs match a filter (job_list.sql's, without the cursor); a NULL filter matches
-- everything. Operators count before acting on many jobs at once.
-- $1: states (text), or NULL
-- $2: queues, or NULL
-- $3: kinds, or NULL
-- $4: ids, or NULL
SELECT count(*) AS num_jobs
FROM {schema}.pgmill_job AS j
WHERE ($1::text[] IS NULL OR j.state::text = ANY($1::text[]))
    AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
    AND ($3::text[] IS NULL OR j.kind = ANY($3::text[]))
    AND ($4::bigint[] IS NULL OR j.id = ANY($4::bigint[]))
