-- Every registered client, by id: how long ago it last beat and whether that is within the
-- liveness timeout (both by the database clock), whether it holds the current leader lease, and
-- the queues it works and the job kinds it has workers for (empty for clients that do not say,
-- such as those of older versions).
-- $1: heartbeats at most this many microseconds old count as live
SELECT c.id AS id, c.hostname AS hostname, c.pid AS pid, c.started_at AS started_at,
    c.heartbeat_at AS heartbeat_at,
    greatest((extract(epoch FROM now() - c.heartbeat_at) * 1000000)::bigint, 0) AS heartbeat_age_us,
    c.heartbeat_at >= now() - $1::bigint * interval '1 microsecond' AS live,
    coalesce(l.leader_id = c.id AND l.expires_at >= now(), false) AS leader,
    ARRAY(
        SELECT jsonb_array_elements_text(
            CASE WHEN jsonb_typeof(c.metadata->'queues') = 'array'
                THEN c.metadata->'queues' ELSE '[]'::jsonb END)
    ) AS queues,
    ARRAY(
        SELECT jsonb_array_elements_text(
            CASE WHEN jsonb_typeof(c.metadata->'kinds') = 'array'
                THEN c.metadata->'kinds' ELSE '[]'::jsonb END)
    ) AS kinds
FROM {schema}.pgmill_client AS c
LEFT JOIN {schema}.pgmill_leader AS l ON l.name = 'default'
ORDER BY c.id
