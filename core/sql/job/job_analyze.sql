-- Takes the job table's statistics again, when job_table_growth.sql finds it has outgrown them:
-- every session then replans its statements on the table. Run as one script (an implicit
-- transaction, so SET LOCAL holds for the ANALYZE alone): a lock that appeared since the look
-- (a VACUUM or ANALYZE of the table, an index built concurrently) makes it fail within 100 ms
-- instead of waiting; the analyzer then looks again at its next pass. Not SKIP_LOCKED, which
-- would return as if it had analyzed.
-- What the plans need from it is the table's size (reltuples, relpages) and the share of each
-- state, which a small sample gives: a statistics target of 10 samples 3,000 rows instead of
-- 30,000 (the server's default of 100), and the ANALYZE of 100,000 jobs takes 9 ms instead of
-- 87-129 ms, which an insert that analyzes before it returns (Client::insert_bulk) pays. Columns
-- given a target of their own (ALTER TABLE ... SET STATISTICS) keep it. Autovacuum's next
-- ANALYZE, after a tenth of the table has changed, takes the columns' statistics at the server's
-- target again.
SET LOCAL lock_timeout = '100ms';
SET LOCAL default_statistics_target = 10;
ANALYZE {schema}.pgmill_job
