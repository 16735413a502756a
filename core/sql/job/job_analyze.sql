-- Takes the job table's statistics again, when job_table_growth.sql finds it has outgrown them:
-- every session then replans its statements on the table. SKIP_LOCKED: when a VACUUM or an
-- ANALYZE of the table has started since, it takes the statistics itself, and this one returns
-- at once (with a warning) instead of waiting for it.
ANALYZE (SKIP_LOCKED) {schema}.pgmill_job
