-- Takes the job table's statistics again, when job_table_growth.sql finds it has outgrown them:
-- every session then replans its statements on the table. Run as one script (an implicit
-- transaction, so SET LOCAL holds for the ANALYZE alone): a lock that appeared since the look
-- (a VACUUM or ANALYZE of the table, an index built concurrently) makes it fail within 100 ms
-- instead of waiting; the analyzer then looks again at its next pass. Not SKIP_LOCKED, which
-- would return as if it had analyzed.
SET LOCAL lock_timeout = '100ms';
ANALYZE {schema}.pgmill_job
