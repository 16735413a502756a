-- Removes everything version 1 created (the schema itself stays).

DROP TABLE {schema}.pgmill_periodic;
DROP TABLE {schema}.pgmill_client;
DROP TABLE {schema}.pgmill_leader;
DROP TABLE {schema}.pgmill_queue;
DROP TABLE {schema}.pgmill_job;
DROP FUNCTION {schema}.pgmill_job_state_in_bitmask(bit(8), {schema}.pgmill_job_state);
DROP TYPE {schema}.pgmill_job_state;
DROP TABLE {schema}.pgmill_migration;
