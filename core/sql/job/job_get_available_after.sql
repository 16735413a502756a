-- Claims like job_get_available, but only jobs after a position in fetch order: the index scan
-- starts there instead of at the head of the queue, where the entries of jobs claimed since the
-- last vacuum pile up (a deep backlog worked through leaves hundreds of thousands). The producer
-- claims from its last claimed job this way and from the head every few claims, so a job that
-- became available behind that position (a retry coming due, a higher priority) waits at most
-- until the next claim from the head.
-- Returns only what differs between the jobs it claims: every one is running, in queue $1, under
-- token $4, with no finalized_at (the client fills those in rather than decoding them from every
-- row). Columns at their usual value come back NULL, which the client reads as that value
-- without decoding it: metadata and errors and tags when empty, attempted_by when it names only
-- this claim's client $3.
-- attempted_by keeps the last ten clients: appended in place while shorter, trimmed only beyond.
-- attempted_at is this statement's now() on every row: the client decodes it from the first row only.
-- The locked ids are matched as one array, looked up in the primary key, rather than joined from
-- a CTE: the same rows, with less to plan and run.
-- Every value the scan's plan could depend on is read through a scalar subquery, `(SELECT $n)`:
-- the planner then estimates the same plan and cost with and without the values, so Postgres
-- keeps one generic plan for the prepared claim after five custom ones. Bound directly, the
-- LIMIT and the position made the generic plan look ten times dearer than a custom one (the
-- generic plan assumes a LIMIT of 10 % of the rows), and Postgres planned every claim again,
-- paying the planning on every call; kept, the generic plan also executes faster. The plan is the
-- same:
-- the fetch index scanned in order, stopped by the LIMIT. Like every prepared statement's
-- generic plan, it is made from the table's statistics when it is made: one made while the
-- table holds a handful of rows finds the claimed ids by a sequential scan, until the
-- table's next ANALYZE (autovacuum's, once the table has grown) replans it.
-- Only jobs of the kinds the client has workers for are claimed: several applications can share a
-- queue, each claiming its own kinds, and none attempts a job it cannot run.
-- $1: queue
-- $2: how many jobs at most
-- $3: id of the client claiming them
-- $4: the claim's fencing token, never used for another claim
-- $5: priority of the position (the last job claimed)
-- $6: scheduled_at of the position
-- $7: id of the position
-- $8: the job kinds the client has workers for
UPDATE {schema}.pgmill_job AS j
SET state = 'running',
    attempt = j.attempt + 1,
    attempted_at = now(),
    attempted_by = CASE
        WHEN cardinality(j.attempted_by) < 10 THEN array_append(j.attempted_by, $3::text)
        ELSE j.attempted_by[cardinality(j.attempted_by) - 8:] || $3::text
    END,
    claim_token = $4::bigint
WHERE j.id = ANY(ARRAY(
    SELECT id
    FROM {schema}.pgmill_job
    WHERE state = 'available' AND queue = (SELECT $1::text) AND scheduled_at <= now()
        AND (priority, scheduled_at, id) > ((SELECT $5::smallint), (SELECT $6::timestamptz), (SELECT $7::bigint))
        AND kind = ANY((SELECT $8::text[])::text[])
    ORDER BY priority, scheduled_at, id
    LIMIT (SELECT $2::bigint)
    FOR UPDATE SKIP LOCKED
))
RETURNING j.id AS id, j.kind AS kind, j.args AS args,
    nullif(j.metadata, '{}'::jsonb) AS metadata,
    j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at,
    CASE WHEN cardinality(j.attempted_by) > 1 THEN j.attempted_by END AS attempted_by,
    j.created_at AS created_at, j.scheduled_at AS scheduled_at,
    nullif(j.errors, '{}') AS errors, nullif(j.tags, '{}') AS tags
