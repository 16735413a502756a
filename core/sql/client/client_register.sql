-- Registers a client (again, after its row vanished), with the queues it works in its metadata
-- (`{"queues": [...]}`), which is how operators see which queues have a live producer.
-- $1: client id
-- $2: host name
-- $3: process id
-- $4: metadata (a JSON object)
INSERT INTO {schema}.pgmill_client AS c (id, hostname, pid, metadata)
VALUES ($1::text, $2::text, $3::integer, $4::jsonb)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), metadata = EXCLUDED.metadata
RETURNING c.id AS id, c.started_at AS started_at
