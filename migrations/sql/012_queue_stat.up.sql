-- pgmill schema version 12: a small rollup of each queue's activity over time, which the
-- dashboard draws as charts (completed, failed, depth by state, wait) without reading the job
-- table.
--
-- One row per queue and bucket (a minute by default), plus one row per bucket for all queues
-- together under the queue name '*' (which no queue can have: queue names are ASCII letters,
-- digits and '_', '-', '.', ':', '/'). The leader writes each bucket once, after it has ended,
-- from one statement (core/sql/stat/queue_stat_rollup.sql), and never updates a row: no row is
-- written per job, so no row is hot. A bucket's '*' row is inserted first and its queues' rows only
-- if that insert won, so two clients computing the same bucket (a leader change in the middle of a
-- pass) write it once; the exclusion constraint keeps the '*' buckets from overlapping even when
-- two clients are configured with different bucket widths. Queues with nothing to report in a
-- bucket have no row: while the bucket's '*' row exists, a missing row means zero.
--
-- Columns:
-- - completed, discarded, cancelled: jobs finalized within [bucket, bucket_end);
-- - retried: failed attempts recorded within the bucket after which the job runs again;
-- - pickup_count, pickup_p95_us: attempts claimed within the bucket, and the 95th percentile of
--   their wait from scheduled_at to attempted_at (microseconds; NULL when none);
-- - sampled_at, depth, oldest_available_us: a sample of the queue taken when the row was
--   written (depth: live jobs by state, as a JSON object of counts; oldest_available_us: how long
--   its oldest due available job had waited); NULL for buckets written late (a backfill after a
--   leader change), whose past depth nobody saw.
--
-- The leader deletes rows past their retention (a day by default) in bounded batches, through the
-- bucket index.
--
-- The rollup reads the jobs that finished since the buckets it writes from the history through
-- its BRIN index on finalized_at, which reads the block ranges a summary does not rule out: every
-- range not summarized yet among them. Without autosummarize a range is summarized only by the
-- next vacuum of its slot (after up to a fifth of the slot's rows), so each pass would read all
-- the rows of the slot since then; with it, autovacuum summarizes each range of 128 pages as soon
-- as the next one gets its first row, and a pass reads about the rows that finished since its
-- buckets. The option is set on each slot's index (a partitioned index takes no storage option).
--
-- Safe while clients of earlier versions run: a new table, which they never read or write, and a
-- storage option of an index, set under a lock that blocks neither reads nor writes.

CREATE TABLE {schema}.pgmill_queue_stat (
    queue text NOT NULL,
    bucket timestamptz NOT NULL,
    bucket_end timestamptz NOT NULL,
    completed bigint NOT NULL DEFAULT 0,
    discarded bigint NOT NULL DEFAULT 0,
    cancelled bigint NOT NULL DEFAULT 0,
    retried bigint NOT NULL DEFAULT 0,
    pickup_count bigint NOT NULL DEFAULT 0,
    pickup_p95_us bigint,
    sampled_at timestamptz,
    depth jsonb,
    oldest_available_us bigint,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, bucket),
    CONSTRAINT queue_length CHECK (char_length(queue) BETWEEN 1 AND 128),
    CONSTRAINT bucket_ends_after_it_starts CHECK (bucket_end > bucket),
    CONSTRAINT counts_not_negative CHECK (
        completed >= 0 AND discarded >= 0 AND cancelled >= 0 AND retried >= 0
        AND pickup_count >= 0
    ),
    CONSTRAINT sample_is_whole CHECK ((sampled_at IS NULL) = (depth IS NULL)),
    CONSTRAINT depth_is_object CHECK (depth IS NULL OR jsonb_typeof(depth) = 'object'),
    CONSTRAINT pgmill_queue_stat_buckets_do_not_overlap
        EXCLUDE USING gist (tstzrange(bucket, bucket_end) WITH &&) WHERE (queue = '*')
);

-- Retention: the oldest buckets first, whatever their queue.
CREATE INDEX pgmill_queue_stat_bucket_idx ON {schema}.pgmill_queue_stat (bucket);

-- Autovacuum summarizes each new block range of a history slot's finalized_at index as it fills.
DO $$
DECLARE
    part regclass;
BEGIN
    FOR part IN
        SELECT i.inhrelid::regclass
        FROM pg_catalog.pg_inherits AS i
        WHERE i.inhparent = '{schema}.pgmill_job_done_finalized_idx'::regclass
    LOOP
        EXECUTE pg_catalog.format('ALTER INDEX %s SET (autosummarize = on)', part);
    END LOOP;
END
$$;
