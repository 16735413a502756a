-- The current lease, if any (possibly expired).
SELECT l.leader_id AS leader_id, l.elected_at AS elected_at, l.expires_at AS expires_at
FROM {schema}.pgmill_leader AS l
WHERE l.name = 'default'
