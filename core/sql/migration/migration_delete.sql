-- Forgets an applied migration (before its down script runs).
-- $1: migration line
-- $2: version
DELETE FROM {schema}.pgmill_migration WHERE line = $1::text AND version = $2::bigint
