-- Ends the given term and tells followers, so one takes over at once. Does nothing for a term
-- that is already over.
-- $1: leader's client id
-- $2: when its term began
-- $3: the leadership channel, '<schema>.pgmill_leadership'
WITH resigned AS (
    DELETE FROM {schema}.pgmill_leader AS l
    WHERE l.name = 'default' AND l.leader_id = $1::text AND l.elected_at = $2::timestamptz
    RETURNING l.leader_id
)
SELECT count(pg_notify($3::text, 'resigned')) AS num_resigned
FROM resigned
