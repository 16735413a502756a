-- Takes the job table's statistics again, when job_table_growth.sql finds it has outgrown them:
-- every session then replans its statements on the table. Run as one script (an implicit
-- transaction, so SET LOCAL holds for the ANALYZE alone): a lock that appeared since the look
-- (a VACUUM or ANALYZE of the table, an index built concurrently) makes it fail within 100 ms
-- instead of waiting; the analyzer then looks again at its next pass. Not SKIP_LOCKED, which
-- would return as if it had analyzed.
-- What the plans need from it is the table's size (reltuples and relpages) and rough shares of
-- the columns' values, which a small sample gives: a statistics target of 10 samples 3,000 rows
-- instead of the 30,000 of the server's default of 100, in about a tenth of the time, which a
-- client's insert that analyzes before it returns (Client::insert_bulk, Client::insert_many)
-- would otherwise pay; the claim's generic plan is the same after either. The
-- statistics it replaces were taken of a table a quarter of the size or less. Autovacuum's next
-- ANALYZE, after a tenth of the table has changed, takes them again at the server's target; a
-- target given to a column itself (ALTER TABLE ... ALTER COLUMN ... SET STATISTICS) is kept.
-- (The state column alone, tried: the other columns then kept the small table's statistics or
-- none, and the claim found its ids by a bitmap scan instead of the primary key's index scan.)
SET LOCAL lock_timeout = '100ms';
SET LOCAL default_statistics_target = 10;
ANALYZE {schema}.pgmill_job
