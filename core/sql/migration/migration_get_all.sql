-- Applied migrations of one line, oldest first.
-- $1: migration line
SELECT line::text AS line, version::bigint AS version, created_at AS created_at
FROM {schema}.pgmill_migration
WHERE line = $1::text
ORDER BY version
