-- The buckets of queue statistics to write next: from the end of the newest bucket written (or,
-- when there is none or it is older, the oldest bucket a backfill reaches) to the end of the
-- newest bucket that ended at least the settle time ago, cut to a chunk of buckets. No row when
-- every bucket is written. Buckets are aligned on multiples of their width from 2000-01-01 UTC;
-- after a change of width the first bucket runs from the end of the last one to the next
-- boundary. Reads one row of pgmill_queue_stat (the newest '*' bucket, by its primary key).
-- $1: the width of a bucket, in microseconds
-- $2: the settle time, in microseconds: a bucket is written once it ended this long ago, so that
--     the outcomes recorded in it have committed
-- $3: most buckets a backfill reaches back
-- $4: most buckets to write in one chunk
WITH clock AS (
    SELECT $1::bigint * interval '1 microsecond' AS width,
        date_bin($1::bigint * interval '1 microsecond',
            now() - $2::bigint * interval '1 microsecond',
            timestamptz '2000-01-01 00:00:00+00') AS newest_end
),
start AS (
    SELECT greatest(
        (SELECT s.bucket_end FROM {schema}.pgmill_queue_stat AS s
         WHERE s.queue = '*' ORDER BY s.bucket DESC LIMIT 1),
        c.newest_end - $3::bigint * c.width
    ) AS bucket_from
    FROM clock AS c
)
SELECT s.bucket_from AS bucket_from,
    least(c.newest_end,
        date_bin(c.width, s.bucket_from, timestamptz '2000-01-01 00:00:00+00')
            + $4::bigint * c.width) AS bucket_to,
    c.newest_end AS newest_end
FROM start AS s
CROSS JOIN clock AS c
WHERE s.bucket_from < c.newest_end
