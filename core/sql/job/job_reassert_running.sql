-- After a failover that lost recent commits, puts this client's in-flight jobs that fell back to
-- available back to running under its name, at the attempt it is running. Returns how many.
-- $1: job ids this client is running
-- $2: the attempt it is running for each
-- $3: this client's id
WITH mine AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS m(id, attempt)
),
reasserted AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = 'running', attempt = mine.attempt, attempted_at = now(),
        attempted_by = j.attempted_by[greatest(cardinality(j.attempted_by) - 8, 1):] || $3::text
    FROM mine
    WHERE j.id = mine.id AND j.state = 'available' AND j.attempt = mine.attempt - 1
    RETURNING j.id
)
SELECT count(*) AS num_reasserted FROM reasserted
