-- Announces jobs inserted by transactions whose own insert notification was debounced, once
-- those transactions have committed: each of $2 is an inserting transaction's id (as the insert
-- statements return it, xact_id), $3 the queue it inserted into. A transaction is settled once it
-- completed before this statement's snapshot (so every later snapshot, a woken producer's claim
-- included, sees its rows if it committed), or when its status is unknown here (truncated away,
-- or, after a failover, a transaction this server never saw). The queues of the committed ones
-- are each notified once. Run on its own (autocommit), so the notifications are delivered after
-- the commits they announce. Reads no table: only the transactions' status.
-- Returns the settled transactions (committed, rolled back or unknown); the others are still in
-- progress.
-- $1: the insert channel, '<schema>.pgmill_insert'
-- $2: ids of the inserting transactions
-- $3: the queue of each
WITH watched AS (
    SELECT w.xact_id AS xact_id, w.queue AS queue,
        CASE
            WHEN w.xact_id::text::xid8 >= pg_snapshot_xmax(pg_current_snapshot()) THEN 'unknown'
            WHEN pg_visible_in_snapshot(w.xact_id::text::xid8, pg_current_snapshot())
                THEN coalesce(pg_xact_status(w.xact_id::text::xid8), 'unknown')
            ELSE 'in progress'
        END AS status
    FROM unnest($2::bigint[], $3::text[]) AS w(xact_id, queue)
)
SELECT s.xact_id AS xact_id
FROM (SELECT DISTINCT xact_id FROM watched WHERE status <> 'in progress') AS s
CROSS JOIN (
    SELECT count(pg_notify($1::text, q.queue)) AS num_notified
    FROM (SELECT DISTINCT queue FROM watched WHERE status = 'committed') AS q
) AS n
