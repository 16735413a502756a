-- Extends the lease of the current term only; returns it, or no row when the term is over.
-- $1: leader's client id
-- $2: when its term began (identifies the term)
-- $3: lease length in microseconds
UPDATE {schema}.pgmill_leader AS l
SET expires_at = now() + $3::bigint * interval '1 microsecond'
WHERE l.name = 'default' AND l.leader_id = $1::text AND l.elected_at = $2::timestamptz
    AND l.expires_at >= now()
RETURNING l.leader_id AS leader_id, l.elected_at AS elected_at, l.expires_at AS expires_at
