-- Refreshes a client's liveness row. No row means the row is gone: first start, or the
-- UNLOGGED table was emptied by a crash restart or failover.
-- $1: client id
UPDATE {schema}.pgmill_client AS c
SET heartbeat_at = now()
WHERE c.id = $1::text
RETURNING c.id AS id, c.started_at AS started_at
