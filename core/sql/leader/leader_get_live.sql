-- The client holding a live leadership lease, by the database clock (no row: none leads now).
SELECT l.leader_id AS leader_id
FROM {schema}.pgmill_leader AS l
WHERE l.name = 'default' AND l.expires_at > now()
