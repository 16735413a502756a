-- After a failover that lost recent commits, puts this client's in-flight jobs that fell back to
-- available back to running under its name, at the attempt, with the fencing token and the start
-- time of the claim it is running. Returns how many. A row is re-asserted only while it is in the
-- state before the claim: the attempt before it, and not showing the claim's start time. A row
-- that shows the claim's start time saw the claim end (its outcome, a rescue) on this database,
-- so it is not this client's any more, even in the moment before the completer forgets it. A row
-- is the claimed job only if it was created when the job was: a promoted replica that lost the
-- job's insert hands the same id out again to a later job, which must not take the claim over.
-- attempted_by keeps the last ten clients: appended in place while shorter, trimmed only beyond.
-- $1: job ids this client is running
-- $2: the attempt it is running for each
-- $3: this client's id
-- $4: the fencing token of its claim on each
-- $5: when each claim was made (attempted_at as the claim set it)
-- $6: when each job was created (created_at as the claim returned it)
WITH mine AS (
    SELECT *
    FROM unnest($1::bigint[], $2::bigint[], $4::bigint[], $5::timestamptz[], $6::timestamptz[])
        AS m(id, attempt, claim_token, attempted_at, created_at)
),
reasserted AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = 'running', attempt = mine.attempt, attempted_at = mine.attempted_at,
        attempted_by = CASE
        WHEN cardinality(j.attempted_by) < 10 THEN array_append(j.attempted_by, $3::text)
        ELSE j.attempted_by[cardinality(j.attempted_by) - 8:] || $3::text
    END,
        claim_token = mine.claim_token
    FROM mine
    WHERE j.id = mine.id AND j.created_at = mine.created_at AND j.state = 'available'
        AND j.attempt = mine.attempt - 1
        AND j.attempted_at IS DISTINCT FROM mine.attempted_at
    RETURNING j.id
)
SELECT count(*) AS num_reasserted FROM reasserted
