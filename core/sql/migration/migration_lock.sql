-- Serialises migrators of one schema until the end of the transaction.
-- $1: lock name, 'pgmill_migrate:' followed by the schema name
SELECT pg_advisory_xact_lock(hashtext($1::text)::bigint)
