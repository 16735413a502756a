-- Removes a stopping client's row.
-- $1: client id
DELETE FROM {schema}.pgmill_client WHERE id = $1::text
