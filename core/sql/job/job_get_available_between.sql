-- Claims like job_get_available_after, but only jobs between two positions in fetch order: after
-- $5..$7 and up to $8..$10. A producer whose claims had gone past a job made available behind
-- them (a rescue, a due retry, a released claim, its own insert of a higher priority) claims
-- from just before that job up to where its claims had reached, then goes on from there: the
-- index scan stops at the upper position instead of walking the entries of the jobs claimed
-- between the two (which, while another session holds an old snapshot open, vacuum cannot
-- remove).
-- Returns, and reads every value through scalar subqueries, exactly as job_get_available_after.
-- $1: queue
-- $2: how many jobs at most
-- $3: id of the client claiming them
-- $4: the claim's fencing token, never used for another claim
-- $5: priority of the lower position (just before the earliest job wanted)
-- $6: scheduled_at of the lower position
-- $7: id of the lower position
-- $8: priority of the upper position (the last job wanted may be there)
-- $9: scheduled_at of the upper position
-- $10: id of the upper position
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
        AND (priority, scheduled_at, id) <= ((SELECT $8::smallint), (SELECT $9::timestamptz), (SELECT $10::bigint))
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
