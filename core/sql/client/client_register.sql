-- Registers a client (again, after its row vanished).
-- $1: client id
-- $2: host name
-- $3: process id
INSERT INTO {schema}.pgmill_client AS c (id, hostname, pid)
VALUES ($1::text, $2::text, $3::integer)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
RETURNING c.id AS id, c.started_at AS started_at
