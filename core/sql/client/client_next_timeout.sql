-- How long until the next live client's heartbeat is older than the timeout (when the rescuer
-- should look again), in microseconds; NULL when no client is live.
-- $1: heartbeats older than this many microseconds mean the client is dead
SELECT (extract(epoch FROM
        min(c.heartbeat_at) + $1::bigint * interval '1 microsecond' - now()
    ) * 1000000)::bigint AS micros_left
FROM {schema}.pgmill_client AS c
WHERE c.heartbeat_at >= now() - $1::bigint * interval '1 microsecond'
