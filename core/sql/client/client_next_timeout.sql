-- How long until the rescuer should look again, in microseconds: until the next live client's
-- heartbeat is older than the timeout, or zero or less when a client whose heartbeat expired
-- still has running jobs (it expired after the last pass read the clock: rescue it now). NULL
-- when no client is live and no expired client has running jobs.
-- $1: heartbeats older than this many microseconds mean the client is dead
WITH owners AS (
    SELECT DISTINCT j.attempted_by[cardinality(j.attempted_by)] AS id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'running'
)
SELECT (extract(epoch FROM
        min(c.heartbeat_at) + $1::bigint * interval '1 microsecond' - now()
    ) * 1000000)::bigint AS micros_left
FROM {schema}.pgmill_client AS c
WHERE c.heartbeat_at >= now() - $1::bigint * interval '1 microsecond'
    OR c.id IN (SELECT o.id FROM owners AS o)
