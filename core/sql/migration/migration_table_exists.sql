-- Whether the migration table exists yet (before version 1 it does not).
-- $1: schema name, unquoted
SELECT EXISTS (
    SELECT 1
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = $1::text AND c.relname = 'pgmill_migration'
) AS present
