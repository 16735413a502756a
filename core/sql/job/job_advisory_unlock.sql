-- Releases the session-level advisory locks of jobs on the locker session (the advisory-lock claim
-- mode), once their outcomes are committed or when they were given up; returns how many it
-- released (a lock this session did not hold is not counted).
-- $1: ids of the jobs
-- $2: the schema's name (the lock keys' high bits, as job_advisory_claim takes them)
SELECT count(*) AS released
FROM unnest($1::bigint[]) AS u(id)
WHERE pg_advisory_unlock(u.id # (hashtext($2::text)::bigint << 32))
