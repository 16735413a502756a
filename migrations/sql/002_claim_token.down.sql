-- Removes what version 2 added. Version 1 clients do not need it; version 2 clients stop working.

ALTER TABLE {schema}.pgmill_job DROP COLUMN claim_token;
