-- Records a migration as applied.
-- $1: migration line
-- $2: version
INSERT INTO {schema}.pgmill_migration (line, version) VALUES ($1::text, $2::bigint)
