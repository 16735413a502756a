-- pgmill schema version 10: a small rollup of each queue's activity over time, which the
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
-- Safe while clients of earlier versions run: a new table, which they never read or write.

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
