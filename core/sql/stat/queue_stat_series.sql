-- The statistics of one queue (or of all queues, '*') over the last window, in bins from the
-- bin holding now() - window to the bin holding now(), every bin present, oldest first; for the
-- dashboard's charts. Reads only pgmill_queue_stat: the rows of the queue and the '*' rows since
-- the window's start (through the primary key), never the job table, so its cost follows the
-- number of buckets in the window, not the jobs.
-- Per bin:
-- - covered: some bucket starting in it was written (a bin without one is a gap in the data:
--   no leader ran, or it is older than the retention, or it has not ended yet);
-- - completed, discarded, cancelled, retried, pickup_count: sums over the buckets starting in it
--   (a queue without a row in a written bucket had nothing to count there);
-- - pickup_p95_us: the largest of those buckets' 95th percentiles (exact when a bin is one
--   bucket, the worst bucket's when it holds several);
-- - samples, depth, oldest_available_us: the samples taken in it (by when they were taken, not by
--   their bucket): how many, and per live state the largest count, as a JSON object, and the
--   longest wait of an available job. A queue with no row in a sampled bucket had no live job.
--   NULL when no sample was taken in the bin.
-- $1: the queue, or '*' for all queues
-- $2: the window, in microseconds
-- $3: the width of a bin, in microseconds
WITH span AS (
    SELECT now() AS now,
        $3::bigint * interval '1 microsecond' AS width,
        date_bin($3::bigint * interval '1 microsecond',
            now() - $2::bigint * interval '1 microsecond',
            timestamptz '2000-01-01 00:00:00+00') AS start
),
bin AS (
    SELECT g AS bin
    FROM span AS s
    CROSS JOIN generate_series(s.start, s.now, s.width) AS g
),
counted AS (
    SELECT date_bin(s.width, q.bucket, timestamptz '2000-01-01 00:00:00+00') AS bin,
        sum(q.completed)::bigint AS completed, sum(q.discarded)::bigint AS discarded,
        sum(q.cancelled)::bigint AS cancelled, sum(q.retried)::bigint AS retried,
        sum(q.pickup_count)::bigint AS pickup_count, max(q.pickup_p95_us) AS pickup_p95_us
    FROM span AS s
    JOIN {schema}.pgmill_queue_stat AS q ON q.queue = $1::text AND q.bucket >= s.start
    GROUP BY 1
),
written AS (
    SELECT a.bucket AS bucket, a.sampled_at AS sampled_at
    FROM span AS s
    JOIN {schema}.pgmill_queue_stat AS a ON a.queue = '*' AND a.bucket >= s.start - s.width
),
covered AS (
    SELECT DISTINCT date_bin(s.width, w.bucket, timestamptz '2000-01-01 00:00:00+00') AS bin
    FROM written AS w
    CROSS JOIN span AS s
    WHERE w.bucket >= s.start
),
sample AS (
    SELECT date_bin(s.width, w.sampled_at, timestamptz '2000-01-01 00:00:00+00') AS bin,
        coalesce(q.depth, '{}'::jsonb) AS depth, q.oldest_available_us AS oldest_available_us
    FROM written AS w
    CROSS JOIN span AS s
    LEFT JOIN {schema}.pgmill_queue_stat AS q ON q.queue = $1::text AND q.bucket = w.bucket
    WHERE w.sampled_at >= s.start
),
sampled AS (
    SELECT m.bin AS bin, count(*) AS samples,
        coalesce(max(m.oldest_available_us), 0) AS oldest_available_us
    FROM sample AS m
    GROUP BY m.bin
),
depth AS (
    SELECT t.bin AS bin, jsonb_object_agg(t.state, t.n) AS depth
    FROM (
        SELECT m.bin AS bin, d.key AS state, max(d.value::bigint) AS n
        FROM sample AS m
        CROSS JOIN LATERAL jsonb_each_text(m.depth) AS d
        GROUP BY m.bin, d.key
    ) AS t
    GROUP BY t.bin
)
SELECT b.bin AS bin, s.now AS now, cv.bin IS NOT NULL AS covered,
    coalesce(c.completed, 0) AS completed, coalesce(c.discarded, 0) AS discarded,
    coalesce(c.cancelled, 0) AS cancelled, coalesce(c.retried, 0) AS retried,
    coalesce(c.pickup_count, 0) AS pickup_count, c.pickup_p95_us AS pickup_p95_us,
    coalesce(sd.samples, 0) AS samples,
    CASE WHEN sd.bin IS NOT NULL THEN coalesce(d.depth, '{}'::jsonb) END AS depth,
    sd.oldest_available_us AS oldest_available_us
FROM bin AS b
CROSS JOIN span AS s
LEFT JOIN counted AS c ON c.bin = b.bin
LEFT JOIN covered AS cv ON cv.bin = b.bin
LEFT JOIN sampled AS sd ON sd.bin = b.bin
LEFT JOIN depth AS d ON d.bin = b.bin
ORDER BY b.bin
