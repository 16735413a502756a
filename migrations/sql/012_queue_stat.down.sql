-- Reverts version 12: drops the queue statistics. Clients of earlier versions never used them;
-- version 12 clients' leader then logs a warning at each rollup pass, and the dashboard's charts
-- fail, until the version is applied again. The history's finalized_at index goes back to being
-- summarized by vacuum only.

DROP TABLE {schema}.pgmill_queue_stat;

DO $$
DECLARE
    part regclass;
BEGIN
    FOR part IN
        SELECT i.inhrelid::regclass
        FROM pg_catalog.pg_inherits AS i
        WHERE i.inhparent = '{schema}.pgmill_job_done_finalized_idx'::regclass
    LOOP
        EXECUTE pg_catalog.format('ALTER INDEX %s RESET (autosummarize)', part);
    END LOOP;
END
$$;
