-- Takes the lease when there is no leader or the lease expired. Returns the new term, or no row.
-- $1: id of the client standing
-- $2: lease length in microseconds
INSERT INTO {schema}.pgmill_leader AS l (name, leader_id, elected_at, expires_at)
VALUES ('default', $1::text, now(), now() + $2::bigint * interval '1 microsecond')
ON CONFLICT (name) DO UPDATE
SET leader_id = EXCLUDED.leader_id,
    elected_at = EXCLUDED.elected_at,
    expires_at = EXCLUDED.expires_at
WHERE l.expires_at < now()
RETURNING l.leader_id AS leader_id, l.elected_at AS elected_at, l.expires_at AS expires_at
