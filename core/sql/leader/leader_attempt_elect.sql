-- Takes the lease when there is no leader, the lease expired, or the leader's client stopped
-- heartbeating: its row's heartbeat is older than $3 (a leader whose own heartbeat fails steps
-- down before that, see elector.rs; a leader without a row, as after a restart emptied the
-- UNLOGGED client table, keeps its lease until it expires). Returns the term after the attempt:
-- the new one (elected true), or the current one (elected false) with how long until this client
-- could take it over (wait_us: the earlier of its expiry and its leader's heartbeat timing out).
-- $1: id of the client standing
-- $2: lease length in microseconds
-- $3: a leader whose heartbeat is older than this many microseconds is dead
WITH current_term AS (
    SELECT l.leader_id AS leader_id, l.elected_at AS elected_at, l.expires_at AS expires_at,
        (SELECT c.heartbeat_at FROM {schema}.pgmill_client AS c WHERE c.id = l.leader_id)
            AS heartbeat_at
    FROM {schema}.pgmill_leader AS l
    WHERE l.name = 'default'
),
elected AS (
    INSERT INTO {schema}.pgmill_leader AS l (name, leader_id, elected_at, expires_at)
    VALUES ('default', $1::text, now(), now() + $2::bigint * interval '1 microsecond')
    ON CONFLICT (name) DO UPDATE
    SET leader_id = EXCLUDED.leader_id,
        elected_at = EXCLUDED.elected_at,
        expires_at = EXCLUDED.expires_at
    WHERE l.expires_at < now()
        OR EXISTS (
            SELECT 1 FROM {schema}.pgmill_client AS c
            WHERE c.id = l.leader_id
                AND c.heartbeat_at < now() - $3::bigint * interval '1 microsecond'
        )
    RETURNING l.leader_id AS leader_id, l.elected_at AS elected_at, l.expires_at AS expires_at
)
SELECT e.leader_id AS leader_id, e.elected_at AS elected_at, e.expires_at AS expires_at,
    true AS elected, 0::bigint AS wait_us
FROM elected AS e
UNION ALL
SELECT t.leader_id AS leader_id, t.elected_at AS elected_at, t.expires_at AS expires_at,
    false AS elected,
    (extract(epoch FROM least(
        t.expires_at - now(),
        t.heartbeat_at + $3::bigint * interval '1 microsecond' - now()
    )) * 1000000)::bigint AS wait_us
FROM current_term AS t
WHERE NOT EXISTS (SELECT 1 FROM elected)
